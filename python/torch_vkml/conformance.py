"""OpInfo conformance sweep: every op of PyTorch's OpInfo database on vkml against the CPU.

    python -m torch_vkml.conformance [--ops PATTERNS] [--dtypes LIST] [--skip-grad]
        [--json PATH] [--markdown PATH] [--limit-samples N] [--timeout S] [--jobs N]

For each OpInfo entry and dtype the CPU supports, the first N sample inputs run on the CPU
and on vkml (inputs copied with their exact strides and storage offsets) and the results
are compared with ``torch.testing.assert_close`` (dtype, shape and values; NaN equals
NaN). Ops that support autograd also get a float32 gradient check (column ``grad``): the
outputs are back-propagated with the same random cotangent on both devices and the
input gradients compared (its fallbacks are those of the backward; tolerances are ten times
the forward's). A floating result that differs from the CPU's still matches when it
agrees with the CPU's float64 computation rounded to that dtype: some CPU kernels round
intermediates (16-bit transposed convolutions per kernel tap; float32 digamma takes
tan(pi * x) of a rounded product near its poles), and being closer to the exact answer is
not wrong. Each (op, dtype) gets one status, the worst over its samples:

    native     all results match and no aten op ran on the CPU fallback
    fallback   all results match, but some aten op fell back (recorded, with counts)
    wrong      a result differs from the CPU (wrong dtype, shape, device or values)
    error      vkml raised where the CPU did not (the message head is recorded)
    crash      the worker process died during this (op, dtype)
    timeout    it ran past --timeout seconds (the worker is killed and replaced)
    skip       no sample ran on the CPU (or, for grad, none had a differentiable output)

Units of work run in worker subprocesses (``--jobs``, default 1) so that a hard crash
or a hang costs one (op, dtype), not the sweep; ``--jobs 0`` runs in this process.
Ops whose outputs OpInfo calls non-deterministic or undefined (random sampling, empty,
out-of-range casts) are compared on dtype, shape and device only. The summary counts
three families apart (see ``family``): the FFTs, the linear-algebra decompositions and
solvers, and every other op; CUDA-only entries are not measured (``is_measured``).
"""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

DTYPE_NAMES = ["float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool", "complex64"]
# Swept only when named in --dtypes (float64 needs it of the device; docs/conformance.md keeps
# the default set).
EXTRA_DTYPE_NAMES = ["float64", "complex128", "int16", "int8"]
GRAD = "grad"  # the float32 gradient check, reported as a column of its own
COLUMNS = [*DTYPE_NAMES, *EXTRA_DTYPE_NAMES, GRAD]

# Worst first: the status of a unit is the worst status over its samples.
STATUSES = ["crash", "timeout", "wrong", "error", "fallback", "native", "skip"]
_SEVERITY = {"skip": 0, "native": 1, "fallback": 2, "error": 3, "wrong": 4}

# The families the summary counts apart: FFTs (stft/istft included), and linear-algebra
# decompositions and solvers (svd, qr, cholesky, lu, solve, det, eig, inverse, pinv,
# matrix_*, tensorsolve, ...; norm.nuc is an SVD). Everything else is "ops".
_FFT = re.compile(r"^fft\.|^i?stft$")
_LINALG = re.compile(
    r"^linalg\.|svd|pca_lowrank|^qr$|^geqrf$|^ormqr$|cholesky|^lu(_|$)|(^|[._])solve"
    r"|det$|eig|inverse|pinv|^matrix_|^norm\.nuc$"
)
FAMILIES = {
    "ops": "every op but the FFTs and linear algebra",
    "fft": "torch.fft, stft, istft",
    "linalg": "linear-algebra decompositions and solvers",
}
# CUDA-only entries (the CPU raises), though OpInfo lists CPU dtypes.
_UNMEASURED = re.compile(r"^jiterator_")

# Positional arguments PyTorch requires on the CPU whatever the device of the input.
_CPU_ARGS = {"tensor_split": {0}}

# Outputs OpInfo does not list as non-deterministic for test_compare_cpu but which are.
_RANDOM_OPS = {
    "rand",
    "randn",
    "randint",
    "nn.functional.alpha_dropout",
    "normal.number_mean",
    "empty_strided",
}

