"""int8 and int16 tensors: elementwise math, comparisons, reductions, scans and indexing
run natively, compute in int32 and wrap when stored, as PyTorch's CPU does; indexed
reductions of 8- and 16-bit elements (uint8 and bool too) add with compare-and-swap on
the enclosing 32-bit word. Compared exactly against the CPU."""

import pytest
import torch
from conftest import assert_close_to_cpu, assert_factory_close_to_cpu, dtype_id, make

pytestmark = pytest.mark.usefixtures("no_fallback")

SMALL_INTS = [torch.int8, torch.int16]

ELEMENTWISE = {
    "abs": lambda a, b: a.abs(),
    "neg": lambda a, b: -a,
    "sign": lambda a, b: a.sign(),
    "add": lambda a, b: a + b,
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=3),
    "mul": lambda a, b: a * b,
    "add_scalar_wraps": lambda a, b: a + 100,
    "mul_scalar_wraps": lambda a, b: a * 77,
    "true_div": lambda a, b: a / b,
    "floor_div": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "trunc_div": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "remainder": lambda a, b: a % b,
    "fmod": lambda a, b: torch.fmod(a, b),
    "pow": lambda a, b: a.pow(3),
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "not": lambda a, b: ~a,
    "maximum": lambda a, b: torch.maximum(a, b),
    "minimum": lambda a, b: torch.minimum(a, b),
    "clamp": lambda a, b: a.clamp(-20, 50),
    "clamp_tensor": lambda a, b: a.clamp(min=b),
    "where": lambda a, b: torch.where(a > b, a, b),
    "eq": lambda a, b: a == b,
    "lt": lambda a, b: a < b,
    "ge_scalar": lambda a, b: a >= 3,
    "logical_and": lambda a, b: torch.logical_and(a, b),
    "gcd": lambda a, b: torch.gcd(a, b),
    "float": lambda a, b: a.float() * 0.5,
    "promote_to_long": lambda a, b: a + b.long(),
    "nonzero": lambda a, b: (a > 0).nonzero(),
    "masked_fill": lambda a, b: a.masked_fill(b > 0, -7),
    "relu": lambda a, b: torch.relu(a),
}


@pytest.mark.parametrize("dtype", SMALL_INTS, ids=dtype_id)
def test_elementwise_ops_wrap_as_on_the_cpu(dtype):
    high = 127 if dtype == torch.int8 else 2**15 - 1
    a = make((7, 9), dtype, low=-high - 1, high=high + 1)
    b = make((7, 9), dtype, low=-high - 1, high=high + 1, nonzero=True)
    # The extremes: -128 / -1, abs(-128) and their int16 kin wrap on the CPU.
    a[0, :3] = torch.tensor([-high - 1, -high - 1, high], dtype=dtype)
    b[0, :3] = torch.tensor([-1, 1, -1], dtype=dtype)
    for name, fn in ELEMENTWISE.items():
        try:
            assert_close_to_cpu(fn, a, b)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
    # In place, and a strided view.
    assert_close_to_cpu(lambda x, y: x.add_(y).mul_(3), a, b)
    assert_close_to_cpu(lambda x, y: x.t() - y[:, ::2].t().sum(0, dtype=dtype), a, b)


@pytest.mark.parametrize("dtype", SMALL_INTS, ids=dtype_id)
def test_shifts_use_the_dtype_width(dtype):
    bits = 8 if dtype == torch.int8 else 16
    a = make((6,), dtype, low=-100, high=100)
    amounts = torch.tensor([0, 1, 3, bits - 1, bits, bits + 5], dtype=dtype)
    assert_close_to_cpu(torch.bitwise_left_shift, a, amounts)
    assert_close_to_cpu(torch.bitwise_right_shift, a, amounts)
    assert_close_to_cpu(lambda x: x << 2, a)
    assert_close_to_cpu(lambda x: x >> 1, a)


@pytest.mark.parametrize("dtype", SMALL_INTS, ids=dtype_id)
def test_reductions_and_scans(dtype):
    x = make((5, 33), dtype, low=-100, high=100)
    cases = [
        lambda t: t.amax(1),
        lambda t: t.amin(0),
        lambda t: t.max(1),
        lambda t: t.min(),
        lambda t: t.argmax(1),
        lambda t: t.argmin(),
        lambda t: t.sum(1),
        lambda t: t.sum(1, dtype=dtype),  # wraps
        lambda t: t.prod(0, dtype=dtype),
        lambda t: t.cumsum(1),
        lambda t: t.cumsum(1, dtype=dtype),
        lambda t: t.cummax(1),
        lambda t: t.cummin(0),
        lambda t: t.sort(dim=1, stable=True),
        lambda t: t.topk(4, 1).values,  # indices of ties are unspecified
        lambda t: torch.unique(t, return_counts=True),
        lambda t: t.count_nonzero(1),
        lambda t: t.any(1),
    ]
    for fn in cases:
        assert_close_to_cpu(fn, x)


