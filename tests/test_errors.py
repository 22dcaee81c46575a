"""Error paths: missing Vulkan, bad device indices, OOM, CPU-fallback modes."""

import json
import re
import shutil
import subprocess

import pytest
import torch
from conftest import VKML, cpu_error, describe, run_python

import torch_vkml

GiB = 2**30


def _result(proc):
    """The JSON object a snippet printed on its ``RESULT`` line."""
    assert proc.returncode == 0, describe(proc)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line.removeprefix("RESULT "))
    raise AssertionError("no RESULT line\n" + describe(proc))


# ------------------------------------------------------- no Vulkan at all

MISSING_VULKAN = """
import json
import torch
import torch_vkml  # must not fail even though Vulkan is missing

result = {
    "available": torch_vkml.is_available(),
    "count": torch_vkml.device_count(),
    "device_type": torch.device("vkml").type,
    "errors": [],
}
attempts = [
    lambda: torch.zeros(3, device="vkml"),
    lambda: torch.ones(3).to("vkml"),
    lambda: torch.zeros(3, device="vkml"),  # again: still a clean error
]
for attempt in attempts:
    try:
        attempt()
    except Exception as e:
        result["errors"].append([type(e).__name__, isinstance(e, RuntimeError), str(e)])
    else:
        result["errors"].append(None)
print("RESULT " + json.dumps(result))
"""


def _check_missing(result, package, words):
    assert result["available"] is False
    assert result["count"] == 0
    assert result["device_type"] == "vkml"
    for error in result["errors"]:
        assert error is not None, "creating a vkml tensor must raise"
        name, is_runtime_error, message = error
        assert is_runtime_error, f"{name} is not a RuntimeError: {message}"
        assert package in message, message
        assert any(w in message.lower() for w in words), message


def test_no_vulkan_loader():
    proc = run_python(
        MISSING_VULKAN,
        env={
            "TORCH_VKML_LOADER": "/nonexistent/libvulkan.so.1",
            "TORCH_VKML_VALIDATION": "0",
        },
    )
    _check_missing(_result(proc), "libvulkan1", ("loader", "libvulkan"))


def test_no_vulkan_device():
    proc = run_python(
        MISSING_VULKAN,
        env={
            "VK_ICD_FILENAMES": "/nonexistent.json",
            "VK_DRIVER_FILES": "/nonexistent.json",  # newer loaders prefer this
            "TORCH_VKML_VALIDATION": "0",
        },
        unset=["VK_ADD_DRIVER_FILES", "TORCH_VKML_LOADER"],
    )
    _check_missing(_result(proc), "mesa-vulkan-drivers", ("device", "driver"))


# --------------------------------------------------------- device indices


def _states_range(message):
    count = torch_vkml.device_count()
    numbers = set(re.findall(r"\d+", message))
    return "0" in numbers and bool({str(count - 1), str(count)} & numbers)


@pytest.mark.parametrize(
    "call",
    [
        torch_vkml.device,
        torch_vkml.set_device,
        torch_vkml.device_name,
        torch_vkml.get_device_properties,
    ],
    ids=lambda f: f.__name__,
)
def test_bad_device_index(call):
    current = torch_vkml.current_device()
    with pytest.raises(ValueError) as info:
        call(99)
    assert _states_range(str(info.value)), str(info.value)
    assert torch_vkml.current_device() == current


def test_bad_device_index_in_tensor_factory():
    with pytest.raises((RuntimeError, ValueError)):
        torch.zeros(3, device="vkml:99")
    assert torch.ones(3, device=VKML).sum().item() == 3.0


def test_mixing_devices_is_an_error():
    """In CUDA's words, so that code matching them (and users) read the same."""
    vk = torch.ones(3, device=VKML)
    message = (
        r"Expected all tensors to be on the same device, but found at least two devices, "
        r"(vkml:0 and cpu|cpu and vkml:0)!"
    )
    with pytest.raises(RuntimeError, match=message):
        vk + torch.ones(3)
    with pytest.raises(RuntimeError, match=message):
        torch.ones(3).add_(vk)
    with pytest.raises(RuntimeError, match=message):
        torch.where(vk > 0, vk, torch.zeros(3))


def test_an_operand_on_the_cpu_raises_as_on_cuda():
    """Ops registered by hand get no dispatcher device check: a CPU target or index used
    to reach the kernel as a device address (on a GPU a fault, on lavapipe host memory
    read as the data: a nonsense 'Target 94258508416560 is out of bounds'). Now PyTorch's
    device-mismatch error, and the device stays usable. CPU indices that CUDA takes
    (advanced indexing, 0-dim scalars) still work."""
    import torch.nn.functional as F

    x = torch.rand(2, 3, 4, 4, device=VKML).log_softmax(1)
    message = "Expected all tensors to be on the same device, but found at least two devices"
    calls = [
        lambda: F.nll_loss(x, torch.zeros(2, 4, 4, dtype=torch.long)),
        lambda: F.cross_entropy(x[:, :, 0, 0], torch.zeros(2, dtype=torch.long)),
        lambda: x.gather(1, torch.zeros(2, 1, 4, 4, dtype=torch.long)),
        lambda: x.index_select(0, torch.tensor([0])),
        lambda: F.embedding(torch.tensor([0, 1]), x.reshape(-1, 3)[:5]),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match=message):
            call()
    y = torch.arange(12.0, device=VKML).view(3, 4)
    assert y[torch.tensor([0, 2])].cpu().tolist() == [[0, 1, 2, 3], [8, 9, 10, 11]]
    assert (y + torch.tensor(2.0)).cpu()[0, 0].item() == 2.0
    assert x.exp().sum(1).mean().item() == pytest.approx(1.0, rel=1e-5)