# Default tolerances (atol, rtol) by dtype; OpInfo's own overrides widen them.
DEFAULT_TOLERANCE = {
    "float32": (1e-5, 1.3e-5),
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-2, 1.6e-2),
    "complex64": (1e-5, 1.3e-5),  # float32 parts
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
}
# Gradients compound the forward's rounding (e.g. atanh' = 1/(1-x^2) near |x| = 1).
GRAD_TOLERANCE_FACTOR = 10.0
# Matrix functions whose float32 error bounds are normwise: two correct algorithms differ
# by ~1e-6 of the result's largest element (OpInfo's matrix_exp samples reach 1e5 with
# entries near 1), which no elementwise tolerance holds unless both run the same
# algorithm (as CUDA runs ATen's). Their absolute tolerance is scaled by that element.
NORMWISE = {"matrix_exp", "linalg.matrix_exp"}
# Tests whose toleranceOverride describes the op's own precision or a device/CPU difference.
_TOLERANCE_TESTS = {None, "test_compare_cpu", "test_reference_testing"}

MESSAGE_CHARS = 300


def op_key(op) -> str:
    """``name`` or ``name.variant_test_name``: unique within op_db."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def is_measured(key: str) -> bool:
    """Whether an entry counts in the summary at all."""
    return not _UNMEASURED.search(key)


def family(key: str) -> str:
    """The summary family of an entry: "fft", "linalg" or "ops" (``FAMILIES``)."""
    if _FFT.search(key):
        return "fft"
    return "linalg" if _LINALG.search(key) else "ops"


def _dtype(name):
    import torch

    return getattr(torch, name)


# --------------------------------------------------------------------------
# One unit: (op, dtype) on CPU and vkml
# --------------------------------------------------------------------------


@dataclass
class Result:
    op: str
    dtype: str
    status: str
    measured: bool = True
    samples: dict = field(default_factory=dict)  # sample status -> count
    fallbacks: dict = field(default_factory=dict)  # aten op -> calls on the CPU fallback
    message: str = ""  # first wrong/error message (or why skipped / crashed)
    note: str = ""  # e.g. why values were not compared
    seconds: float = 0.0


class _Mismatch(Exception):
    pass


def _head(text: str) -> str:
    text = " ".join(str(text).split())
    return text[:MESSAGE_CHARS]


def _tolerance(op, dtype_name, grad=False):
    """``tol(result_dtype) -> (atol, rtol)`` for an op run in ``dtype_name``.

    Keyed by the dtype of each result (exp of an int64 tensor is float32: float32
    tolerances; integer and bool results are exact), widened by OpInfo's own
    toleranceOverride for the input dtype; ``None`` stands for a Python float result.
    """
    import torch
    from torch.testing._internal.common_device_type import toleranceOverride
    from torch.testing._internal.opinfo.core import DecorateInfo

    dtype = _dtype(dtype_name)
    floating = dtype.is_floating_point or dtype.is_complex
    extra_atol = extra_rtol = 0.0
    for info in op.decorators if floating else ():
        if isinstance(info, DecorateInfo):
            if info.test_name not in _TOLERANCE_TESTS or not info.active_if:
                continue
            if info.device_type not in (None, "cpu", "cuda"):
                continue
            if info.dtypes is not None and dtype not in info.dtypes:
                continue
            decorators = info.decorators
        else:
            decorators = [info]
        for deco in decorators:
            if isinstance(deco, toleranceOverride) and dtype in deco.d:
                extra_atol = max(extra_atol, deco.d[dtype].atol)
                extra_rtol = max(extra_rtol, deco.d[dtype].rtol)
    factor = GRAD_TOLERANCE_FACTOR if grad else 1.0

    def tol(result_dtype):
        if result_dtype is None:
            result_dtype = dtype if floating else torch.float32
        if not (result_dtype.is_floating_point or result_dtype.is_complex):
            return 0.0, 0.0
        name = str(result_dtype).removeprefix("torch.")
        atol, rtol = DEFAULT_TOLERANCE.get(name, DEFAULT_TOLERANCE["float32"])
        return factor * max(atol, extra_atol), factor * max(rtol, extra_rtol)

    tol.normwise = op.name in NORMWISE
    return tol


def _values_undefined(op, dtype_name) -> str:
    """Why values are not comparable (OpInfo skips test_compare_cpu for it), or ''."""
    from torch.testing._internal.opinfo.core import DecorateInfo

    if op_key(op) in _RANDOM_OPS:
        return "random output: values not compared"
    dtype = _dtype(dtype_name)
    for info in op.decorators:
        if not isinstance(info, DecorateInfo) or info.test_name != "test_compare_cpu":
            continue
        if not info.active_if or info.device_type not in (None, "cpu", "cuda"):
            continue
        if info.dtypes is not None and dtype not in info.dtypes:
            continue
        for deco in info.decorators:
            if not getattr(deco, "__qualname__", "").startswith("skip."):
                continue
            reason = str(deco.__closure__[0].cell_contents) if deco.__closure__ else ""
            if "determinis" in reason or "undefined" in reason.lower():
                return f"values not compared ({reason})"
    return ""


# Ops whose returned indices PyTorch leaves unspecified among equal values: name ->
# (position of dim in args, position of keepdim in args or None if the output keeps the
# reduced dim). Mismatching indices there pass if they select the same values.
_TIE_INDEX_OPS = {
    "sort": (0, None),
    "argsort": (0, None),
    "topk": (1, None),
    "kthvalue": (1, 2),
    "mode": (0, 1),
    "median": (0, 1),
    "nanmedian": (0, 1),
}


def _index_ties_ok(op, sample, expected, actual):
    """Whether differing indices of a tie-ambiguous op select the CPU's values."""
    import torch

    spec = _TIE_INDEX_OPS.get(op.name)
    x = sample.input
    if spec is None or not isinstance(x, torch.Tensor) or x.dim() == 0:
        return False
    if sample.kwargs.get("stable") or x.unique().numel() == x.numel():
        return False  # stable sort or no equal values: the indices are defined
    dim_pos, keepdim_pos = spec

    def arg(pos, name, default):
        if name in sample.kwargs:
            return sample.kwargs[name]
        return sample.args[pos] if pos is not None and len(sample.args) > pos else default

    dim = arg(dim_pos, "dim", -1)
    keepdim = True if keepdim_pos is None else arg(keepdim_pos, "keepdim", False)
    if isinstance(expected, torch.Tensor):  # argsort: indices only
        exp_idx, act_idx = expected, actual
        values = torch.take_along_dim(x.detach(), exp_idx, dim)
    elif isinstance(expected, (tuple, list)) and len(expected) == 2:
        values, exp_idx = expected[0].detach(), expected[1]
        act_idx = actual[1]
        try:  # the values themselves must match
            torch.testing.assert_close(actual[0].detach().cpu(), values, equal_nan=True)
        except AssertionError:
            return False
    else:
        return False
    if not isinstance(act_idx, torch.Tensor) or act_idx.dtype != exp_idx.dtype:
        return False
    if act_idx.shape != exp_idx.shape:
        return False
    idx = act_idx.cpu() if keepdim else act_idx.cpu().unsqueeze(dim)
    try:
        got = torch.take_along_dim(x.detach(), idx, dim)
    except (RuntimeError, IndexError):
        return False  # out-of-range index
    if not keepdim:
        got = got.squeeze(dim)
    return torch.equal(got, values) or bool(
        torch.isclose(got, values, rtol=0, atol=0, equal_nan=True).all()
    )


