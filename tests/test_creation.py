"""Tensor factories and random number generation on the vkml device."""

import math

import pytest
import torch
from conftest import (
    ALL_DTYPES,
    VKML,
    assert_close_to_cpu,
    assert_factory_close_to_cpu,
    dtype_id,
    make,
    scalar_for,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

SHAPES = [(), (0, 3), (1,), (3, 4), (2, 3, 5)]
N = 100_000  # sample size for distribution checks


@pytest.mark.parametrize("dtype", ALL_DTYPES + [torch.uint8], ids=dtype_id)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_empty(shape, dtype):
    t = torch.empty(shape, dtype=dtype, device=VKML)
    assert t.is_vkml
    assert t.shape == shape and t.dtype == dtype
    assert t.is_contiguous()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("factory", [torch.zeros, torch.ones])
def test_zeros_ones(factory, shape, dtype):
    assert_factory_close_to_cpu(lambda d: factory(shape, dtype=dtype, device=d))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", [(), (0, 3), (3, 4), (1000,)], ids=str)
def test_full(shape, dtype):
    value = -7 if dtype in (torch.int64, torch.int32) else scalar_for(dtype)
    assert_factory_close_to_cpu(lambda d: torch.full(shape, value, dtype=dtype, device=d))


@pytest.mark.parametrize("value", [1.5, 3, True, -(2**40)], ids=repr)
def test_full_infers_dtype(value):
    assert_factory_close_to_cpu(lambda d: torch.full((2, 3), value, device=d))


def test_full_extreme_values():
    for value, dtype in [
        (2**62 + 1, torch.int64),
        (-(2**31), torch.int32),
        (float("inf"), torch.float32),
        (float("nan"), torch.float32),
        (-0.0, torch.float32),
        (65504.0, torch.float16),
    ]:
        _, vk = assert_factory_close_to_cpu(
            lambda d, value=value, dtype=dtype: torch.full((5,), value, dtype=dtype, device=d)
        )
        if dtype.is_floating_point and value == 0:
            assert torch.signbit(vk.cpu()).all()


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((10,), {}),
        ((2, 20, 3), {}),
        ((10, -5, -2), {}),
        ((0,), {}),
        ((5, 5), {}),
        ((3, 30, 4), {"dtype": torch.int32}),
        ((0.0, 1.0, 0.1), {}),
        ((5.0, -1.0, -0.5), {}),
        ((-3, 3), {"dtype": torch.float32}),
        ((0, 2, 0.25), {"dtype": torch.float16}),
        ((2**33, 2**33 + 40, 7), {}),
        # int64 output: the CPU casts the bounds first (3 elements); int32 counts in double (4)
        ((-1.5, 5, 2), {"dtype": torch.int64}),
        ((-1.5, 5, 2), {"dtype": torch.int32}),
        ((7.9, 0.5, -2.5), {"dtype": torch.int64}),
    ],
    ids=repr,
)
def test_arange(args, kwargs):
    assert_factory_close_to_cpu(lambda d: torch.arange(*args, **kwargs, device=d))


@pytest.mark.parametrize("step", [0, 0.5], ids=repr)
def test_arange_step_cast_to_zero(step):
    # The CPU is asked only about a zero step: torch 2.11's CPU arange divides by a step
    # of 0.5 cast to long, and the process dies of SIGFPE. torch 2.13's raises ValueError.
    expected = ValueError
    if step == 0:
        with pytest.raises(Exception) as cpu:
            torch.arange(0, 5, step, dtype=torch.long)
        expected = cpu.type
    with pytest.raises(expected, match="step must be nonzero"):
        torch.arange(0, 5, step, dtype=torch.long, device=VKML)


def test_arange_large():
    # more elements than one workgroup dispatch row covers
    assert_factory_close_to_cpu(lambda d: torch.arange(70_001, device=d))


# ---------------------------------------------------------------- random


def _stats(t):
    t = t.cpu().double()
    return t.mean().item(), t.std().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
def test_rand(dtype):
    t = torch.rand(N, dtype=dtype, device=VKML)
    assert t.is_vkml and t.dtype == dtype and t.shape == (N,)
    values = t.cpu()
    assert values.min().item() >= 0.0
    assert values.max().item() < 1.0
    mean, std = _stats(t)
    assert abs(mean - 0.5) < 0.01
    assert abs(std - 1 / math.sqrt(12)) < 0.01
    if dtype == torch.float32:
        # no repeating streams across threads/workgroups
        assert values.unique().numel() > 0.99 * N


