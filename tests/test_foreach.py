"""_foreach_* ops against the CPU, and their batching into one dispatch per list.

Each _foreach op runs ATen's per-tensor loop with its elementwise kernels held back into
one table dispatch (csrc/vkml/ops/elementwise_batch.h). Lists mix sizes (ragged tails),
unaligned views, non-contiguous tensors and aliases. Tolerances: float32 1e-6, float16 and
bfloat16 the dtype's own (1e-3, 1e-2).
"""

import pytest
import torch
from conftest import VKML, dtype_id, make

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 1e-2}
SIZES = [(7,), (33, 5), (1024,), (3, 300), (1,), (4097,)]


def _lists(dtype, n=3, positive=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ts = [torch.randn(s, generator=g).to(dtype) for s in SIZES]
        if positive:
            ts = [t.abs() + 0.5 for t in ts]
        out.append(ts)
    return out


def _dev(ts):
    return [t.to(VKML) for t in ts]


def _operands(dtype):
    """Lists a and b, a positive list c (for div, sqrt, pow), and a scalar list."""
    a, b, _ = _lists(dtype)
    (c,) = _lists(dtype, n=1, positive=True, seed=1)
    return a, b, c, [0.5 * (i + 1) for i in range(len(SIZES))]


def _close(got, want, dtype):
    tol = TOL[dtype]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.device.type == VKML and g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w, atol=tol, rtol=tol)


