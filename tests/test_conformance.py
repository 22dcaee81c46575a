"""The OpInfo conformance harness (python -m torch_vkml.conformance) classifies correctly.

Native ops must come out as native passes, an op without a vkml kernel as a fallback
pass naming the aten op that fell back, a vkml result that differs from the CPU as
wrong, a vkml-only exception as error, and a worker that dies or hangs as crash /
timeout without stopping the sweep. No module-wide ``no_fallback`` fixture: the harness
measures fallbacks itself, and one test needs an op that falls back.
"""

import json
import os
import subprocess
import sys

import pytest
import torch
from conftest import LONG_TESTS
from torch.testing._internal.common_dtype import floating_types
from torch.testing._internal.opinfo.core import OpInfo, SampleInput

from torch_vkml import conformance

# Ops with native float32 kernels today, forward and (where differentiable) backward.
NATIVE_OPS = [
    "add",
    "mul",
    "sub",
    "div.no_rounding_mode",
    "sum",
    "mean",
    "mm",
    "bmm",
    "addmm",
    "softmax",
    "log_softmax",
    "nn.functional.relu",
    "nn.functional.linear",
    "where",
    "clamp",
    "exp",
    "tanh",
    "sigmoid",
    "amax",
    "argmax",
    "eq",
    "cat",
    "transpose",
    "nn.functional.ctc_loss",
]
NATIVE_GRAD_OPS = [
    "add",
    "mul",
    "sum",
    "mm",
    "softmax",
    "nn.functional.relu",
    "where",
    "exp",
    "nn.functional.ctc_loss",
]

# The general eigendecomposition (aten::linalg_eig) has no vkml kernel: it runs on the
# fallback.
FALLBACK_OP = "linalg.eig"
FALLBACK_ATEN = "aten::linalg_eig"


@pytest.fixture(scope="module")
def op_db():
    return {conformance.op_key(op): op for op in conformance.load_op_db()}


def _run(ops, column, limit=3):
    return conformance.run_units([(op, column) for op in ops], jobs=0, limit_samples=limit)


def test_native_ops_are_native_passes(op_db):
    results = _run([op_db[k] for k in NATIVE_OPS], "float32")
    assert [r.op for r in results] == NATIVE_OPS
    wrong = [(r.op, r.message) for r in results if r.status == "wrong"]
    assert wrong == [], wrong
    not_native = [(r.op, r.status, r.fallbacks, r.message) for r in results if r.status != "native"]
    assert not_native == [], not_native
    assert all(r.samples.get("native", 0) >= 1 for r in results)
    assert all(r.measured for r in results)


def test_native_grads_are_native_passes(op_db):
    results = _run([op_db[k] for k in NATIVE_GRAD_OPS], conformance.GRAD)
    not_native = [(r.op, r.status, r.fallbacks, r.message) for r in results if r.status != "native"]
    assert not_native == [], not_native


def test_tolerance_follows_the_result_dtype(op_db):
    """exp of an int64 tensor is float32: float32 tolerances, not integer exactness."""
    tol = conformance._tolerance(op_db["exp"], "int64")
    assert tol(torch.float32) == conformance.DEFAULT_TOLERANCE["float32"]
    assert tol(torch.int64) == (0.0, 0.0)
    assert tol(torch.bool) == (0.0, 0.0)
    assert tol(torch.float16) == conformance.DEFAULT_TOLERANCE["float16"]
    grad_tol = conformance._tolerance(op_db["exp"], "float32", grad=True)(torch.float32)
    assert grad_tol[1] == pytest.approx(10 * conformance.DEFAULT_TOLERANCE["float32"][1])
    (result,) = _run([op_db["exp"]], "int64")
    assert result.status == "native", result


def test_matrix_exp_compares_normwise(op_db):
    """A matrix function's float32 error bound is normwise: its absolute tolerance scales
    with the result's largest element; every other op's stays elementwise."""
    expected = torch.tensor([1e5, 1.0])
    actual = expected + torch.tensor([0.0, 0.03])  # 3e-7 of the largest element
    tol = conformance._tolerance(op_db["matrix_exp"], "float32")
    conformance._compare(actual.to("vkml"), expected, tol, True)
    with pytest.raises(conformance._Mismatch):
        conformance._compare(
            actual.to("vkml"), expected, conformance._tolerance(op_db["exp"], "float32"), True
        )
    with pytest.raises(conformance._Mismatch):  # 1e-4 of it is too far
        conformance._compare((expected + torch.tensor([0.0, 10.0])).to("vkml"), expected, tol, True)


