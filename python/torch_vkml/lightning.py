"""PyTorch Lightning on vkml: an accelerator and two strategies, registered on import.

    import lightning as L
    import torch_vkml.lightning  # accelerator "vkml", strategies "single_vkml", "ddp_vkml"

    trainer = L.Trainer(accelerator="vkml", strategy="single_vkml", precision="16-mixed")
    fabric = L.Fabric(accelerator="vkml", strategy="single_vkml", precision="bf16-mixed")

Lightning picks a strategy for the accelerators it knows; for any other accelerator on one
device it picks a CPU one, and its "ddp" wraps the model under a CUDA stream, so the
strategy is named: "single_vkml" or "ddp_vkml" (whose process group takes vkml's c10d
backend).

Lightning builds its mixed-precision plugin for CUDA unless the accelerator is the CPU or
MPS, so AMP would autocast for "cuda" and vkml's matmuls would stay float32. The vkml
strategies remake such a plugin for "vkml", with a vkml GradScaler for float16.

Both the Trainer and Fabric are served, from either distribution: ``lightning``
(``lightning.pytorch``, ``lightning.fabric``) or ``pytorch_lightning`` and
``lightning_fabric``. The registrations go into each package already imported, or the
first importable; the classes exported here derive from the first package's.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

import torch

from . import _device, _memory

# (the Trainer's packages, Fabric's packages), each in order of preference
_TRAINERS = ("lightning.pytorch", "pytorch_lightning")
_FABRICS = ("lightning.fabric", "lightning_fabric")

# The devices Lightning last parsed for a vkml accelerator. Lightning parses `devices`
# (a static call) just before it builds the strategy named by a string, and gives a
# single-device strategy nothing of it; "single_vkml" takes its device from here.
_parsed_devices: list[torch.device] = []


def _parse_devices(devices: int | str | list[int]) -> list[int]:
    """Lightning's ``devices`` argument (a count, -1 for all, "0,2", or indices) as
    device indices, each checked against the devices present."""
    count = _device.device_count()
    if isinstance(devices, str):
        devices = devices.strip()
        if "," in devices:
            devices = [int(d) for d in devices.split(",") if d.strip()]
        else:
            devices = int(devices)
    if isinstance(devices, int):
        if devices == -1:
            devices = count
        if devices < 0:
            raise ValueError(f"devices={devices}: expected a count, -1 or device indices")
        if devices > count:
            raise ValueError(f"devices={devices} but this machine has {count} vkml device(s)")
        return list(range(devices))
    indices = [int(d) for d in devices]
    for d in indices:
        if not 0 <= d < count:
            raise ValueError(f"vkml device {d} does not exist: this machine has {count}")
    return indices


class _VkmlAcceleratorMethods:
    """What Lightning's Accelerator (the Trainer's and Fabric's) asks of a device type."""

    _misconfiguration: type[Exception] = RuntimeError

    def setup_device(self, device: torch.device) -> None:
        if device.type != "vkml":
            raise self._misconfiguration(
                f"The vkml accelerator got device {device}: Lightning chooses a CPU "
                "strategy for accelerators it does not know; pass strategy='single_vkml'"
            )
        torch.accelerator.set_device_index(device.index or 0)

    def teardown(self) -> None:
        _memory.empty_cache()

    def get_device_stats(self, device: Any) -> dict[str, Any]:
        return _memory.memory_stats(device)

    @staticmethod
    def parse_devices(devices: int | str | list[int]) -> list[int]:
        return _parse_devices(devices)

    @staticmethod
    def get_parallel_devices(devices: int | str | list[int]) -> list[torch.device]:
        _parsed_devices[:] = [torch.device("vkml", i) for i in _parse_devices(devices)]
        return list(_parsed_devices)

    @staticmethod
    def auto_device_count() -> int:
        return _device.device_count()

    @staticmethod
    def is_available() -> bool:
        return _device.is_available()

    @staticmethod
    def name() -> str:
        return "vkml"

    @classmethod
    def register_accelerators(cls, registry: Any) -> None:
        registry.register("vkml", cls, description=cls.__name__, override=True)


def _for_vkml(plugin: Any, mixed_precision: type) -> Any:
    """The mixed-precision plugin Lightning made for CUDA, remade for vkml (one the user
    made for another device stays)."""
    if isinstance(plugin, mixed_precision) and plugin.device == "cuda":
        return mixed_precision(plugin.precision, device="vkml")
    return plugin


