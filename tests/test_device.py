"""Device-level API of torch_vkml: discovery, properties, tensors, memory, RNG."""

import importlib.metadata
import json

import pytest
import torch
from conftest import VKML, describe, run_python

import torch_vkml

MiB = 2**20


def _current():
    return torch.device(VKML, torch_vkml.current_device())


# ---------------------------------------------------------------- discovery


def test_is_available():
    assert torch_vkml.is_available() is True


def test_device_count():
    count = torch_vkml.device_count()
    assert isinstance(count, int)
    assert count >= 1


def test_current_device_in_range():
    current = torch_vkml.current_device()
    assert isinstance(current, int)
    assert 0 <= current < torch_vkml.device_count()


def test_device_helper():
    assert torch_vkml.device() == _current()
    assert torch_vkml.device(None) == _current()
    for i in range(torch_vkml.device_count()):
        assert torch_vkml.device(i) == torch.device(VKML, i)
    assert isinstance(torch_vkml.device(), torch.device)


def test_default_device():
    device = torch_vkml.default_device()
    assert isinstance(device, torch.device)
    assert device.type == VKML


def test_device_names():
    for i in range(torch_vkml.device_count()):
        name = torch_vkml.device_name(i)
        assert isinstance(name, str) and name.strip()
        assert name == torch_vkml.get_device_properties(i).name
    assert torch_vkml.device_name() == torch_vkml.device_name(torch_vkml.current_device())


def test_device_properties():
    props = torch_vkml.get_device_properties()
    for attr in ("name", "vendor", "driver", "device_type"):
        value = getattr(props, attr)
        assert isinstance(value, str) and value.strip(), attr
    assert isinstance(props.total_memory, int) and props.total_memory > 0
    subgroup = props.subgroup_size
    assert isinstance(subgroup, int) and subgroup >= 1
    assert subgroup & (subgroup - 1) == 0, "subgroup size is a power of two"
    for attr in ("supports_fp16", "supports_fp64", "supports_int64", "pipeline_statistics"):
        assert isinstance(getattr(props, attr), bool), attr
    same = torch_vkml.get_device_properties(torch_vkml.current_device())
    assert same.name == props.name
    assert same.total_memory == props.total_memory


PIPELINE_STATISTICS = """
import json
import torch
import torch_vkml

a = torch.ones(64, 64, device="vkml")
(a @ a).cpu()
result = {"supported": torch_vkml.get_device_properties().pipeline_statistics}
try:
    result["stats"] = torch_vkml._C._pipeline_statistics()
except RuntimeError as e:
    result["error"] = str(e)
print("RESULT " + json.dumps(result))
"""


@pytest.mark.parametrize("captured", [False, True], ids=["off", "on"])
def test_pipeline_statistics(captured):
    proc = run_python(
        PIPELINE_STATISTICS, env={"TORCH_VKML_PIPELINE_STATS": "1" if captured else "0"}
    )
    assert proc.returncode == 0, describe(proc)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    if captured and result["supported"]:
        # The driver's own statistic names; every pipeline made reports some.
        gemm = [name for name in result["stats"] if name.startswith("gemm_f32[")]
        assert gemm, result["stats"].keys()
        assert result["stats"][gemm[0]], "no statistics for the GEMM pipeline"
        assert all(isinstance(v, float) for v in result["stats"][gemm[0]].values())
    else:
        assert "stats" not in result
        assert "TORCH_VKML_PIPELINE_STATS=1" in result["error"]
        assert ("has it" if result["supported"] else "has not") in result["error"]


def test_set_device_roundtrip():
    original = torch_vkml.current_device()
    try:
        for i in reversed(range(torch_vkml.device_count())):
            torch_vkml.set_device(i)
            assert torch_vkml.current_device() == i
            assert torch_vkml.device() == torch.device(VKML, i)
            t = torch.zeros(3, device=VKML)
            assert t.device == torch.device(VKML, i)
    finally:
        torch_vkml.set_device(original)
    assert torch_vkml.current_device() == original


def test_torch_accelerator():
    accelerator = torch.accelerator.current_accelerator()
    assert accelerator is not None
    assert accelerator.type == VKML
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == torch_vkml.device_count()
    assert torch.accelerator.current_device_index() == torch_vkml.current_device()