def test_fallback_op_is_fallback_pass(op_db):
    (result,) = _run([op_db[FALLBACK_OP]], "float32")
    assert result.status == "fallback", result
    assert FALLBACK_ATEN in result.fallbacks, result
    assert result.message == ""


def _sample_inputs(op, device, dtype, requires_grad, **kwargs):
    yield SampleInput(torch.linspace(-1, 1, 12, device=device, dtype=dtype).reshape(3, 4))


def _wrong_on_vkml(x):
    return x + 1 if x.device.type == "vkml" else x


def _raises_on_vkml(x):
    if x.device.type == "vkml":
        raise ValueError("this op fails on vkml")
    return x * 2


def _raises_everywhere(x):
    raise TypeError("no valid sample")


def _opinfo(name, fn):
    return OpInfo(
        name,
        op=fn,
        dtypes=floating_types(),
        sample_inputs_func=_sample_inputs,
        supports_autograd=False,
    )


def test_wrong_error_and_skip_are_classified():
    ops = [
        _opinfo("wrong_on_vkml", _wrong_on_vkml),
        _opinfo("raises_on_vkml", _raises_on_vkml),
        _opinfo("raises_everywhere", _raises_everywhere),
    ]
    wrong, error, skip = _run(ops, "float32")
    assert wrong.status == "wrong" and "output" in wrong.message, wrong
    assert error.status == "error", error
    assert error.message.startswith("ValueError: this op fails on vkml"), error
    assert skip.status == "skip" and "CPU raised TypeError" in skip.message, skip


def test_dtype_and_shape_mismatches_are_wrong():
    def tol(dtype):
        return (1e-5, 1e-5) if dtype.is_floating_point else (0.0, 0.0)

    def compare(actual, expected):
        try:
            conformance._compare(actual.to("vkml"), expected, tol, True)
        except conformance._Mismatch as e:
            return str(e)
        return ""

    x = torch.arange(6.0)
    assert compare(x, x) == ""
    assert "dtype" in compare(x.double(), x)
    assert "shape" in compare(x.reshape(2, 3), x)
    assert "Mismatched elements" in compare(x + 1e-3, x)
    nan = torch.tensor([float("nan"), 1.0])
    assert compare(nan, nan) == ""


def test_inputs_keep_their_layout_on_vkml():
    to_vkml = conformance._ToVkml()
    base = torch.arange(24.0).reshape(4, 6)
    view = base[1:, ::2].t()
    a, b, kw = to_vkml((view, torch.device("cpu"), {"device": "cpu", "x": base}))
    assert a.device.type == "vkml" and b == torch.device("vkml") and kw["device"] == "vkml"
    assert a.stride() == view.stride() and a.storage_offset() == view.storage_offset()
    torch.testing.assert_close(a.cpu(), view)
    # inputs that alias on the CPU alias on vkml
    assert kw["x"].untyped_storage().data_ptr() == a.untyped_storage().data_ptr()


def test_inputs_keep_their_conjugate_and_negative_bits():
    """The storage travels as stored; a conjugated (or negated) view must stay one."""
    to_vkml = conformance._ToVkml()
    c = torch.tensor([1 + 2j, 3 - 1j])
    for t in (c.conj(), c.conj().imag):
        moved = to_vkml(t)
        assert moved.is_conj() == t.is_conj() and moved.is_neg() == t.is_neg()
        torch.testing.assert_close(
            moved.cpu().resolve_conj().resolve_neg(), t.resolve_conj().resolve_neg()
        )