class _ToVkml:
    """Copies sample arguments to vkml with the same sizes, strides and storage offset.

    A CPU tensor's whole storage goes over once (memoised, so inputs that alias on the
    CPU alias on vkml too) and the copy is viewed with the CPU tensor's geometry; a
    plain ``.to()`` would make non-dense inputs contiguous and test a different layout.
    Devices given as arguments ("cpu" in factory functions) become vkml.
    """

    def __init__(self):
        import torch

        self.torch = torch
        self.storages = {}

    def tensor(self, t):
        torch = self.torch
        t_data = t.detach()
        if t.layout != torch.strided or t.is_quantized:
            copy = t_data.to("vkml")
        else:
            storage = t_data.untyped_storage()
            key = (storage.data_ptr(), storage.nbytes(), t.dtype)
            flat = self.storages.get(key)
            if flat is None:
                numel = storage.nbytes() // t.element_size()
                whole = t_data.new_empty(0).set_(storage, 0, (numel,), (1,))
                flat = whole.to("vkml")
                self.storages[key] = flat
            copy = flat.as_strided(t.size(), t.stride(), t.storage_offset())
            # The storage holds the stored values: the lazy bits go on the view again.
            if t.is_conj():
                copy = copy.conj()
            if t.is_neg():
                copy = torch._neg_view(copy)
        if t.requires_grad:
            copy.requires_grad_()
        return copy

    def __call__(self, value):
        torch = self.torch
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, torch.device):
            return torch.device("vkml") if value.type == "cpu" else value
        if isinstance(value, str) and (value == "cpu" or value.startswith("cpu:")):
            return "vkml"  # only ever a device: "cpu" is no other argument's value
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, tuple):
            items = [self(v) for v in value]
            return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value


