"""PyTorch Lightning on vkml: an accelerator and two strategies, registered on import.

    import lightning as L
    import torch_vkml.lightning  # accelerator "vkml", strategies "single_vkml", "ddp_vkml"

    trainer = L.Trainer(accelerator="vkml", strategy="single_vkml", precision="16-mixed")

Lightning picks a strategy for the accelerators it knows; for any other accelerator on one
device it picks a CPU one, and its "ddp" wraps the model under a CUDA stream, so the
strategy is named: "single_vkml" or "ddp_vkml" (whose process group takes vkml's c10d
backend).

Lightning builds its mixed-precision plugin for CUDA unless the accelerator is the CPU or
MPS, so AMP would autocast for "cuda" and vkml's matmuls would stay float32. The vkml
strategies remake such a plugin for "vkml", with a vkml GradScaler for float16.

Both packages are served: ``lightning`` (``lightning.pytorch``) and ``pytorch_lightning``.
The registrations go into each one already imported, or the first importable; the classes
here derive from that first package's.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

import torch

from . import _device, _memory

_PACKAGES = ("lightning.pytorch", "pytorch_lightning")


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


def _vkml_precision(plugin: Any, mixed_precision: type) -> Any:
    """The mixed-precision plugin Lightning made for CUDA, remade for vkml (one the user
    made for another device stays)."""
    if isinstance(plugin, mixed_precision) and plugin.device == "cuda":
        return mixed_precision(plugin.precision, device="vkml")
    return plugin


def _define(pl: ModuleType) -> dict[str, type]:
    accelerators = importlib.import_module(pl.__name__ + ".accelerators")
    strategies = importlib.import_module(pl.__name__ + ".strategies")
    mixed_precision = importlib.import_module(pl.__name__ + ".plugins.precision").MixedPrecision
    exceptions = importlib.import_module(pl.__name__ + ".utilities.exceptions")

    class VkmlAccelerator(accelerators.Accelerator):
        """Lightning's accelerator for vkml devices."""

        def setup_device(self, device: torch.device) -> None:
            if device.type != "vkml":
                raise exceptions.MisconfigurationException(
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
            return [torch.device("vkml", i) for i in _parse_devices(devices)]

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
            registry.register(cls.name(), cls, description=cls.__name__, override=True)

    class SingleVkmlStrategy(strategies.SingleDeviceStrategy):
        """One vkml device (the current one unless ``device`` says), AMP on vkml."""

        strategy_name = "single_vkml"

        def __init__(self, device: Any = None, **kwargs: Any) -> None:
            if device is None:
                device = torch.device("vkml", torch.accelerator.current_device_index())
            super().__init__(device=device, **kwargs)

        @property
        def precision_plugin(self) -> Any:
            return super().precision_plugin

        @precision_plugin.setter
        def precision_plugin(self, plugin: Any) -> None:
            self._precision_plugin = _vkml_precision(plugin, mixed_precision)

    class DDPVkmlStrategy(strategies.DDPStrategy):
        """Lightning's DDP over vkml devices, AMP on vkml."""

        strategy_name = "ddp_vkml"

        def _setup_model(self, model: torch.nn.Module) -> Any:
            # Lightning's DDP wraps the model under a torch.cuda stream whenever the
            # device is not the CPU; vkml's own streams order DDP's initial broadcast.
            device_ids = self.determine_ddp_device_ids()
            return torch.nn.parallel.DistributedDataParallel(
                module=model, device_ids=device_ids, **self._ddp_kwargs
            )

        @property
        def precision_plugin(self) -> Any:
            return super().precision_plugin

        @precision_plugin.setter
        def precision_plugin(self, plugin: Any) -> None:
            self._precision_plugin = _vkml_precision(plugin, mixed_precision)

    accelerators.AcceleratorRegistry.register(
        "vkml", VkmlAccelerator, description=VkmlAccelerator.__name__, override=True
    )
    for cls in (SingleVkmlStrategy, DDPVkmlStrategy):
        strategies.StrategyRegistry.register(
            cls.strategy_name, cls, description=cls.__doc__, override=True
        )
    return {
        "VkmlAccelerator": VkmlAccelerator,
        "SingleVkmlStrategy": SingleVkmlStrategy,
        "DDPVkmlStrategy": DDPVkmlStrategy,
    }


def _packages() -> list[ModuleType]:
    loaded = [sys.modules[name] for name in _PACKAGES if name in sys.modules]
    if loaded:
        return loaded
    for name in _PACKAGES:
        try:
            return [importlib.import_module(name)]
        except ImportError:
            continue
    raise ImportError("torch_vkml.lightning needs Lightning: pip install lightning")


_defined = [_define(pl) for pl in _packages()]
VkmlAccelerator = _defined[0]["VkmlAccelerator"]
SingleVkmlStrategy = _defined[0]["SingleVkmlStrategy"]
DDPVkmlStrategy = _defined[0]["DDPVkmlStrategy"]

__all__ = ["DDPVkmlStrategy", "SingleVkmlStrategy", "VkmlAccelerator"]