def test_torch_accelerator_device_capability():
    """torch.accelerator.get_device_capability lists the dtypes vkml tensors hold and
    convert between (it raised "Backend doesn't support getting device capabilities");
    each listed dtype allocates and converts, and the others are refused."""
    supported = torch.accelerator.get_device_capability()["supported_dtypes"]
    expected = {
        torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
        torch.float16, torch.bfloat16, torch.float32, torch.float64,
        torch.complex64, torch.complex128, torch.uint16, torch.uint32, torch.uint64,
    }  # fmt: skip
    assert set(supported) == expected
    for dtype in expected:
        x = torch.ones(3, dtype=dtype).to(VKML)
        x = x.real if dtype.is_complex else x
        assert torch.equal(x.to(torch.float32).cpu(), torch.ones(3))
        assert torch.zeros(2, device=VKML).to(dtype).dtype == dtype
    with pytest.raises(TypeError, match="cannot hold dtype"):
        torch.empty(2, dtype=torch.complex32, device=VKML)


def test_torch_cuda_names_on_the_device_module():
    """The torch.cuda functions that device-generic code (accelerate, transformers,
    Lightning) calls through torch.get_device_module(): get_device_name,
    is_bf16_supported, seed_all, device_of, OutOfMemoryError."""
    module = torch.get_device_module(VKML)
    assert module.get_device_name() == torch_vkml.get_device_properties().name
    assert module.get_device_name(0) == module.get_device_name(torch.device(VKML, 0))
    assert module.is_bf16_supported() is True
    native = bool(torch_vkml.get_device_properties().cooperative_matrix_bf16)
    assert module.is_bf16_supported(including_emulation=False) is native
    assert module.OutOfMemoryError is torch.OutOfMemoryError
    module.manual_seed_all(3)
    before = module.initial_seed()
    module.seed_all()
    assert module.initial_seed() != before
    x = torch.ones(2, device=VKML)
    with module.device_of(x):
        assert module.current_device() == x.get_device()
    with module.device_of(torch.ones(2)):  # a CPU tensor: no change
        assert module.current_device() == x.get_device()


def test_torch_device_parsing():
    plain = torch.device("vkml")
    assert plain.type == VKML and plain.index is None
    indexed = torch.device("vkml:0")
    assert indexed.type == VKML and indexed.index == 0
    assert torch.device(VKML, 0) == indexed
    assert str(indexed) == "vkml:0"
    assert str(plain) == "vkml"


# ------------------------------------------------------------------ tensors


def test_to_and_back():
    cpu = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    for vk in (cpu.to("vkml"), cpu.to(torch.device(VKML)), cpu.vkml()):
        assert vk.is_vkml
        assert vk.device == _current()
        assert vk.shape == cpu.shape and vk.dtype == cpu.dtype
        back = vk.cpu()
        assert back.device.type == "cpu"
        assert torch.equal(back, cpu)
    assert not cpu.is_vkml
    assert cpu.vkml(0).device == torch.device(VKML, 0)


def test_to_same_device_is_noop():
    vk = torch.ones(4, device=VKML)
    assert vk.to(VKML) is vk
    assert vk.vkml() is vk
    copy = vk.to(VKML, copy=True)
    assert copy is not vk
    assert torch.equal(copy.cpu(), vk.cpu())


def test_factory_on_device_kwarg():
    for spec in ("vkml", "vkml:0", torch.device(VKML), torch_vkml.device(0)):
        t = torch.zeros(2, 3, device=spec)
        assert t.is_vkml and t.device.index == 0
    assert torch.ones(2, device="vkml").device == _current()


@pytest.mark.parametrize(
    "cpu",
    [
        torch.tensor([1.5, -2.0, 3.25]),
        torch.tensor([[1, 2, 3], [4, 5, 6]]),
        torch.tensor([True, False]),
        torch.tensor([0.5, 1.0], dtype=torch.float16),
        torch.tensor(7.0),
        torch.empty(0, 3),
        torch.arange(2000, dtype=torch.float32),  # summarised with "..."
    ],
    ids=["float", "int", "bool", "half", "zerodim", "empty", "summarised"],
)
def test_print(cpu):
    vk = cpu.to("vkml:0")
    text = repr(vk)
    assert "device='vkml:0'" in text
    # Apart from the device, a vkml tensor prints exactly like the CPU one.
    assert text.replace(", device='vkml:0'", "") == repr(cpu)
    assert str(vk) == text


# ------------------------------------------------------------------- memory


def test_memory_allocated_grows_and_drops():
    torch_vkml.synchronize()
    base = torch_vkml.memory_allocated()
    x = torch.empty(4 * MiB, dtype=torch.uint8, device=VKML)
    with_x = torch_vkml.memory_allocated()
    assert with_x >= base + 4 * MiB
    assert torch_vkml.memory_reserved() >= with_x
    del x
    torch_vkml.synchronize()
    assert torch_vkml.memory_allocated() == base