def _flatten(value, out):
    import torch

    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _flatten(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flatten(v, out)
    return out


def _compare(actual, expected, tol, values, where="output"):
    """Raise _Mismatch if vkml's ``actual`` differs from the CPU's ``expected``.

    ``tol(result_dtype)`` gives (atol, rtol); ``values=False`` compares metadata only.
    """
    import torch

    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise _Mismatch(f"{where}: {type(actual).__name__}, expected a tensor")
        if expected.device.type == "cpu" and actual.device.type != "vkml":
            raise _Mismatch(f"{where}: result is on {actual.device}, expected vkml")
        if actual.dtype != expected.dtype:
            raise _Mismatch(f"{where}: dtype {actual.dtype} != CPU {expected.dtype}")
        if actual.shape != expected.shape:
            raise _Mismatch(f"{where}: shape {tuple(actual.shape)} != CPU {tuple(expected.shape)}")
        if not values:
            return
        atol, rtol = tol(expected.dtype)
        if getattr(tol, "normwise", False) and expected.numel():
            atol *= max(1.0, float(expected.detach().abs().nan_to_num(0, 0, 0).max()))
        try:
            torch.testing.assert_close(
                actual.detach().cpu(),
                expected.detach(),
                atol=atol,
                rtol=rtol,
                equal_nan=True,
                check_device=False,
                check_layout=False,
            )
        except AssertionError as e:
            raise _Mismatch(f"{where}: {_head(e)}") from None
    elif isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise _Mismatch(f"{where}: {type(actual).__name__} does not match CPU structure")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, tol, values, f"{where}[{i}]")
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or actual.keys() != expected.keys():
            raise _Mismatch(f"{where}: keys differ from CPU")
        for k in expected:
            _compare(actual[k], expected[k], tol, values, f"{where}[{k!r}]")
    elif isinstance(expected, (bool, int, float, complex)) and not isinstance(actual, str):
        if not values:
            return
        atol, rtol = tol(None) if isinstance(expected, (float, complex)) else (0.0, 0.0)
        try:
            torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True)
        except (AssertionError, TypeError) as e:
            raise _Mismatch(f"{where}: {_head(e)}") from None
    elif actual != expected:
        raise _Mismatch(f"{where}: {actual!r} != CPU {expected!r}")


def _to_float64(value, dtype):
    """``value`` with every ``dtype`` tensor in it converted to float64 (for the reference)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().to(torch.float64) if value.dtype == dtype else value
    if isinstance(value, list):
        return [_to_float64(v, dtype) for v in value]
    if isinstance(value, tuple):
        items = [_to_float64(v, dtype) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: _to_float64(v, dtype) for k, v in value.items()}
    if isinstance(value, torch.dtype) and value == dtype:
        return torch.float64
    return value


def _from_float64(value, dtype):
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.dtype == torch.float64 else value
    if isinstance(value, (list, tuple)):
        items = [_from_float64(v, dtype) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return {k: _from_float64(v, dtype) for k, v in value.items()}
    return value


def _matches_float64_reference(op, sample, dtype_name, actual, tol, values):
    """True when a float result equals the CPU's float64 result rounded to its dtype."""
    if dtype_name not in ("float32", "float16", "bfloat16") or not values:
        return False
    dtype = _dtype(dtype_name)
    try:
        ref = op(
            _to_float64(sample.input, dtype),
            *_to_float64(tuple(sample.args), dtype),
            **_to_float64(sample.kwargs, dtype),
        )
        ref = sample.output_process_fn_grad(_from_float64(ref, dtype))
        _compare(actual, ref, tol, values)
    except Exception:  # a mismatch, or an op without float64 support
        return False
    return True


