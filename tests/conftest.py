"""Shared setup, fixtures and helpers for the torch-vkml test suite.

The environment defaults below must be in place before torch is imported:
torch may autoload torch_vkml through its ``torch.backends`` entry point, and
the runtime reads ``TORCH_VKML_VALIDATION`` when it first initialises.

Test modules import the helpers with ``from conftest import ...``.
"""

import os

os.environ.setdefault("TORCH_VKML_VALIDATION", "1")  # Khronos validation layer on
os.environ.setdefault("LP_NUM_THREADS", "0")  # lavapipe: no worker threads
os.environ.setdefault("TORCH_VKML_FALLBACK", "warn")

import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_vkml  # noqa: E402  (no skip: a missing package must fail loudly)

VKML = "vkml"

# Runs that make test leaves out for its 20-minute budget (README: TORCH_VKML_LONG_TESTS).
LONG_TESTS = os.environ.get("TORCH_VKML_LONG_TESTS") == "1"

FLOAT_DTYPES = [torch.float32, torch.float16]
INT_DTYPES = [torch.int64, torch.int32]
ALL_DTYPES = [torch.float32, torch.int64, torch.int32, torch.bool, torch.float16]

# Default comparison tolerances, keyed by the dtype of the result.
# Integer and bool results must match exactly.
TOLERANCES = {
    torch.float64: dict(atol=1e-7, rtol=1e-7),
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.float16: dict(atol=1e-2, rtol=1e-2),
}
MATMUL_TOLERANCES = {
    torch.float32: dict(atol=1e-4, rtol=1e-4),
    torch.float16: dict(atol=1e-2, rtol=1e-2),
}

# Elementwise results in 16-bit dtypes (computed in fp32, rounded once on the store).
NAN = float("nan")
INF = float("inf")
BF16 = dict(atol=1e-2, rtol=1.6e-2)  # bfloat16 has 8 significant bits
F16 = dict(atol=1e-2, rtol=1e-2)
LOW_PRECISION = {torch.float16: F16, torch.bfloat16: BF16}


def tol(dtype, f32=None):
    """Tolerances for a result dtype: ``f32`` overrides the float32 default."""
    if dtype in LOW_PRECISION:
        return LOW_PRECISION[dtype]
    return f32 or {}


def dtype_id(dtype):
    """Short parametrize id for a dtype: ``torch.float32`` -> ``float32``."""
    return str(dtype).removeprefix("torch.")


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------

# Test data comes from a private CPU generator, reseeded before every test, so
# that inputs do not depend on test order or on the global (device) RNGs.
_GEN = torch.Generator().manual_seed(0)


@pytest.fixture(autouse=True)
def _reseed_test_data():
    _GEN.manual_seed(20240601)


@pytest.fixture(autouse=True)
def _no_validation_messages():
    """Fail any test during which the Vulkan validation layer complained."""
    yield
    if torch_vkml.is_available():
        torch_vkml.synchronize()  # flush pending work so its messages arrive
    messages = torch_vkml.validation_messages()
    if messages:
        print(f"{len(messages)} Vulkan validation message(s):")
        for message in messages:
            print("  " + message)
        pytest.fail(
            f"Vulkan validation layer reported {len(messages)} message(s); first: {messages[0]}",
            pytrace=False,
        )


@pytest.fixture
def no_fallback():
    """Assert that no aten op of the test ran on the CPU fallback."""
    torch_vkml.reset_fallback_counts()
    yield
    counts = torch_vkml.fallback_counts()
    assert counts == {}, f"ops ran on the CPU fallback: {counts}"


def kernels_run(fn, prefix=""):
    """fn's result and the names (without their specialization constants) of the device
    kernels it dispatched whose names start with ``prefix``, from torch_vkml.profile."""
    with torch_vkml.profile() as prof:
        out = fn()
        torch_vkml.synchronize()
    return out, {k.name.split("[")[0] for k in prof.kernels if k.name.startswith(prefix)}