def test_max_memory_allocated():
    torch_vkml.synchronize()
    torch_vkml.reset_peak_memory_stats()
    base = torch_vkml.memory_allocated()
    assert torch_vkml.max_memory_allocated() == base
    x = torch.empty(8 * MiB, dtype=torch.uint8, device=VKML)
    del x
    torch_vkml.synchronize()
    assert torch_vkml.memory_allocated() == base
    assert torch_vkml.max_memory_allocated() >= base + 8 * MiB
    torch_vkml.reset_peak_memory_stats()
    assert torch_vkml.max_memory_allocated() == base


def test_empty_cache_reduces_reserved():
    torch_vkml.synchronize()
    x = torch.empty(16 * MiB, dtype=torch.uint8, device=VKML)
    x.fill_(1)
    reserved_with_x = torch_vkml.memory_reserved()
    del x
    torch_vkml.synchronize()
    torch_vkml.empty_cache()
    reserved = torch_vkml.memory_reserved()
    assert reserved < reserved_with_x
    assert reserved >= torch_vkml.memory_allocated()
    # The device still works after the cache is released.
    assert torch.ones(5, device=VKML).sum().item() == 5.0


def test_synchronize():
    x = torch.ones(1000, device=VKML)
    y = x * 3
    assert torch_vkml.synchronize() is None
    assert torch.equal(y.cpu(), torch.full((1000,), 3.0))


def test_validation_messages_drain():
    first = torch_vkml.validation_messages()
    assert isinstance(first, list)
    assert all(isinstance(m, str) for m in first)
    assert torch_vkml.validation_messages() == []


# ---------------------------------------------------------------------- RNG


def test_torch_vkml_manual_seed_repeats():
    torch_vkml.manual_seed(1234)
    a = torch.rand(100, device=VKML).cpu()
    torch_vkml.manual_seed(1234)
    b = torch.rand(100, device=VKML).cpu()
    torch_vkml.manual_seed(4321)
    c = torch.rand(100, device=VKML).cpu()
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_torch_manual_seed_seeds_device():
    torch.manual_seed(99)
    a = torch.randn(100, device=VKML).cpu()
    torch.manual_seed(99)
    b = torch.randn(100, device=VKML).cpu()
    assert torch.equal(a, b)


# ----------------------------------------------------------- environment


def _has_entry_point():
    eps = importlib.metadata.entry_points(group="torch.backends")
    return any(ep.name == "torch_vkml" for ep in eps)


@pytest.mark.xfail(
    not _has_entry_point(),
    reason="torch_vkml is not installed with a torch.backends entry point",
    strict=False,
)
def test_autoload_without_import():
    proc = run_python(
        """
        import sys
        import torch
        print(torch.accelerator.current_accelerator())
        print("torch_vkml" in sys.modules)
        """,
        # Where CUDA has a device the autoload keeps out by design (test_coexistence.py).
        env={"CUDA_VISIBLE_DEVICES": ""},
        unset=["TORCH_DEVICE_BACKEND_AUTOLOAD"],
    )
    assert proc.returncode == 0, describe(proc)
    lines = proc.stdout.split()
    assert lines[0] == "vkml", describe(proc)
    assert lines[1] == "True", describe(proc)


@pytest.mark.parametrize("autoload", ["1", "0"])
def test_import_torch_vkml_first(autoload):
    # `import torch_vkml` before torch: torch's own autoload of the entry
    # point must not trip over the half-imported package.
    proc = run_python(
        """
        import torch_vkml
        import torch
        print(torch_vkml.is_available(), torch.device("vkml").type)
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": autoload},
    )
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.split() == ["True", "vkml"], describe(proc)


def test_visible_devices_filters_and_reorders():
    count = torch_vkml.device_count()
    names = [torch_vkml.device_name(i) for i in range(count)]
    order = [count - 1] if count == 1 else [count - 1, 0]
    proc = run_python(
        """
        import json
        import torch
        import torch_vkml
        n = torch_vkml.device_count()
        print(json.dumps([torch_vkml.device_name(i) for i in range(n)]))
        """,
        env={"TORCH_VKML_VISIBLE_DEVICES": ",".join(map(str, order))},
    )
    assert proc.returncode == 0, describe(proc)
    visible = json.loads(proc.stdout.strip().splitlines()[-1])
    assert visible == [names[i] for i in order]


def test_torch_calls_the_device_modules_lazy_init():
    """torch.vkml._lazy_init is what torch up to 2.11 needs to mark vkml initialised; without
    it torch.accelerator.synchronize() returned there without waiting."""
    proc = run_python(
        """
        import torch, torch_vkml
        calls = []
        lazy_init = torch_vkml._lazy_init
        torch_vkml._lazy_init = lambda: calls.append(1) or lazy_init()
        torch.zeros(2, device="vkml")
        torch.zeros(2, device="vkml")
        print(len(calls))
        """
    )
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.split() == ["1"], describe(proc)