def _run_sample(op, sample, dtype_name, grad, tol, values, cotangent_gen):
    """One sample: returns (status, fallbacks Counter, message)."""
    import torch

    import torch_vkml

    vk = _ToVkml()
    try:
        vk_input = vk(sample.input)
        cpu_args = _CPU_ARGS.get(op_key(op), ())
        vk_args = tuple(a if i in cpu_args else vk(a) for i, a in enumerate(sample.args))
        vk_kwargs = vk(sample.kwargs)
    except Exception as e:
        return "error", Counter(), f"copying the inputs to vkml: {type(e).__name__}: {_head(e)}"

    # CPU first: a sample the CPU rejects is not a valid sample.
    try:
        expected = op(sample.input, *sample.args, **sample.kwargs)
    except Exception as e:
        return "skip", Counter(), f"CPU raised {type(e).__name__}: {_head(e)}"

    torch_vkml.reset_fallback_counts()
    try:
        actual = op(vk_input, *vk_args, **vk_kwargs)
        torch_vkml.synchronize()
    except Exception as e:
        return "error", Counter(torch_vkml.fallback_counts()), f"{type(e).__name__}: {_head(e)}"
    fallbacks = Counter(torch_vkml.fallback_counts())

    try:
        expected_p = sample.output_process_fn_grad(expected)
        actual_p = sample.output_process_fn_grad(actual)
    except Exception as e:
        return "error", fallbacks, f"output_process_fn_grad: {type(e).__name__}: {_head(e)}"
    try:
        _compare(actual_p, expected_p, tol, values)
    except _Mismatch as e:
        if not _index_ties_ok(op, sample, expected_p, actual_p) and not (
            _matches_float64_reference(op, sample, dtype_name, actual_p, tol, values)
        ):
            return "wrong", fallbacks, ("forward " if grad else "") + str(e)

    if not grad:
        return ("fallback" if fallbacks else "native"), fallbacks, ""

    # Gradients: the same random cotangent on every floating output that requires grad.
    cpu_outs = _flatten(expected_p, [])
    vk_outs = _flatten(actual_p, [])
    if len(cpu_outs) != len(vk_outs):
        return "wrong", Counter(), "number of outputs differs from CPU"
    pairs = [
        (c, v)
        for c, v in zip(cpu_outs, vk_outs, strict=True)
        if c.requires_grad and (c.dtype.is_floating_point or c.dtype.is_complex)
    ]
    cpu_ins = _flatten((sample.input, sample.args, sample.kwargs), [])
    vk_ins = _flatten((vk_input, vk_args, vk_kwargs), [])
    wanted = [i for i, t in enumerate(cpu_ins) if t.requires_grad]
    if not pairs or not wanted:
        return "skip", Counter(), "no differentiable output or input"
    if any(not v.requires_grad for _, v in pairs):
        return "wrong", Counter(), "a vkml output does not require grad"
    cotangents = [torch.randn(c.shape, generator=cotangent_gen, dtype=c.dtype) for c, _ in pairs]
    try:
        cpu_grads = torch.autograd.grad(
            [c for c, _ in pairs], [cpu_ins[i] for i in wanted], cotangents, allow_unused=True
        )
    except Exception as e:
        return "skip", Counter(), f"CPU backward raised {type(e).__name__}: {_head(e)}"
    torch_vkml.reset_fallback_counts()
    try:
        vk_grads = torch.autograd.grad(
            [v for _, v in pairs],
            [vk_ins[i] for i in wanted],
            [t.to("vkml") for t in cotangents],
            allow_unused=True,
        )
        torch_vkml.synchronize()
    except Exception as e:
        return "error", Counter(torch_vkml.fallback_counts()), f"{type(e).__name__}: {_head(e)}"
    fallbacks = Counter(torch_vkml.fallback_counts())
    for i, c, v in zip(wanted, cpu_grads, vk_grads, strict=True):
        if c is None and v is None:
            continue
        if c is None or v is None:
            return "wrong", fallbacks, f"grad of input {i}: None on one device only"
        try:
            _compare(v, c, tol, values, where=f"grad of input {i}")
        except _Mismatch as e:
            return "wrong", fallbacks, str(e)
    return ("fallback" if fallbacks else "native"), fallbacks, ""


def run_unit(op, column: str, limit_samples: int = 4) -> Result:
    """Run one (op, dtype-or-grad) unit in this process."""
    import torch

    import torch_vkml

    start = time.perf_counter()
    grad = column == GRAD
    dtype_name = "float32" if grad else column
    result = Result(op_key(op), column, "skip", measured=is_measured(op_key(op)))
    tol = _tolerance(op, dtype_name, grad)
    undefined = _values_undefined(op, dtype_name)
    result.note = undefined
    counts, fallbacks = Counter(), Counter()
    worst, message = "skip", ""
    try:
        torch.manual_seed(0)
        samples = op.sample_inputs("cpu", _dtype(dtype_name), requires_grad=grad)
        cotangent_gen = torch.Generator().manual_seed(1234)
        for sample in itertools.islice(samples, limit_samples):
            status, fb, msg = _run_sample(
                op, sample, dtype_name, grad, tol, not undefined, cotangent_gen
            )
            counts[status] += 1
            fallbacks.update(fb)
            if _SEVERITY[status] > _SEVERITY[worst]:
                worst = status
                if msg and status != "fallback":
                    message = msg
            elif not message and msg and status == "skip":
                message = msg
    except Exception as e:  # generating the samples failed (after `counts` ran)
        if _SEVERITY[worst] < _SEVERITY["error"]:
            worst, message = "error", f"sample inputs: {type(e).__name__}: {_head(e)}"
    if torch_vkml.is_available():
        torch_vkml.synchronize()
    validation = torch_vkml.validation_messages()
    if validation:
        worst = "error" if _SEVERITY[worst] < _SEVERITY["error"] else worst
        message = message or f"Vulkan validation: {_head(validation[0])}"
    result.status = worst
    result.samples = dict(counts)
    result.fallbacks = dict(sorted(fallbacks.items()))
    result.message = message if worst not in ("native", "fallback") else ""
    if worst == "skip":
        result.message = message
    result.seconds = round(time.perf_counter() - start, 3)
    return result