def _precision_fixed(base: type, attribute: str, mixed_precision: type) -> property:
    """base's precision-plugin property (the Trainer's `precision_plugin`, Fabric's
    `precision`), remaking a CUDA mixed-precision plugin as it is set."""
    inherited = getattr(base, attribute)

    def put(self: Any, plugin: Any) -> None:
        inherited.fset(self, _for_vkml(plugin, mixed_precision))

    return property(inherited.fget, put)


def _define(package: ModuleType, trainer: bool) -> dict[str, type]:
    def sub(name: str) -> ModuleType:
        return importlib.import_module(f"{package.__name__}.{name}")

    accelerators, strategies = sub("accelerators"), sub("strategies")
    mixed_precision = sub("plugins.precision").MixedPrecision
    precision_attribute = "precision_plugin" if trainer else "precision"
    misconfiguration = sub("utilities.exceptions").MisconfigurationException

    class VkmlAccelerator(_VkmlAcceleratorMethods, accelerators.Accelerator):
        """Lightning's accelerator for vkml devices."""

        _misconfiguration = misconfiguration

    class SingleVkmlStrategy(strategies.SingleDeviceStrategy):
        """One vkml device: ``device``, else the one the Trainer's ``devices`` picks, else
        the current one; AMP on vkml."""

        def __init__(self, device: Any = None, **kwargs: Any) -> None:
            if device is None and len(_parsed_devices) > 1:
                raise misconfiguration(
                    f"strategy 'single_vkml' runs on one device, but devices names "
                    f"{len(_parsed_devices)}: use strategy='ddp_vkml'"
                )
            if device is None:
                current = torch.accelerator.current_device_index()
                device = _parsed_devices[0] if _parsed_devices else torch.device("vkml", current)
            super().__init__(device=device, **kwargs)

    class DDPVkmlStrategy(strategies.DDPStrategy):
        """Lightning's DDP over vkml devices, AMP on vkml."""

        def _wrap(self, module: torch.nn.Module) -> Any:
            # Lightning's DDP wraps the model under a torch.cuda stream whenever the
            # device is not the CPU; vkml's own streams order DDP's initial broadcast.
            ids = self.determine_ddp_device_ids() if trainer else self._determine_ddp_device_ids()
            return torch.nn.parallel.DistributedDataParallel(
                module=module, device_ids=ids, **self._ddp_kwargs
            )

    if trainer:
        DDPVkmlStrategy._setup_model = DDPVkmlStrategy._wrap
    else:
        DDPVkmlStrategy.setup_module = DDPVkmlStrategy._wrap
    for strategy in (SingleVkmlStrategy, DDPVkmlStrategy):
        fixed = _precision_fixed(strategy.__mro__[1], precision_attribute, mixed_precision)
        setattr(strategy, precision_attribute, fixed)

    # The Trainer's registries and Fabric's have different names.
    accelerator_registry = getattr(
        accelerators, "AcceleratorRegistry" if trainer else "ACCELERATOR_REGISTRY"
    )
    strategy_registry = getattr(strategies, "StrategyRegistry" if trainer else "STRATEGY_REGISTRY")
    VkmlAccelerator.register_accelerators(accelerator_registry)
    for name, strategy in (("single_vkml", SingleVkmlStrategy), ("ddp_vkml", DDPVkmlStrategy)):
        strategy.strategy_name = name
        strategy_registry.register(name, strategy, description=strategy.__doc__, override=True)
    return {
        "VkmlAccelerator": VkmlAccelerator,
        "SingleVkmlStrategy": SingleVkmlStrategy,
        "DDPVkmlStrategy": DDPVkmlStrategy,
    }


def _packages(names: tuple[str, ...]) -> list[ModuleType]:
    loaded = [sys.modules[name] for name in names if name in sys.modules]
    if loaded:
        return loaded
    for name in names:
        try:
            return [importlib.import_module(name)]
        except ImportError:
            continue
    return []


_trainers = [_define(p, trainer=True) for p in _packages(_TRAINERS)]
# After the Trainer's: importing it imports its Fabric, which is then served too.
_fabrics = [_define(p, trainer=False) for p in _packages(_FABRICS)]
if not _trainers and not _fabrics:
    raise ImportError("torch_vkml.lightning needs Lightning: pip install lightning")

__all__: list[str] = []
if _trainers:
    # The Trainer's: VkmlAccelerator, SingleVkmlStrategy, DDPVkmlStrategy.
    globals().update(_trainers[0])
    __all__ += list(_trainers[0])
if _fabrics:
    # Fabric's: FabricVkmlAccelerator, FabricSingleVkmlStrategy, FabricDDPVkmlStrategy.
    globals().update({"Fabric" + k: v for k, v in _fabrics[0].items()})
    __all__ += ["Fabric" + k for k in _fabrics[0]]