def test_rand_shapes():
    assert torch.rand(2, 3, device=VKML).shape == (2, 3)
    assert torch.rand((), device=VKML).shape == ()
    assert torch.rand(0, 3, device=VKML).shape == (0, 3)
    assert torch.randn(4, 1, 2, device=VKML).shape == (4, 1, 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
def test_randn(dtype):
    t = torch.randn(N, dtype=dtype, device=VKML)
    assert t.is_vkml and t.dtype == dtype and t.shape == (N,)
    values = t.cpu().double()
    assert torch.isfinite(values).all()
    mean, std = _stats(t)
    assert abs(mean) < 0.02
    assert abs(std - 1.0) < 0.02
    # roughly normal tails: about 4.55% beyond two standard deviations
    assert abs((values.abs() > 2).double().mean().item() - 0.0455) < 0.005
    if dtype == torch.float32:
        assert values.unique().numel() > 0.99 * N


def test_successive_draws_differ():
    a = torch.rand(1000, device=VKML).cpu()
    b = torch.rand(1000, device=VKML).cpu()
    assert not torch.equal(a, b)
    c = torch.randn(1000, device=VKML).cpu()
    d = torch.randn(1000, device=VKML).cpu()
    assert not torch.equal(c, d)


def test_normal_():
    t = torch.empty(N, device=VKML)
    out = t.normal_(2.0, 3.0)
    assert out is t
    mean, std = _stats(t)
    assert abs(mean - 2.0) < 0.06
    assert abs(std - 3.0) < 0.06


def test_normal_noncontiguous():
    base = torch.zeros(400, 500, device=VKML)
    view = base.t()[::2]
    view.normal_()
    values = base.cpu()
    touched = values.t()[::2]
    assert (values.t()[1::2] == 0).all(), "wrote outside the view"
    mean, std = _stats(touched)
    assert abs(mean) < 0.03 and abs(std - 1.0) < 0.03


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
def test_uniform_(dtype):
    t = torch.empty(N, dtype=dtype, device=VKML)
    out = t.uniform_(-2.0, 5.0)
    assert out is t
    values = t.cpu()
    assert values.min().item() >= -2.0
    assert values.max().item() < 5.0
    mean, std = _stats(t)
    assert abs(mean - 1.5) < 0.05
    assert abs(std - 7 / math.sqrt(12)) < 0.05


def test_randint_range_and_dtype():
    t = torch.randint(-5, 7, (N,), device=VKML)
    assert t.is_vkml and t.dtype == torch.int64 and t.shape == (N,)
    values = t.cpu()
    assert values.min().item() == -5
    assert values.max().item() == 6
    counts = torch.bincount(values + 5)
    assert counts.numel() == 12
    expected = N / 12
    assert ((counts - expected).abs() < 0.1 * expected).all(), counts


def test_randint_forms():
    t = torch.randint(10, (1000,), device=VKML)
    assert t.dtype == torch.int64
    assert 0 <= t.cpu().min().item() and t.cpu().max().item() < 10
    t32 = torch.randint(0, 3, (2, 500), dtype=torch.int32, device=VKML)
    assert t32.dtype == torch.int32 and t32.shape == (2, 500)
    assert set(t32.cpu().unique().tolist()) == {0, 1, 2}


def test_randint_wide_range():
    low, high = -(2**40), 2**40
    values = torch.randint(low, high, (1000,), device=VKML).cpu()
    assert values.min().item() >= low and values.max().item() < high
    # 64-bit randomness, not just 32 bits: some |values| exceed 2**32
    assert (values.abs() > 2**32).any()


# ---------------------------------------------------------- *_like


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_like_factories(dtype):
    x = make((3, 4), dtype)
    assert_close_to_cpu(torch.zeros_like, x)
    assert_close_to_cpu(torch.ones_like, x)
    value = scalar_for(dtype)
    assert_close_to_cpu(lambda t: torch.full_like(t, value), x)
    assert_close_to_cpu(lambda t: torch.zeros_like(t, dtype=torch.float32), x)
    assert_close_to_cpu(lambda t: torch.ones_like(t, dtype=torch.int64), x)


def test_like_preserves_strides():
    x = make((4, 6))
    for fn in (torch.zeros_like, torch.ones_like, torch.empty_like):
        cpu, vk = fn(x.t()), fn(x.to(VKML).t())
        assert vk.is_vkml
        assert vk.stride() == cpu.stride()


# ----------------------------------------------------------- seeding


def _draws():
    return [
        torch.rand(1000, device=VKML).cpu(),
        torch.randn(1000, device=VKML).cpu(),
        torch.randint(0, 100, (1000,), device=VKML).cpu(),
        torch.empty(1000, device=VKML).uniform_(-1, 1).cpu(),
        torch.empty(1000, device=VKML).normal_(0, 2).cpu(),
    ]


@pytest.mark.parametrize("seed_fn", [torch.manual_seed, torch_vkml.manual_seed])
def test_seeding_reproducible(seed_fn):
    seed_fn(7)
    first = _draws()
    seed_fn(7)
    second = _draws()
    seed_fn(8)
    other = _draws()
    for a, b, c in zip(first, second, other, strict=True):
        assert torch.equal(a, b)
        assert not torch.equal(a, c)


def test_device_rng_independent_of_cpu_rng():
    torch.manual_seed(3)
    a = torch.rand(100, device=VKML).cpu()
    torch.manual_seed(3)
    torch.rand(100)  # CPU draws must not advance the vkml generator
    b = torch.rand(100, device=VKML).cpu()
    assert torch.equal(a, b)


# --------------------------------------------------------------------------
# linspace / logspace / arange(uint8) / tril_indices / triu_indices
# --------------------------------------------------------------------------

LINSPACE_CASES = [(0, 1, 5), (-3.5, 7.25, 11), (10, -10, 7), (1, 1, 4), (2.5, 9, 1), (0, 5, 0)]


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8],
    ids=dtype_id,
)
@pytest.mark.parametrize("case", LINSPACE_CASES, ids=str)
def test_linspace(case, dtype):
    start, end, steps = case
    if dtype == torch.uint8:
        start, end = abs(start), abs(end)
    # Exact: the CPU's two-sided formula with its roundings.
    assert_factory_close_to_cpu(
        lambda d: torch.linspace(start, end, steps, dtype=dtype, device=d), atol=0, rtol=0
    )