# --------------------------------------------------------------------------
# Op selection
# --------------------------------------------------------------------------


def load_op_db():
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


def supported_columns(op, columns):
    """The requested columns this op supports on the CPU."""
    dtypes = op.supported_dtypes("cpu")
    out = [c for c in columns if c != GRAD and _dtype(c) in dtypes]
    if GRAD in columns and op.supports_autograd:
        import torch

        if torch.float32 in op.supported_backward_dtypes("cpu"):
            out.append(GRAD)
    return out


def select_ops(op_db, patterns=None):
    """Entries whose key or name matches one of the fnmatch patterns (all if none)."""
    if not patterns:
        return list(op_db)
    return [
        op
        for op in op_db
        if any(
            fnmatch.fnmatchcase(op_key(op), p) or fnmatch.fnmatchcase(op.name, p) for p in patterns
        )
    ]


def plan(ops, columns):
    """[(op, column)] units to run, op-major."""
    return [(op, c) for op in ops for c in supported_columns(op, columns)]


# --------------------------------------------------------------------------
# Worker processes
# --------------------------------------------------------------------------


def _worker_main(limit_samples: int) -> None:
    """Serve units read from stdin ("key<TAB>column"), one JSON result line each."""
    # Results travel on a private copy of stdout; stray prints of ops go to stderr.
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    os.environ.setdefault("TORCH_VKML_FALLBACK", "silent")
    import warnings

    warnings.simplefilter("ignore")
    import torch  # noqa: F401

    import torch_vkml  # noqa: F401

    ops = {op_key(op): op for op in load_op_db()}
    channel.write("ready\n")
    for line in sys.stdin:
        key, column = line.rstrip("\n").split("\t")
        fault = os.environ.get("_TORCH_VKML_CONFORMANCE_FAULT", "")  # test hook
        if f"{key}:crash" in fault.split(","):
            os.abort()
        if f"{key}:hang" in fault.split(","):
            time.sleep(3600)
        result = run_unit(ops[key], column, limit_samples)
        channel.write(json.dumps(asdict(result)) + "\n")


class _Worker:
    def __init__(self, limit_samples, log_dir, index):
        env = dict(os.environ)
        env.setdefault("TORCH_VKML_FALLBACK", "silent")
        env.setdefault("LP_NUM_THREADS", "0")
        self.log_path = os.path.join(log_dir, f"worker{index}.log")
        self.log = open(self.log_path, "ab")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch_vkml.conformance",
                "--worker",
                "--limit-samples",
                str(limit_samples),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            text=True,
            bufsize=1,
        )
        self.lines = queue.Queue()
        self.ready = False
        self.unit = None  # (key, column) in flight
        self.started = time.monotonic()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, key, column):
        self.unit = (key, column)
        self.started = time.monotonic()
        self.proc.stdin.write(f"{key}\t{column}\n")
        self.proc.stdin.flush()

    def stderr_tail(self):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 2000))
                lines = [ln for ln in f.read().decode(errors="replace").splitlines() if ln]
            return lines[-1] if lines else ""
        except OSError:
            return ""

    def close(self, kill=False):
        if kill and self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _death(proc):
    # Its output pipe closed, so it is exiting; the exit status can lag the EOF (a core
    # dump, a slow teardown), so wait for it a little.
    try:
        code = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        return "worker stopped answering"
    if code < 0:
        try:
            return f"worker killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"worker killed by signal {-code}"
    return f"worker exited with status {code}"


