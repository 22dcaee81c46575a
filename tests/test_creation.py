"""Tensor factories on the vkml device (random numbers: test_random.py)."""

import pytest
import torch
from conftest import (
    ALL_DTYPES,
    VKML,
    assert_close_to_cpu,
    assert_factory_close_to_cpu,
    assert_same,
    dtype_id,
    host_syncs,
    make,
    scalar_for,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

SHAPES = [(), (0, 3), (1,), (3, 4), (2, 3, 5)]


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
        # int64 output: torch <= 2.13 casts the bounds first (3 elements), 2.14 counts in
        # double as for int32 (4); vkml follows the installed torch
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
    # of 0.5 cast to long, and the process dies of SIGFPE. torch 2.13's raises ValueError;
    # torch 2.14's counts the elements in double and repeats the start, as vkml then does.
    if step and tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 14):
        expected = torch.arange(0, 5, step, dtype=torch.long)
        assert torch.equal(torch.arange(0, 5, step, dtype=torch.long, device=VKML).cpu(), expected)
        return
    expected = ValueError
    if step == 0:
        with pytest.raises(Exception) as cpu:
            torch.arange(0, 5, step, dtype=torch.long)
        expected = cpu.type
    with pytest.raises(expected, match="step must be nonzero"):
        torch.arange(0, 5, step, dtype=torch.long, device=VKML)


@pytest.mark.parametrize("args", [(0, 126, 1.3), (-5.5, 7.3, 0.1), (0, 10000, 0.01)], ids=repr)
def test_float32_arange_with_a_fractional_step_rounds_once_from_double(args):
    # start + step * i in double, rounded once, as the CPU's scalar loop does (its
    # vectorized loop rounds each block's base to float too, so a few values differ by
    # one ulp there). Float32 arithmetic gave arange(0, 126, 1.3)[30] = 38.99999 where
    # the CPU has 39: .long() picked another index in torchaudio's phase vocoder.
    # Devices without float64 keep float32 arithmetic, as CUDA does.
    start, _, step = args
    got = torch.arange(*args, device=VKML).cpu()
    i = torch.arange(got.numel(), dtype=torch.float64)
    assert got.dtype == torch.float32
    exact = torch_vkml.get_device_properties().supports_fp64
    if exact:
        assert torch.equal(got, (start + step * i).float())
    torch.testing.assert_close(got, torch.arange(*args), rtol=2**-23 if exact else 1e-6, atol=1e-7)
    if exact and args == (0, 126, 1.3):
        assert torch.equal(got.long(), torch.arange(*args).long())


def test_arange_large():
    # more elements than one workgroup dispatch row covers
    assert_factory_close_to_cpu(lambda d: torch.arange(70_001, device=d))


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


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices], ids=lambda f: f.__name__)
def test_tri_indices_do_not_wait_for_the_device(fn):
    torch_vkml.synchronize()
    before = host_syncs()
    r = fn(300, 200, -5, device=VKML)
    assert host_syncs() == before
    assert torch.equal(r.cpu(), fn(300, 200, -5))
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        fn(-1, 3, device=VKML)


# ------------------------------------------------------- float64 digits


def assert_factory_same(fn):
    expected = fn(torch.device("cpu"))
    actual = fn(torch.device(VKML))
    assert_same(actual, expected, atol=0, rtol=0)


def test_float64_creation_keeps_digits():
    assert_factory_same(lambda d: torch.full((3, 2), 0.1, dtype=torch.float64, device=d))
    assert_factory_same(lambda d: torch.arange(0, 1, 0.1, dtype=torch.float64, device=d))
    assert_factory_same(lambda d: torch.zeros(4, dtype=torch.float64, device=d) + 1e-300)


@pytest.mark.parametrize("steps", [0, 1, 2, 7, 1000])
def test_complex_linspace(steps):
    """Each part is the CPU's real linspace (its complex step divides the parts apart)."""
    for dtype in (torch.complex64, torch.complex128):
        got = torch.linspace(1 + 2j, -3 + 0.5j, steps, dtype=dtype, device=VKML).cpu()
        want = torch.linspace(1 + 2j, -3 + 0.5j, steps, dtype=dtype)
        torch.testing.assert_close(
            got, want, rtol=0, atol=1e-6 if dtype == torch.complex64 else 1e-15
        )


@pytest.mark.parametrize(
    "fill",
    [
        lambda out: torch.linspace(0, 3, 4, out=out),
        lambda out: torch.logspace(0, 3, 4, out=out),
        lambda out: torch.arange(4, out=out),
        lambda out: torch.arange(0.5, 4.5, out=out),
    ],
    ids=["linspace", "logspace", "arange", "arange_float"],
)
def test_ranges_into_an_out_of_the_same_count_keep_its_shape(fill):
    """An out of steps elements in another shape (a narrowed view, PyTorch's
    test_tensor_creation_ops): the CPU keeps its shape and strides and fills it in
    row-major order; vkml wrote past the view."""
    for device in ("cpu", "vkml"):
        x = torch.zeros(2, 3, device=device)
        fill(x.narrow(1, 1, 2))
        y = torch.zeros(2, 2, device=device)
        fill(y)
        if device == "cpu":
            want_x, want_y = x, y
        else:
            torch.testing.assert_close(x.cpu(), want_x, atol=0, rtol=1e-6)
            torch.testing.assert_close(y.cpu(), want_y, atol=0, rtol=1e-6)
