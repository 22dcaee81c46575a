"""torch-vkml beside a second accelerator in one process (issue #22 item 9, docs/coexistence.md).

PyTorch's autograd engine gives streams to one accelerator device type per process: the type
``at::accelerator::getAccelerator()`` names, which is PrivateUse1 (vkml) as soon as a PrivateUse1
backend name is registered. Gradients on any other accelerator type (CUDA on a real machine) then
reach ``TORCH_INTERNAL_ASSERT(opt_ready_stream && opt_parent_stream)`` in
``Engine::evaluate_function``.

This machine has no CUDA. A few lines of C++, compiled here with the C++ compiler that builds
torch-vkml itself (a few seconds), stand in for it: a device guard and accelerator hooks for MTIA,
a device type that ``at::isAccelerator()`` counts exactly like CUDA and that, unlike CUDA,
``getAccelerator()`` can pick at run time in a CPU build of torch. Tensors on ``mtia:0`` are
Python wrapper tensors that compute on the CPU; autograd treats them as accelerator tensors.
Every scenario runs in a fresh interpreter: registering a backend cannot be undone.

Tests marked xfail fail because of PyTorch (the engine), not torch-vkml; they pass once the
engine follows each tensor's own device type (the patch in docs/coexistence.md).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from conftest import describe, run_python

ENGINE_ASSERT = "opt_ready_stream && opt_parent_stream"

# A second accelerator: one MTIA device with one default stream and events that are always
# complete (as vkml's own guard has them). Registered when the library is loaded, which must
# happen before `import torch`: PyTorch reads the MTIA hooks once, on first use.
FAKE_ACCELERATOR_CPP = r"""
#include <ATen/detail/MTIAHooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace fake {
constexpr c10::DeviceType kType = c10::DeviceType::MTIA;

c10::Stream default_stream(c10::Device d) { return c10::Stream(c10::Stream::DEFAULT, d); }

struct Guard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device) const override { return {kType, 0}; }
  c10::Device getDevice() const override { return {kType, 0}; }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const override { return default_stream(d); }
  c10::Stream getDefaultStream(c10::Device d) const override { return default_stream(d); }
  c10::Stream exchangeStream(c10::Stream s) const override { return default_stream(s.device()); }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  void record(void**, const c10::Stream&, const c10::DeviceIndex,
              const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
  void synchronizeEvent(void*) const override {}
};

struct Hooks final : at::MTIAHooksInterface {
  // torch 2.11's registry constructs hooks from MTIAHooksArgs; later ones from nothing.
  Hooks() = default;
  explicit Hooks(at::MTIAHooksArgs) {}
  bool hasMTIA() const override { return true; }
  bool isAvailable() const override { return true; }
  c10::DeviceIndex deviceCount() const override { return 1; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void setCurrentDevice(c10::DeviceIndex) const override {}
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex) const override { return 0; }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex) const override { return 0; }
  c10::Stream getCurrentStream(c10::DeviceIndex d) const override {
    return default_stream(c10::Device(kType, d));
  }
  c10::Stream getDefaultStream(c10::DeviceIndex d) const override { return getCurrentStream(d); }
};
}  // namespace fake

C10_REGISTER_GUARD_IMPL(MTIA, fake::Guard);
namespace at {
C10_REGISTER_TYPED_CLASS(MTIAHooksRegistry, "MTIAHooks", fake::Hooks)
}
"""

# Prepended to every scenario: load the second accelerator (when given), import torch, and
# define a tensor type on mtia:0 plus one training step on it and on vkml.
PRELUDE = """
import ctypes, json, os, sys
if os.environ.get("FAKE_ACCELERATOR_LIB"):
    ctypes.CDLL(os.environ["FAKE_ACCELERATOR_LIB"], mode=ctypes.RTLD_GLOBAL)
import torch
from torch.utils._pytree import tree_map

MTIA = torch.device("mtia", 0)

class OnFake(torch.Tensor):
    '''A tensor that lives on mtia:0 for autograd and computes on the CPU.'''

    @staticmethod
    def __new__(cls, data, requires_grad=False):
        t = torch.Tensor._make_wrapper_subclass(
            cls, data.shape, strides=data.stride(), dtype=data.dtype, device=MTIA,
            requires_grad=requires_grad)
        t.cpu_data = data
        return t

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(x):
            if isinstance(x, OnFake):
                return x.cpu_data
            if isinstance(x, torch.device) and x.type == "mtia":
                return torch.device("cpu")
            return x
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        wrap = lambda x: OnFake(x) if type(x) is torch.Tensor else x
        return tree_map(wrap, out)