def run_units(
    units, *, jobs=1, timeout=120.0, limit_samples=4, on_result=None, startup_timeout=600.0
):
    """Run [(op, column)] units; returns their Results in plan order.

    ``jobs=0`` runs them in this process (no protection against crashes or hangs).
    Otherwise ``jobs`` worker subprocesses take units one at a time; a worker that
    dies or exceeds ``timeout`` seconds on a unit is replaced and the unit recorded as
    crash / timeout.
    """
    results = {}

    def record(result):
        results[(result.op, result.dtype)] = result
        if on_result:
            on_result(result)

    if jobs == 0:
        for op, column in units:
            record(run_unit(op, column, limit_samples))
        return [results[(op_key(op), c)] for op, c in units]

    measured = {op_key(op): is_measured(op_key(op)) for op, _ in units}
    pending = [(op_key(op), c) for op, c in units]
    pending.reverse()  # pop() from the end keeps plan order
    log_dir = tempfile.mkdtemp(prefix="vkml-conformance-")
    workers = []
    serial = itertools.count()
    try:
        while pending or any(w.unit for w in workers):
            while len(workers) < jobs and pending:
                workers.append(_Worker(limit_samples, log_dir, next(serial)))
            for w in list(workers):
                if w.ready and w.unit is None and pending:
                    unit = pending.pop()
                    try:
                        w.send(*unit)
                    except OSError:  # it died idle: the reader reports it, the unit waits
                        w.unit = None
                        pending.append(unit)
            progressed = False
            for w in list(workers):
                try:
                    line = w.lines.get_nowait()
                except queue.Empty:
                    line = ""
                if line is None:
                    # The worker died: blame the unit in flight (if any).
                    why = _death(w.proc)
                    tail = w.stderr_tail()
                    w.close(kill=True)
                    workers.remove(w)
                    if w.unit:
                        key, column = w.unit
                        record(
                            Result(
                                key,
                                column,
                                "crash",
                                measured=measured[key],
                                message=_head(f"{why}; {tail}"),
                                seconds=round(time.monotonic() - w.started, 3),
                            )
                        )
                    elif not w.ready:
                        raise RuntimeError(f"conformance worker failed to start: {why}; {tail}")
                    progressed = True
                    continue
                if line == "ready\n":
                    w.ready = True
                    progressed = True
                elif line:
                    data = json.loads(line)
                    w.unit = None
                    record(Result(**data))
                    progressed = True
                elif w.unit and time.monotonic() - w.started > timeout:
                    key, column = w.unit
                    w.close(kill=True)
                    workers.remove(w)
                    record(
                        Result(
                            key,
                            column,
                            "timeout",
                            measured=measured[key],
                            message=f"no result after {timeout:g} s",
                            seconds=round(time.monotonic() - w.started, 3),
                        )
                    )
                    progressed = True
                elif not w.ready and time.monotonic() - w.started > startup_timeout:
                    w.close(kill=True)
                    raise RuntimeError("conformance worker did not start in time")
            if not progressed:
                time.sleep(0.02)
    finally:
        for w in workers:
            w.close(kill=True)
    return [results[(op_key(op), c)] for op, c in units]


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------


def summarize(results, of_family="ops"):
    """{column: Counter(status)} over the measured entries of one family."""
    summary = {}
    for r in results:
        if r.measured and family(r.op) == of_family:
            summary.setdefault(r.dtype, Counter())[r.status] += 1
    return {c: summary[c] for c in COLUMNS if c in summary}


def summary_lines(results):
    """Each family's counts per column, under a line naming the family."""
    lines = []
    for name, what in FAMILIES.items():
        counts_by_column = summarize(results, name)
        if not counts_by_column:
            continue
        if lines:
            lines.append("")
        lines.append(f"{name} ({what}):")
        for column, counts in counts_by_column.items():
            total = sum(counts.values())
            native = counts["native"]
            lines.append(
                f"  {column}: {native}/{total} native ({100.0 * native / max(total, 1):.1f}%), "
                f"{counts['fallback']} fallback, {counts['wrong']} wrong, "
                f"{counts['error']} error, {counts['crash']} crash, "
                f"{counts['timeout']} timeout, {counts['skip']} skip"
            )
    return lines


_CELL = {
    "native": "✅",
    "fallback": "🟡",
    "wrong": "❌ wrong",
    "error": "💥 error",
    "crash": "☠️ crash",
    "timeout": "⏱️ timeout",
    "skip": "skip",
}