@pytest.fixture
def emulated_matrix_units():
    """TORCH_VKML_COOPMAT=emulate in process: fp16 and bf16 GEMM, convolution and
    attention take the matrix-unit kernels' emulated variants, plain arithmetic in place
    of the matrix units, so that their tiling, staging, gathers, masking, softmax and
    edges run on any device with fp16 (Debian 12's lavapipe has no matrix units;
    scripts/lavapipe_next.sh runs the real fp16 variants on Mesa 26's)."""
    before = torch_vkml._C._coopmat_mode()
    torch_vkml._C._set_coopmat_mode("emulate")
    yield
    torch_vkml._C._set_coopmat_mode(before)


# --------------------------------------------------------------------------
# Test data
# --------------------------------------------------------------------------


def make(
    shape,
    dtype=torch.float32,
    *,
    low=None,
    high=None,
    nonzero=False,
    discrete=False,
    unique=False,
):
    """Deterministic random CPU tensor.

    Floats are uniform in [low, high) (default [-3, 3)); integers are uniform
    in [low, high) (default [-9, 10), [0, 10) for uint8); bools are fair coin
    flips.  ``nonzero`` keeps values away from zero (|x| >= 0.5 for floats,
    >= 1 for integers, True for bools) so they can divide.  ``discrete`` makes
    floats small whole numbers, which gives comparisons some ties.
    ``unique`` makes all values distinct (for argmax/max indices).
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    numel = 1
    for size in shape:
        numel *= size
    if unique:
        values = torch.randperm(numel, generator=_GEN, dtype=torch.float64)
        offset = 0 if low is None else low
        if dtype in (torch.bool, torch.uint8):
            raise ValueError(f"unique values are not possible for {dtype}")
        if dtype.is_floating_point:
            values = (values - numel // 2) * 0.25 + offset
        else:
            values = values - numel // 2 + offset
        return values.to(dtype).reshape(shape)
    if dtype == torch.bool:
        if nonzero:
            return torch.ones(shape, dtype=torch.bool)
        return torch.randint(0, 2, shape, generator=_GEN).bool()
    if dtype.is_floating_point:
        lo = -3.0 if low is None else float(low)
        hi = 3.0 if high is None else float(high)
        if discrete:
            values = torch.randint(int(lo), int(hi), shape, generator=_GEN)
            return values.to(dtype)
        values = torch.rand(shape, generator=_GEN, dtype=torch.float64)
        values = values * (hi - lo) + lo
        if nonzero:
            sign = torch.randint(0, 2, shape, generator=_GEN) * 2 - 1
            values = (values.abs() + 0.5) * sign
        return values.to(dtype)
    lo = (0 if dtype == torch.uint8 else -9) if low is None else int(low)
    hi = 10 if high is None else int(high)
    values = torch.randint(lo, hi, shape, generator=_GEN, dtype=torch.int64)
    if nonzero:
        values = torch.where(values == 0, torch.ones_like(values), values)
    return values.to(dtype)


def scalar_for(dtype):
    """A python scalar that fits ``dtype``, for ``tensor <op> scalar`` tests."""
    if dtype == torch.bool:
        return True
    if dtype.is_floating_point:
        return 2.5
    return 3


# Operand layouts for binary ops.  Each entry maps a layout name to
# (shape of a, shape of b, function building the operands from the device
# copies).  ``None`` as b's shape means b is a python scalar.
BINARY_LAYOUTS = {
    "contiguous": ((4, 5), (4, 5), lambda a, b: (a, b)),
    # a.t() is transposed, b[:, ::2] is sliced with a step: both (4, 5)
    "noncontiguous": ((5, 4), (4, 10), lambda a, b: (a.t(), b[:, ::2])),
    "broadcast": ((3, 1, 4), (1, 5, 1), lambda a, b: (a, b)),
    "empty": ((0, 3), (0, 3), lambda a, b: (a, b)),
    "zerodim": ((), (), lambda a, b: (a, b)),
    "zerodim_other": ((4, 5), (), lambda a, b: (a, b)),
    "scalar": ((4, 5), None, None),
}
UNARY_LAYOUTS = {
    "contiguous": ((4, 5), lambda a: a),
    "noncontiguous": ((4, 10), lambda a: a.t()[::2]),
    "empty": ((0, 3), lambda a: a),
    "zerodim": ((), lambda a: a),
}


def binary_case(layout, dtype, a_kw=None, b_kw=None, b_dtype=None):
    """Inputs for a binary op in the given layout.

    Returns ``(inputs, build)``: ``inputs`` are CPU tensors to pass to
    :func:`assert_close_to_cpu`; inside the compared function,
    ``build(*inputs)`` yields the operands ``(a, b)``.
    """
    a_shape, b_shape, build = BINARY_LAYOUTS[layout]
    a = make(a_shape, dtype, **(a_kw or {}))
    if b_shape is None:
        value = scalar_for(b_dtype or dtype)
        return (a,), lambda x: (x, value)
    b = make(b_shape, b_dtype or dtype, **(b_kw or {}))
    return (a, b), build


def unary_case(layout, dtype, **make_kw):
    shape, build = UNARY_LAYOUTS[layout]
    return make(shape, dtype, **make_kw), build


# --------------------------------------------------------------------------
# Comparison against the CPU
# --------------------------------------------------------------------------


def to_device(value, device):
    """Copy tensors (also inside lists/tuples) to ``device``.

    CPU copies are clones, so in-place ops cannot touch the caller's inputs.
    Leaf tensors that require grad stay leaves that require grad.
    """
    if isinstance(value, torch.Tensor):
        copy = value.detach().to(device, copy=True)
        if value.requires_grad:
            copy.requires_grad_()
        return copy
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def _tolerances(dtype, atol, rtol):
    default = TOLERANCES.get(dtype, dict(atol=0.0, rtol=0.0))
    return (
        default["atol"] if atol is None else atol,
        default["rtol"] if rtol is None else rtol,
    )


def assert_same(actual, expected, *, atol=None, rtol=None, where="result"):
    """Compare a vkml result with the CPU result: device, dtype, shape, values.

    Tuples/lists are compared element-wise.  ``atol``/``rtol`` default to
    :data:`TOLERANCES` for the result's dtype (exact for integers and bools).
    NaNs compare equal to NaNs.
    """
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{where}: expected a tensor"
        assert actual.device.type == VKML, (
            f"{where}: result is on {actual.device}, expected a vkml tensor"
        )
        assert actual.dtype == expected.dtype, (
            f"{where}: dtype {actual.dtype} != CPU dtype {expected.dtype}"
        )
        assert actual.shape == expected.shape, (
            f"{where}: shape {tuple(actual.shape)} != CPU shape {tuple(expected.shape)}"
        )
        a_tol, r_tol = _tolerances(expected.dtype, atol, rtol)
        torch.testing.assert_close(
            actual.detach().cpu(),
            expected.detach(),
            atol=a_tol,
            rtol=r_tol,
            equal_nan=True,
            msg=lambda m: f"{where}: vkml differs from CPU\n{m}",
        )
    elif isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"{where}: expected a sequence"
        assert len(actual) == len(expected), f"{where}: length differs"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same(a, e, atol=atol, rtol=rtol, where=f"{where}[{i}]")
    elif isinstance(expected, float):
        a_tol, r_tol = _tolerances(torch.float32, atol, rtol)
        assert actual == pytest.approx(expected, abs=a_tol, rel=r_tol, nan_ok=True)
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def assert_close_to_cpu(fn, *cpu_inputs, atol=None, rtol=None):
    """Run ``fn`` on CPU copies and on vkml copies of the inputs and compare.

    Non-tensor inputs are passed through unchanged.  Results (tensors or
    tuples of tensors) must be vkml tensors with the CPU result's dtype and
    shape and close values.  Returns ``(cpu_result, vkml_result)``.
    """
    expected = fn(*to_device(cpu_inputs, "cpu"))
    actual = fn(*to_device(cpu_inputs, VKML))
    assert_same(actual, expected, atol=atol, rtol=rtol)
    return expected, actual


def assert_factory_close_to_cpu(fn, atol=None, rtol=None):
    """Compare ``fn(device)`` for a function that creates tensors on a device."""
    expected = fn(torch.device("cpu"))
    actual = fn(torch.device(VKML))
    assert_same(actual, expected, atol=atol, rtol=rtol)
    return expected, actual


def leaf(shape, dtype=torch.float32, **kw):
    """A test input that requires grad: ``make(shape, dtype, **kw)`` as a leaf."""
    return make(shape, dtype, **kw).requires_grad_()


def assert_raises_like_cpu(fn, *cpu_inputs):
    """``fn`` must raise on vkml the same exception type that it raises on CPU: at once,
    or, for checks of device values (indices, class targets), at the next read of the
    device, here a synchronize."""
    with pytest.raises(Exception) as cpu_error:
        fn(*to_device(cpu_inputs, "cpu"))
    with pytest.raises(cpu_error.type):
        fn(*to_device(cpu_inputs, VKML))
        torch_vkml.synchronize()


def host_syncs():
    """How often the host has waited for the device (read-backs, synchronize)."""
    return torch_vkml.memory_stats()["num_syncs"]


def cpu_error(fn, *args):
    """The exception type and first message line of fn(*args) on the CPU."""
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.type, str(info.value).splitlines()[0]


def check_raises_later(fn, *args, read=lambda r: r.cpu()):
    """fn(*args) on vkml returns without a wait; reading its result raises what the CPU
    raises at once; the device works afterwards (checks made by the kernels)."""
    kind, message = cpu_error(fn, *args)
    dev_args = [a.to(VKML) if isinstance(a, torch.Tensor) else a for a in args]
    torch_vkml.synchronize()
    before = host_syncs()
    result = fn(*dev_args)
    assert host_syncs() == before, "the check waited for the GPU"
    with pytest.raises(kind) as info:
        read(result)
    assert str(info.value).splitlines()[0] == message
    # Raised once, and the device still computes.
    torch_vkml.synchronize()
    assert (torch.arange(3, device=VKML) * 2).tolist() == [0, 2, 4]


def assert_grads_close_to_cpu(fn, *cpu_inputs, atol=None, rtol=None):
    """Compare forward results and input gradients of ``fn`` with the CPU.

    Inputs that require grad get gradients; the output is back-propagated
    with the same deterministic random gradient on both devices.
    """
    cpu_args = to_device(cpu_inputs, "cpu")
    vk_args = to_device(cpu_inputs, VKML)
    expected = fn(*cpu_args)
    actual = fn(*vk_args)
    assert_same(actual, expected, atol=atol, rtol=rtol, where="forward")
    grad_out = make(expected.shape, expected.dtype)
    expected.backward(grad_out)
    actual.backward(grad_out.to(VKML))
    for i, (c, v) in enumerate(zip(cpu_args, vk_args, strict=True)):
        if isinstance(c, torch.Tensor) and c.requires_grad:
            assert v.grad is not None, f"input {i} got no gradient on vkml"
            assert_same(v.grad, c.grad, atol=atol, rtol=rtol, where=f"grad[{i}]")


# --------------------------------------------------------------------------
# Subprocesses
# --------------------------------------------------------------------------


def run_python(code, env=None, unset=(), timeout=180):
    """Run a python snippet in a fresh interpreter (``sys.executable``).

    ``env`` entries are added to a copy of this process's environment and
    names in ``unset`` are removed from it.  Returns the CompletedProcess
    (text mode, stdout/stderr captured); the caller checks the return code.
    """
    full_env = dict(os.environ)
    for name in unset:
        full_env.pop(name, None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def free_ports(n=1):
    """n TCP ports free on 127.0.0.1 now (for process groups' stores and rendezvous)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def describe(proc):
    """Text for assertion messages about a finished subprocess."""
    return (
        f"exit status {proc.returncode}\n--- stdout ---\n{proc.stdout}"
        f"\n--- stderr ---\n{proc.stderr}"
    )


def on_two_devices(test):
    """Runs `test` here when two vkml devices exist; otherwise in a fresh pytest with
    TORCH_VKML_VISIBLE_DEVICES=0,0, where the one device listed twice is two logical
    devices, each with its own VkDevice, queue and memory (so two-device code is tested
    on lavapipe instead of skipped)."""

    def run():
        if torch_vkml.device_count() >= 2:
            return test()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"{test.__code__.co_filename}::{test.__name__}",
            ],
            env=dict(os.environ, TORCH_VKML_VISIBLE_DEVICES="0,0"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0 and "1 passed" in proc.stdout, (
            proc.stdout[-4000:] + proc.stderr[-4000:]
        )

    run.__name__ = test.__name__
    return run