def accelerator():
    acc = torch._C._accelerator_getAccelerator()
    return None if acc is None else acc.type

def step(device):
    '''One backward of sum(w * w); returns the gradient (2 * w) as a list, or the error.'''
    w0 = torch.arange(4.0)
    w = OnFake(w0, requires_grad=True) if device == "mtia" else w0.to(device).requires_grad_()
    try:
        (w * w).sum().backward()
    except RuntimeError as e:
        return {"error": str(e).splitlines()[0]}
    grad = w.grad.cpu_data if device == "mtia" else w.grad.cpu()
    return {"grad": grad.tolist()}

def report(**values):
    print("REPORT " + json.dumps(values), flush=True)
    # Skip interpreter teardown: PyTorch's Python PrivateUse1 backend aborts in it
    # ("terminate called without an active exception"), which is not what is tested here.
    os._exit(0)
"""


class EngineStreamAssert(RuntimeError):
    """The autograd engine's `opt_ready_stream && opt_parent_stream` assert was raised."""


@pytest.fixture(scope="module")
def fake_accelerator(tmp_path_factory):
    """Path of the compiled second-accelerator library."""
    out = tmp_path_factory.mktemp("fake_accelerator")
    src = out / "fake_accelerator.cpp"
    lib = out / "libfake_accelerator.so"
    src.write_text(FAKE_ACCELERATOR_CPP)
    torch_dir = os.path.dirname(torch.__file__)
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    cmd = [
        os.environ.get("CXX", "c++"),
        "-std=c++20",  # torch 2.14's headers need C++20
        "-shared",
        "-fPIC",
        "-O0",
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        "-I",
        os.path.join(torch_dir, "include"),
        str(src),
        "-o",
        str(lib),
        "-L",
        os.path.join(torch_dir, "lib"),
        "-lc10",
        "-ltorch_cpu",
        f"-Wl,-rpath,{os.path.join(torch_dir, 'lib')}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"compiling the stand-in accelerator failed:\n{proc.stderr}"
    return str(lib)


def scenario(code, *, fake_lib=None):
    """Run PRELUDE + code in a fresh interpreter (no autoload); returns what report() got."""
    env = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    if fake_lib:
        env["FAKE_ACCELERATOR_LIB"] = fake_lib
    proc = run_python(PRELUDE + textwrap.dedent(code), env=env, unset=["FAKE_ACCELERATOR_LIB"])
    assert proc.returncode == 0, describe(proc)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert len(lines) == 1, describe(proc)
    return json.loads(lines[0].removeprefix("REPORT "))


def check_trained(result, what):
    """Assert that step() returned 2 * w; the engine's stream assert raises EngineStreamAssert."""
    if "error" in result:
        if ENGINE_ASSERT in result["error"]:
            raise EngineStreamAssert(f"{what}: {result['error']}")
        pytest.fail(f"{what} failed otherwise: {result['error']}")
    assert result["grad"] == [0.0, 2.0, 4.0, 6.0], what


PYTORCH_ENGINE = (
    "PyTorch's autograd engine gives streams only to the process accelerator's device type "
    "(Node::stream() filters on at::getAccelerator()); see docs/coexistence.md"
)


# --------------------------------------------------------------------------
# What makes a backend the accelerator
# --------------------------------------------------------------------------


def test_the_backend_name_not_the_hooks_makes_privateuse1_the_accelerator():
    result = scenario(
        """
        before = accelerator()
        torch.utils.rename_privateuse1_backend("foo")  # no hooks, no guard, no kernels
        after = accelerator()
        try:
            torch._C._get_accelerator()
            python_api = "ok"
        except RuntimeError as e:
            python_api = str(e)
        report(before=before, after=after, python_api=python_api)
        """
    )
    assert result["before"] != "foo"
    assert result["after"] == "foo"
    # torch.accelerator.* and torch.get_device_module() then need the hooks.
    assert "RegisterPrivateUse1HooksInterface" in result["python_api"]


def test_torch_vkml_is_the_accelerator():
    result = scenario(
        """
        import torch_vkml
        report(
            core=accelerator(),
            python=torch._C._get_accelerator().type,
            current=torch.accelerator.current_accelerator().type,
        )
        """
    )
    assert result == {"core": "vkml", "python": "vkml", "current": "vkml"}


# --------------------------------------------------------------------------
# A second accelerator (CUDA's stand-in) with and without vkml
# --------------------------------------------------------------------------


def test_the_second_accelerator_trains_when_vkml_is_not_loaded(fake_accelerator):
    # What a CUDA user without torch-vkml (or with its autoload off) has: the harness is sound.
    result = scenario(
        "report(accelerator=accelerator(), fake=step('mtia'))", fake_lib=fake_accelerator
    )
    assert result["accelerator"] == "mtia"
    check_trained(result["fake"], "mtia backward without vkml")


@pytest.mark.xfail(strict=True, raises=EngineStreamAssert, reason=PYTORCH_ENGINE)
def test_the_second_accelerator_trains_once_vkml_is_imported(fake_accelerator):
    # Issue #22 item 9: CUDA backward after torch-vkml is (auto)loaded.
    result = scenario(
        """
        import torch_vkml
        report(accelerator=accelerator(), fake=step("mtia"))
        """,
        fake_lib=fake_accelerator,
    )
    assert result["accelerator"] == "vkml"
    check_trained(result["fake"], "mtia backward with vkml registered")


@pytest.mark.xfail(strict=True, raises=EngineStreamAssert, reason=PYTORCH_ENGINE)
def test_the_second_accelerator_trains_beside_any_privateuse1_backend(fake_accelerator):
    # Nothing of torch-vkml: PyTorch's own pure-Python PrivateUse1 backend does the same.
    result = scenario(
        """
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend
        _setup_privateuseone_for_python_backend("foo")
        report(accelerator=accelerator(), fake=step("mtia"))
        """,
        fake_lib=fake_accelerator,
    )
    assert result["accelerator"] == "foo"
    check_trained(result["fake"], "mtia backward with a Python PrivateUse1 backend")


@pytest.mark.xfail(strict=True, raises=EngineStreamAssert, reason=PYTORCH_ENGINE)
def test_vkml_and_the_second_accelerator_train_in_one_process(fake_accelerator):
    result = scenario(
        """
        import torch_vkml
        report(vkml=step("vkml"), fake=step("mtia"), vkml_again=step("vkml"))
        """,
        fake_lib=fake_accelerator,
    )
    # vkml, the accelerator, trains before and after the other device's failure.
    check_trained(result["vkml"], "vkml backward")
    check_trained(result["vkml_again"], "vkml backward after the mtia one")
    check_trained(result["fake"], "mtia backward beside vkml")


@pytest.mark.xfail(strict=True, raises=EngineStreamAssert, reason=PYTORCH_ENGINE)
def test_vkml_trains_when_another_device_type_is_the_accelerator(fake_accelerator):
    # The other side: vkml's kernels, guard and hooks without the name "vkml", so that the
    # second accelerator stays the process accelerator. vkml's own backward then fails the
    # same way, which rules out "register vkml without making it the accelerator".
    result = scenario(
        """
        import glob, importlib.util, types
        package = importlib.util.find_spec("torch_vkml")  # found, not imported
        so = glob.glob(os.path.join(os.path.dirname(package.origin), "_C*.so"))
        ext = importlib.util.spec_from_file_location("torch_vkml._C", so[0])
        ext.loader.exec_module(importlib.util.module_from_spec(ext))  # no rename to "vkml"
        torch._register_device_module("privateuseone", types.ModuleType("privateuseone"))
        report(accelerator=accelerator(), fake=step("mtia"), vkml=step("privateuseone"))
        """,
        fake_lib=fake_accelerator,
    )
    assert result["accelerator"] == "mtia"
    check_trained(result["fake"], "mtia backward with vkml unnamed")
    check_trained(result["vkml"], "vkml (privateuseone) backward when mtia is the accelerator")


# ---- the autoload keeps out of a process with a built-in accelerator ----


def test_autoload_decision():
    from _torch_vkml_autoload import should_load

    assert should_load("auto", None)
    assert not should_load("auto", "cuda")  # CUDA keeps working: vkml is not registered
    assert should_load("1", "cuda")
    assert not should_load("0", None)


_PRETEND_CUDA = """
import sys, warnings
import torch
torch.cuda._is_compiled = lambda: True     # a CUDA build ...
torch.cuda.device_count = lambda: 1        # ... with one GPU
import _torch_vkml_autoload
_torch_vkml_autoload.autoload()            # what `import torch` runs
print("loaded" if "torch_vkml" in sys.modules else "skipped")
print(torch._C._get_privateuse1_backend_name())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import torch_vkml                      # on request, vkml comes, with a warning
print(any("pytorch/pytorch#161129" in str(w.message) for w in caught))
print(torch._C._get_privateuse1_backend_name())
"""


def test_autoload_skips_vkml_where_cuda_has_devices():
    proc = subprocess.run(
        [sys.executable, "-c", _PRETEND_CUDA],
        env=dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == ["skipped", "privateuseone", "True", "vkml"], proc.stdout