INDEX_DTYPES = [torch.int8, torch.int16, torch.uint8, torch.bool]


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=dtype_id)
def test_indexing(dtype):
    s = make((6, 5), dtype)
    v = make((4, 5), dtype)
    i = make((4, 5), torch.int64, low=0, high=6)
    rows = torch.tensor([3, 1, 3, 5])
    cases = [
        lambda s, v, i, rows: s.gather(0, i),
        lambda s, v, i, rows: s.clone().scatter_(0, i, v),
        lambda s, v, i, rows: s.clone().scatter_add_(0, i, v),
        lambda s, v, i, rows: s.clone().index_add_(0, rows, v),
        lambda s, v, i, rows: s.clone().index_put_((rows,), v, accumulate=True),
        lambda s, v, i, rows: s.clone().put_(i.flatten(), v.flatten(), accumulate=True),
        lambda s, v, i, rows: s.index_select(0, rows),
        lambda s, v, i, rows: s[rows, 1:3],
        lambda s, v, i, rows: s.take(i),
        lambda s, v, i, rows: s.clone().index_fill_(0, rows, 1),
        lambda s, v, i, rows: s.clone().index_copy_(
            0, torch.tensor([3, 1, 0, 5], device=s.device), v
        ),
    ]
    if dtype != torch.bool:
        cases += [
            lambda s, v, i, rows, r=r, inc=inc: s.clone().scatter_reduce_(
                0, i, v, r, include_self=inc
            )
            for r in ("sum", "prod", "amax", "amin", "mean")
            for inc in (True, False)
        ]
        cases += [
            lambda s, v, i, rows, r=r: s.clone().index_reduce_(0, rows, v, r)
            for r in ("prod", "amax", "amin")
        ]
    for fn in cases:
        assert_close_to_cpu(fn, s, v, i, rows)


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=dtype_id)
def test_indexed_adds_of_neighbouring_elements_do_not_lose_updates(dtype):
    # Four (two) elements share a 32-bit word, and each takes 3000 adds from threads
    # that race on that word: a lost compare-and-swap would show in the sums.
    index = torch.arange(12).repeat(1000)
    values = make((12000,), dtype, low=-3, high=4)
    assert_close_to_cpu(
        lambda i, v: torch.zeros(12, dtype=dtype, device=v.device).scatter_add_(0, i, v),
        index,
        values,
    )
    assert_close_to_cpu(
        lambda i, v: torch.zeros(13, dtype=dtype, device=v.device)[1:].index_add_(0, i, v),
        index,
        values,
    )
    if dtype != torch.bool:
        assert_close_to_cpu(
            lambda i, v: torch.zeros(12, dtype=dtype, device=v.device).scatter_reduce_(
                0, i, v, "amax"
            ),
            index,
            values,
        )


def test_counts_of_top_k_candidates_in_int8():
    # How ultralytics' task-aligned assigner counts candidates: an int8 count tensor
    # takes scatter_add_ of ones at top-k indices along the anchors.
    metric = make((2, 3, 40), torch.float32, unique=True)

    def counts(m):
        _, top = m.topk(10, dim=-1)
        count = torch.zeros(m.shape, dtype=torch.int8, device=m.device)
        ones = torch.ones_like(top[:, :, :1], dtype=torch.int8)
        for k in range(10):
            count.scatter_add_(-1, top[:, :, k : k + 1], ones)
        return count.masked_fill_(count > 1, 0)

    assert_close_to_cpu(counts, metric)


@pytest.mark.parametrize("dtype", SMALL_INTS, ids=dtype_id)
def test_creation_and_random_numbers(dtype):
    assert_factory_close_to_cpu(lambda d: torch.arange(-5, 20, 3, dtype=dtype, device=d))
    assert_factory_close_to_cpu(lambda d: torch.linspace(-5, 20, 7, dtype=dtype, device=d))
    low, high = (-3, 4)
    drawn = torch.empty(4000, dtype=dtype, device="vkml").random_(low, high).cpu()
    assert set(drawn.tolist()) == set(range(low, high))
    full = torch.randint(-(2**7), 2**7, (4000,), dtype=dtype, device="vkml").cpu()
    assert full.min() == -(2**7) and full.max() == 2**7 - 1
    # random_() spans [0, max]; bounds outside the dtype raise in the CPU's words.
    top = torch.empty(4000, dtype=dtype, device="vkml").random_().cpu()
    assert top.min() >= 0 and top.max() > torch.iinfo(dtype).max // 2
    for bounds in ((0, 70000), (-70000, 5)):
        with pytest.raises(RuntimeError) as cpu:
            torch.empty(3, dtype=dtype).random_(*bounds)
        with pytest.raises(RuntimeError, match=str(cpu.value)):
            torch.empty(3, dtype=dtype, device="vkml").random_(*bounds)