# ------------------------------------------------------------------- OOM


def test_out_of_memory_then_still_usable():
    total = torch_vkml.get_device_properties().total_memory
    gib = max(3, total // GiB + 1)  # 3 GiB on lavapipe's 2 GiB heap
    size = gib * GiB
    torch_vkml.synchronize()
    before = torch_vkml.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.empty(size, dtype=torch.uint8, device=VKML)
    message = str(info.value)
    size_pattern = rf"\b{size}\b|\b{gib}(\.0+)? ?Gi?B|\b{gib * 1024}(\.0+)? ?Mi?B"
    assert re.search(size_pattern, message), f"size not in message: {message}"
    # Nothing leaked, and the device keeps working.
    assert torch_vkml.memory_allocated() == before
    x = torch.ones(1000, device=VKML)
    assert (x + 1).sum().item() == 2000.0
    big = torch.empty(64 * 2**20, dtype=torch.uint8, device=VKML)
    big.fill_(3)
    assert big[-1].item() == 3
    del big


# -------------------------------------------------------- fallback modes

# torch.linalg.eigvals (non-symmetric) has no vkml kernel (docs/linalg.md); it must run
# on the CPU fallback.
FALLBACK = """
import json
import warnings
import torch
import torch_vkml

x = torch.eye(4) * 0.3 + torch.linspace(0.0, 0.1, 16).reshape(4, 4)
expected = torch.linalg.eigvals(x)
result = {"results": [], "error": None}
torch_vkml.reset_fallback_counts()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        for _ in range(2):
            y = torch.linalg.eigvals(x.to("vkml"))
            result["results"].append(
                [str(y.device), y.dtype == expected.dtype,
                 torch.allclose(y.cpu(), expected)])
    except Exception as e:
        result["error"] = [type(e).__name__, str(e)]
result["warnings"] = [
    [w.category.__name__, str(w.message)] for w in caught if "eigvals" in str(w.message)
]
result["counts"] = torch_vkml.fallback_counts()
result["after"] = (torch.ones(3, device="vkml") * 2).cpu().sum().item()
torch_vkml.reset_fallback_counts()
result["counts_after_reset"] = torch_vkml.fallback_counts()
print("RESULT " + json.dumps(result))
"""
# the op may be reported with its overload name, e.g. aten::_linalg_eigvals.out
WARNING_TEXT = re.compile(
    r"aten::_linalg_eigvals(\.\w+)? has no vkml kernel yet; it runs on the CPU"
)


def _run_fallback(mode):
    proc = run_python(FALLBACK, env={"TORCH_VKML_FALLBACK": mode})
    result = _result(proc)
    assert result["after"] == 6.0, "device broken after a fallback"
    assert result["counts_after_reset"] == {}
    return result


def _fallback_counts(counts):
    keys = [k for k in counts if "linalg_eigvals" in k]
    assert len(keys) == 1, counts
    assert set(counts) == set(keys), f"unexpected fallbacks: {counts}"
    return counts[keys[0]]


@pytest.mark.parametrize("mode", ["silent", "warn"])
def test_fallback_runs_on_cpu(mode):
    result = _run_fallback(mode)
    assert result["error"] is None, result["error"]
    assert result["results"] == [["vkml:0", True, True]] * 2
    assert _fallback_counts(result["counts"]) == 2
    if mode == "silent":
        assert result["warnings"] == []
    else:
        assert len(result["warnings"]) == 1, "warn exactly once per op"
        category, message = result["warnings"][0]
        assert category == "UserWarning"
        assert WARNING_TEXT.search(message), message


def test_fallback_error_mode():
    result = _run_fallback("error")
    assert result["results"] == []
    assert result["error"] is not None, "error mode must raise"
    name, message = result["error"]
    assert name == "NotImplementedError"
    assert "linalg_eigvals" in message
    assert result["warnings"] == []


def test_fallback_counts_api():
    torch_vkml.reset_fallback_counts()
    counts = torch_vkml.fallback_counts()
    assert isinstance(counts, dict)
    assert counts == {}


# ------------------------------------------- scalar arguments out of range

# Ops whose CPU kernels convert a scalar argument to the tensor's dtype with a check.
TOO_BIG = {
    "fill_": lambda x, v: x.clone().fill_(v),
    "full_like": lambda x, v: torch.full_like(x, v),
    "clamp": lambda x, v: x.clamp(0, v),
    "clamp_min_": lambda x, v: x.clone().clamp_(min=-v),
    "hardtanh": lambda x, v: torch.nn.functional.hardtanh(x, 0, v),
    "threshold": lambda x, v: torch.threshold(x, 2, v),
    "masked_fill": lambda x, v: x.masked_fill(x > 2, v),
    "where": lambda x, v: torch.where(x > 2, x, v),
    "index_fill_": lambda x, v: x.clone().index_fill_(0, torch.tensor([0], device=x.device), v),
    "scatter_": lambda x, v: x.clone().scatter_(0, torch.tensor([0], device=x.device), v),
    "add_alpha": lambda x, v: torch.add(x, x, alpha=v),
    "sub_alpha": lambda x, v: torch.sub(x, x, alpha=v),
    "addcmul": lambda x, v: torch.addcmul(x, x, x, value=v),
    "pow": lambda x, v: x**v,
}
BIG = {
    torch.uint8: 300,
    torch.int8: 300,
    torch.int16: 70000,
    torch.int32: 2**40,
    torch.float16: 1e6,
    torch.bfloat16: 1e300,
    torch.float32: 1e300,
}


@pytest.mark.parametrize("dtype", list(BIG), ids=str)
def test_scalar_arguments_that_do_not_fit_the_dtype_raise_as_on_the_cpu(dtype):
    # A kernel would wrap or overflow them silently (uint8 fill_(300) gave 44).
    x = torch.tensor([1, 3], dtype=dtype)
    checked = 0
    for name, fn in TOO_BIG.items():
        if name == "where" and dtype in (torch.float16, torch.bfloat16):
            continue  # CPU's scalar_tensor fast path does not check these; CUDA's fill_ does
        try:
            fn(x, BIG[dtype])
        except RuntimeError:
            kind, message = cpu_error(fn, x, BIG[dtype])
            with pytest.raises(kind, match=re.escape(message)):
                fn(x.to(VKML), BIG[dtype])
            checked += 1
        else:  # the CPU computes (pow of float32, addcmul of float16 in float32)
            fn(x.to(VKML), BIG[dtype])
    assert checked >= 10
    # What fits still computes, and the device stays usable.
    torch.testing.assert_close(x.to(VKML).clamp(0, 2).cpu(), x.clamp(0, 2))


# ------------------------------------------------------ the C++ runtime


def test_error_message_formats_numbers():
    # A second libstdc++ inside the module (a compiler with only a static one) formats
    # numbers through the other copy's locale: the message stopped at "(" here, and the
    # process died on the GPU machine.
    a, b = torch.ones(2, 2, device=VKML), torch.ones(3, 3, device=VKML)
    with pytest.raises(RuntimeError, match=re.escape("(2x2 and 3x3)")):
        torch.mm(a, b)


def test_module_exports_no_cpp_runtime():
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed to read the module's symbol table"
    out = subprocess.run(
        [nm, "-D", "--defined-only", torch_vkml._C.__file__],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # std::locale and the stream inserters live in torch's libstdc++.so only.
    runtime = [
        line.split()[-1]
        for line in out.splitlines()
        if re.search(r" _ZNSt6locale|_ZNSo9_M_insert|__cxa_throw$", line)
    ]
    assert not runtime, f"the module defines C++ runtime symbols: {runtime[:5]}"


def test_pooling_and_loss_argument_errors_in_the_cpu_words():
    # PyTorch's test_modules matches these words (module_db's error inputs).
    F = torch.nn.functional
    cases = [
        lambda d: F.max_pool2d(torch.randn(3, 4, device=d), 2),
        lambda d: F.max_pool2d(torch.randn(1, 2, 3, 4, 5, device=d), 2),
        lambda d: F.max_pool2d(torch.randn(1, 1, 10, 10, device=d), 2, padding=5),
        lambda d: F.max_pool2d(torch.randn(1, 1, 10, 10, device=d), 3, padding=2, dilation=2),
        lambda d: F.max_pool2d(torch.randn(1, 0, 4, 4, device=d), 2),
        lambda d: F.nll_loss(torch.randn(2, 3, device=d), torch.zeros(2, device=d)),
        lambda d: F.cross_entropy(torch.randn(2, 3, device=d), torch.zeros(2, device=d)),
        lambda d: F.nll_loss(
            torch.randn(2, 3, device=d),
            torch.zeros(2, dtype=torch.long, device=d),
            weight=torch.ones(3, dtype=torch.half, device=d),
        ),
        lambda d: F.multi_margin_loss(
            torch.randn(5, 10, device=d), torch.zeros(3, dtype=torch.long, device=d)
        ),
    ]
    for case in cases:
        with pytest.raises(Exception) as cpu:
            case("cpu")
        words = str(cpu.value).splitlines()[0].split(", but got")[0]  # values' spelling aside
        with pytest.raises(type(cpu.value)) as vk:
            case(VKML)
        assert str(vk.value).splitlines()[0].split(", but got")[0] == words