def test_linspace_long_and_tensor_bounds():
    assert_factory_close_to_cpu(lambda d: torch.linspace(-1.7, 3.3, 1001, device=d))
    assert_factory_close_to_cpu(
        lambda d: torch.linspace(
            torch.tensor(-2.0, device=d), torch.tensor(5.0, device=d), 9, device=d
        )
    )
    out = torch.empty(10, 2, device=VKML)[:, 0]  # a strided out=
    torch.linspace(0, 1, 10, out=out)
    assert torch.equal(out.cpu(), torch.linspace(0, 1, 10))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=dtype_id)
def test_logspace(dtype):
    assert_factory_close_to_cpu(lambda d: torch.logspace(-2, 3, 11, dtype=dtype, device=d))
    assert_factory_close_to_cpu(
        lambda d: torch.logspace(0.5, -1.5, 6, base=2.0, dtype=dtype, device=d)
    )
    assert_factory_close_to_cpu(lambda d: torch.logspace(1.5, 3, 1, dtype=dtype, device=d))


def test_signal_windows():
    for window in (
        torch.signal.windows.cosine,
        torch.signal.windows.exponential,
        torch.signal.windows.gaussian,
    ):
        assert_factory_close_to_cpu(lambda d, w=window: w(12, device=d))


def test_arange_uint8():
    assert_factory_close_to_cpu(lambda d: torch.arange(3, 250, 7, dtype=torch.uint8, device=d))
    assert_factory_close_to_cpu(lambda d: torch.arange(0, 300, dtype=torch.uint8, device=d))


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(4, 4, 0), (3, 5, 1), (5, 3, -2), (0, 3, 0), (4, 2, 9)], ids=str)
def test_tri_indices(fn, shape):
    for dtype in (torch.int64, torch.int32):
        assert_factory_close_to_cpu(lambda d, t=dtype: fn(*shape, dtype=t, device=d))