def test_families_count_apart():
    for key in ["fft.fft", "fft.irfftn", "stft", "istft"]:
        assert conformance.family(key) == "fft", key
    for key in [
        "linalg.svd",
        "svd",
        "qr",
        "cholesky_solve",
        "lu_unpack",
        "logdet",
        "pinverse",
        "matrix_exp",
        "linalg.tensorsolve",
        "triangular_solve",
    ]:
        assert conformance.family(key) == "linalg", key
    for key in ["add", "resolve_conj", "matmul", "diagonal", "nn.functional.conv2d", "lerp"]:
        assert conformance.family(key) == "ops", key
        assert conformance.is_measured(key), key
    assert not conformance.is_measured("jiterator_binary")
    results = [
        conformance.Result("add", "float32", "native"),
        conformance.Result("fft.fft", "float32", "fallback"),
        conformance.Result("svd", "float32", "native"),
    ]
    assert conformance.summarize(results) == {"float32": {"native": 1}}
    assert conformance.summarize(results, "fft") == {"float32": {"fallback": 1}}
    lines = conformance.summary_lines(results)
    assert lines[0].startswith("ops (") and "fft (torch.fft, stft, istft):" in lines


def _cli_survives_crash_and_hang(tmp_path):
    """A unit that kills its worker or hangs is recorded; the sweep goes on (two workers,
    results in plan order)."""
    json_path, md_path = tmp_path / "out.json", tmp_path / "out.md"
    env = dict(os.environ, _TORCH_VKML_CONFORMANCE_FAULT="add:crash,mul:hang")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch_vkml.conformance",
            "--ops",
            "add,mul,sub",
            "--dtypes",
            "float32",
            "--skip-grad",
            "--limit-samples",
            "2",
            # From the unit's dispatch (worker start-up excluded): sub's two samples take
            # well under a second even on a loaded machine.
            "--timeout",
            "6",
            "--jobs",
            "2",
            "--json",
            str(json_path),
            "--markdown",
            str(md_path),
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(json_path.read_text())
    assert [r["op"] for r in data["results"]] == ["add", "mul", "sub"]
    status = {r["op"]: r["status"] for r in data["results"]}
    assert status == {"add": "crash", "mul": "timeout", "sub": "native"}, data["results"]
    crash = next(r for r in data["results"] if r["op"] == "add")
    assert "SIGABRT" in crash["message"], crash
    assert data["summary"]["float32"] == {"crash": 1, "timeout": 1, "native": 1}
    assert (
        "float32: 1/3 native (33.3%), 0 fallback, 0 wrong, 0 error, 1 crash, 1 timeout, 0 skip"
    ) in proc.stdout
    md = md_path.read_text()
    assert "| `sub` | ✅ |" in md and "| `add` | ☠️ crash |" in md


# Four worker starts, each importing PyTorch's OpInfo database (18-38 s of make test's
# 20-minute budget): with TORCH_VKML_LONG_TESTS=1, defined only then (no skip listed).
if LONG_TESTS:

    def test_cli_survives_crash_and_hang(tmp_path):
        _cli_survives_crash_and_hang(tmp_path)


def test_markdown_lists_the_fallback_ops(op_db):
    """The report's fallback rows name the aten ops that ran on the CPU (in-process: the CLI
    crash/hang test keeps to three units, each worker start costing an OpInfo import)."""
    results = _run([op_db[FALLBACK_OP], op_db["add"]], "float32")
    meta = {"command": "test", "torch": torch.__version__, "device": "vkml", "date": "today"}
    md = conformance.markdown(results, meta)
    assert f"| `{FALLBACK_OP}` | 🟡 |" in md, md
    assert FALLBACK_ATEN in md


def test_index_ties_pass_only_when_they_select_the_same_values(op_db):
    """sort/topk/kthvalue leave the order of equal values open; other index errors are wrong."""
    x = torch.tensor([[3.0, 1.0, 1.0, 2.0]])
    sample = SampleInput(x, 1)
    expected = torch.sort(x, 1)
    values = expected.values.to("vkml")

    def ok(indices):
        actual = (values, torch.tensor([indices]).to("vkml"))
        return conformance._index_ties_ok(op_db["sort"], sample, expected, actual)

    assert ok([2, 1, 3, 0])  # the two 1.0s swapped: as good as the CPU's [1, 2, 3, 0]
    assert not ok([1, 3, 2, 0])  # selects 1, 2, 1: wrong
    stable = SampleInput(x, 1, stable=True)
    actual = (values, torch.tensor([[2, 1, 3, 0]]).to("vkml"))
    assert not conformance._index_ties_ok(op_db["sort"], stable, expected, actual)
    assert not conformance._index_ties_ok(op_db["add"], sample, expected, actual)