def _meta(args_text):
    import torch

    import torch_vkml

    try:
        device = torch_vkml.device_name()
    except Exception as e:  # no device: still report why
        device = f"unavailable ({_head(e)})"
    return {
        "command": args_text,
        "torch": torch.__version__,
        "torch_vkml": torch_vkml.__version__,
        "device": device,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def markdown(results, meta):
    columns = [c for c in COLUMNS if any(r.dtype == c for r in results)]
    by_op = {}
    for r in results:
        by_op.setdefault(r.op, {})[r.dtype] = r
    out = [
        "# OpInfo conformance",
        "",
        "Generated by `python -m torch_vkml.conformance` (do not edit): every entry of",
        "PyTorch's OpInfo database, its first sample inputs on vkml against the CPU.",
        f"Command: `{meta['command']}`; torch {meta['torch']}, device {meta['device']}, "
        f"{meta['date']}.",
        "",
        "✅ native: matches the CPU with no CPU fallback; 🟡 fallback: matches, but some",
        "aten op ran on the CPU fallback (listed below); ❌ wrong: differs from the CPU;",
        "💥 error: raised where the CPU did not; ☠️ crash / ⏱️ timeout: the worker died or",
        "hung; skip: no sample ran on the CPU; blank: dtype not supported by the op on CPU.",
        "`grad` is the float32 gradient check (its fallbacks are those of the backward).",
        "",
        "## Summary",
        "",
        "```",
        *summary_lines(results),
        "```",
        "",
        "## Per op",
        "",
        "| op | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for key, cells in by_op.items():
        name = key if is_measured(key) else f"{key} (not measured)"
        row = [_CELL[cells[c].status] if c in cells else "" for c in columns]
        out.append(f"| `{name}` | " + " | ".join(row) + " |")
    out += ["", "## Details", ""]
    for key, cells in by_op.items():
        # columns with the same status, fallbacks and message share one entry
        groups = {}
        for c in columns:
            r = cells.get(c)
            if r is None or r.status == "native":
                continue
            text = r.status
            if r.fallbacks:
                text += " (" + ", ".join(r.fallbacks) + ")"
            if r.message and r.status != "skip":
                text += " — " + r.message.replace("|", "\\|")
            groups.setdefault(text, []).append(c)
        if groups:
            notes = [f"{', '.join(cs)}: {text}" for text, cs in groups.items()]
            out.append(f"- `{key}`: " + "; ".join(notes))
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def _parse(argv):
    p = argparse.ArgumentParser(
        prog="python -m torch_vkml.conformance",
        description="Run PyTorch's OpInfo samples on vkml and on the CPU and compare.",
    )
    p.add_argument("--ops", help="comma-separated fnmatch patterns on op names (default: all)")
    p.add_argument(
        "--dtypes",
        default=",".join(DTYPE_NAMES),
        help=f"comma-separated subset of {','.join(DTYPE_NAMES + EXTRA_DTYPE_NAMES)} "
        f"(default: {','.join(DTYPE_NAMES)})",
    )
    p.add_argument("--skip-grad", action="store_true", help="no float32 gradient checks")
    p.add_argument("--json", metavar="PATH", help="write all results as JSON")
    p.add_argument("--markdown", metavar="PATH", help="write the markdown report")
    p.add_argument(
        "--limit-samples",
        type=int,
        default=4,
        metavar="N",
        help="sample inputs per (op, dtype) (default 4)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds per (op, dtype) before the worker is killed (default 120)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="worker subprocesses (default 1; 0 = in this process, unprotected)",
    )
    p.add_argument("--quiet", action="store_true", help="no per-op progress lines")
    p.add_argument(
        "--from-json",
        metavar="PATH",
        help="run nothing: rewrite the summary / --markdown from an earlier --json",
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = _parse(argv)
    if args.worker:
        _worker_main(args.limit_samples)
        return 0
    if args.from_json:
        with open(args.from_json) as f:
            data = json.load(f)
        results = [Result(**r) for r in data["results"]]
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(markdown(results, data["meta"]))
        for line in summary_lines(results):
            print(line)
        return 0
    columns = [c.strip() for c in args.dtypes.split(",") if c.strip()]
    unknown = [c for c in columns if c not in DTYPE_NAMES + EXTRA_DTYPE_NAMES]
    if unknown:
        raise SystemExit(f"unknown dtype(s): {', '.join(unknown)}")
    if not args.skip_grad:
        columns.append(GRAD)
    patterns = [p.strip() for p in args.ops.split(",")] if args.ops else None
    os.environ.setdefault("TORCH_VKML_FALLBACK", "silent")

    import torch_vkml

    ops = select_ops(load_op_db(), patterns)
    units = plan(ops, columns)
    if not units:
        raise SystemExit("no (op, dtype) to run: check --ops and --dtypes")
    print(
        f"{len(ops)} ops, {len(units)} (op, dtype) units on {torch_vkml.device_name()}", flush=True
    )
    start = time.monotonic()
    done = [0]

    def progress(r):
        done[0] += 1
        if not args.quiet:
            extra = f" [{', '.join(r.fallbacks)}]" if r.fallbacks else ""
            extra += f" {r.message}" if r.status in ("wrong", "error", "crash", "timeout") else ""
            print(f"[{done[0]}/{len(units)}] {r.op} {r.dtype}: {r.status}{extra}"[:240], flush=True)

    results = run_units(
        units,
        jobs=args.jobs,
        timeout=args.timeout,
        limit_samples=args.limit_samples,
        on_result=progress,
    )
    elapsed = time.monotonic() - start
    command = "python -m torch_vkml.conformance " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:])
    )
    meta = _meta(command.strip())
    meta["seconds"] = round(elapsed, 1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "meta": meta,
                    "summary": {c: dict(v) for c, v in summarize(results).items()},
                    "families": {
                        name: {c: dict(v) for c, v in summarize(results, name).items()}
                        for name in FAMILIES
                    },
                    "results": [asdict(r) for r in results],
                },
                f,
                indent=1,
            )
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(results, meta))
    print(f"done in {elapsed:.0f} s:")
    for line in summary_lines(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