# (name, how to call it on (a, b, c) lists and a scalar list)
CALLS = {
    "add_list_alpha": lambda a, b, c, s: torch._foreach_add(a, b, alpha=0.5),
    "add_scalar": lambda a, b, c, s: torch._foreach_add(a, 1.25),
    "add_scalarlist": lambda a, b, c, s: torch._foreach_add(a, s),
    "sub_list": lambda a, b, c, s: torch._foreach_sub(a, b),
    "mul_list": lambda a, b, c, s: torch._foreach_mul(a, b),
    "mul_scalarlist": lambda a, b, c, s: torch._foreach_mul(a, s),
    "div_list": lambda a, b, c, s: torch._foreach_div(a, c),
    "div_scalar": lambda a, b, c, s: torch._foreach_div(a, 3.0),
    "addcmul_scalar": lambda a, b, c, s: torch._foreach_addcmul(a, b, c, value=0.3),
    "addcmul_scalarlist": lambda a, b, c, s: torch._foreach_addcmul(a, b, c, s),
    "addcdiv_scalarlist": lambda a, b, c, s: torch._foreach_addcdiv(a, b, c, s),
    "lerp_scalar": lambda a, b, c, s: torch._foreach_lerp(a, b, 0.1),
    "lerp_list": lambda a, b, c, s: torch._foreach_lerp(a, b, c),
    "maximum_list": lambda a, b, c, s: torch._foreach_maximum(a, b),
    "clamp_min_scalar": lambda a, b, c, s: torch._foreach_clamp_min(a, 0.2),
    "pow_scalar": lambda a, b, c, s: torch._foreach_pow(c, 1.5),
    "sqrt": lambda a, b, c, s: torch._foreach_sqrt(c),
    "neg": lambda a, b, c, s: torch._foreach_neg(a),
    "reciprocal": lambda a, b, c, s: torch._foreach_reciprocal(c),
    "exp": lambda a, b, c, s: torch._foreach_exp(a),
    "abs": lambda a, b, c, s: torch._foreach_abs(a),
    "sign": lambda a, b, c, s: torch._foreach_sign(a),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", list(CALLS))
def test_functional_matches_cpu(name, dtype):
    a, b, c, s = _operands(dtype)
    want = CALLS[name](a, b, c, s)
    got = CALLS[name](_dev(a), _dev(b), _dev(c), s)
    _close(got, want, dtype)


INPLACE = {
    "add_": lambda a, b, c, s: torch._foreach_add_(a, b, alpha=-2.0),
    "mul_scalarlist_": lambda a, b, c, s: torch._foreach_mul_(a, s),
    "addcmul_": lambda a, b, c, s: torch._foreach_addcmul_(a, b, c, value=0.5),
    "addcdiv_": lambda a, b, c, s: torch._foreach_addcdiv_(a, b, c, s),
    "lerp_": lambda a, b, c, s: torch._foreach_lerp_(a, b, 0.9),
    "sqrt_": lambda a, b, c, s: torch._foreach_sqrt_(c),
    "zero_": lambda a, b, c, s: torch._foreach_zero_(a),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", list(INPLACE))
def test_in_place_matches_cpu(name, dtype):
    a, b, c, s = _operands(dtype)
    da, db, dc = _dev(a), _dev(b), _dev(c)
    INPLACE[name](a, b, c, s)
    INPLACE[name](da, db, dc, s)
    _close(da, a, dtype)
    _close(dc, c, dtype)


def test_one_dispatch_per_list():
    a, b, _ = _lists(torch.float32, n=3)
    da, db = _dev(a * 4), _dev(b * 4)  # 24 tensors each
    torch_vkml.synchronize()
    before = torch_vkml.memory_stats()["num_dispatches"]
    torch._foreach_add_(da, db, alpha=0.5)
    torch._foreach_mul_(da, 2.0)
    after = torch_vkml.memory_stats()["num_dispatches"]
    assert after - before == 2
    want = [(x + 0.5 * y) * 2.0 for x, y in zip(a * 4, b * 4, strict=True)]
    _close(da, want, torch.float32)


def test_large_lists_take_their_table_from_device_memory():
    """Lists of 256+ workgroups (1024 elements each) copy their table to device memory
    first (ops/elementwise_batch.cpp); consecutive ops reuse that memory in order."""
    g = torch.Generator().manual_seed(1)
    sizes = [(100_000,), (70_001,), (131_072,), (3, 333)]
    a, b, c = ([torch.randn(s, generator=g) for s in sizes] for _ in range(3))
    da, db, dc = _dev(a), _dev(b), _dev(c)
    before = torch_vkml.memory_stats()["num_dispatches"]
    torch._foreach_addcmul_(da, db, dc, value=0.5)
    torch._foreach_mul_(da, 2.0)
    torch._foreach_add_(da, db)
    assert torch_vkml.memory_stats()["num_dispatches"] - before == 3
    want = [(x + 0.5 * y * z) * 2.0 + y for x, y, z in zip(a, b, c, strict=True)]
    _close(da, want, torch.float32)


def test_views_non_contiguous_and_tensor_scalar():
    """Unaligned offsets go element-wise inside the table; a transposed tensor is
    launched on its own; a 0-dim device tensor is read as one element for every output."""
    base = make((4, 301))  # row 1 from element 1: an offset of 302, not 4-aligned
    cpu = [base[0, 1:], base[1, 1:].view(10, 30), base[2:, :100].t(), make((64,))]
    dev_base = base.to(VKML)
    dev = [dev_base[0, 1:], dev_base[1, 1:].view(10, 30), dev_base[2:, :100].t(), cpu[3].to(VKML)]
    scale = torch.tensor(0.25)
    torch._foreach_mul_(cpu, scale)
    torch._foreach_mul_(dev, scale.to(VKML))
    _close(dev, cpu, torch.float32)
    torch.testing.assert_close(dev_base.cpu(), base)


def test_aliased_entries_keep_sequential_semantics():
    """The same tensor twice in a list, or one entry's output another's input: each
    op sees the ones before it, as the per-tensor loop does."""
    a, b = make((100,)), make((100,))
    da, db = a.to(VKML), b.to(VKML)
    torch._foreach_add_([a, a, b], [b, b, a])
    torch_vkml.synchronize()
    before = torch_vkml.memory_stats()["num_dispatches"]
    torch._foreach_add_([da, da, db], [db, db, da])
    # Each entry depends on the one before: the table is sent before each of them
    # (a GPU runs one table's workgroups in any order).
    assert torch_vkml.memory_stats()["num_dispatches"] - before == 3
    torch.testing.assert_close(da.cpu(), a)
    torch.testing.assert_close(db.cpu(), b)


def test_integer_lists_and_promotion():
    """int lists with a float scalar promote to float (ATen's rule), off the table path."""
    ints = [torch.arange(10), torch.arange(7) - 3]
    got = torch._foreach_div(_dev(ints), 2)
    want = torch._foreach_div(ints, 2)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype == torch.float32
        torch.testing.assert_close(g.cpu(), w)
    torch._foreach_add_(ints, 5)
    dev = _dev([torch.arange(10), torch.arange(7) - 3])
    torch._foreach_add_(dev, 5)
    for g, w in zip(dev, ints, strict=True):
        torch.testing.assert_close(g.cpu(), w)


@pytest.mark.parametrize("opt_name", ["AdamW", "SGD"])
def test_foreach_optimizer_matches_cpu_with_few_dispatches(opt_name):
    """The default (foreach) optimizers, as users get them, across three steps."""
    torch.manual_seed(0)
    shapes = [(33, 17), (17,), (64, 33), (64,), (5, 5, 3, 3), (10,)] * 2
    init = [torch.randn(s) for s in shapes]
    grads = [[torch.randn(s) for s in shapes] for _ in range(3)]
    kwargs = {"lr": 1e-2, "weight_decay": 0.1} if opt_name == "AdamW" else {}
    if opt_name == "SGD":
        kwargs = {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}
    results, counts = {}, []
    for dev in ("cpu", VKML):
        ps = [torch.nn.Parameter(t.clone().to(dev)) for t in init]
        opt = getattr(torch.optim, opt_name)(ps, foreach=True, **kwargs)
        for step in range(3):
            for p, g in zip(ps, grads[step], strict=True):
                p.grad = g.to(dev)
            if dev == VKML:
                torch_vkml.synchronize()
                before = torch_vkml.memory_stats()["num_dispatches"]
            opt.step()
            if dev == VKML:
                counts.append(torch_vkml.memory_stats()["num_dispatches"] - before)
        results[dev] = [p.detach().cpu() for p in ps]
    for g, w in zip(results[VKML], results["cpu"], strict=True):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    # A step is a handful of list ops, whatever the number of tensors (12 here);
    # one by one it was about ten kernels per tensor.
    assert max(counts[1:]) <= 16, counts
