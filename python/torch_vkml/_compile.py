"""torch.compile on vkml: Dynamo's device interface, and graphs that run vkml's own kernels.

Dynamo asks a device interface (``torch._dynamo.device_interface``) for a device's
streams, events, current device and properties; :class:`VkmlInterface` below maps it onto
torch_vkml's API (its streams and events).

Inductor has no code generator for vkml, and torch 2.13 offers no extension point for
"this device has no codegen: run its graphs' aten ops eagerly". Its per-device hooks
(``register_backend_for_device``, ``register_device_op_overrides``, the device module's
``Scheduling``/``PythonWrapperCodegen``) all assume that Inductor lowers the graph into its
loop IR and generates kernels, and its decomposition table splits ops that vkml runs as one
kernel (``_softmax``, ``native_layer_norm``, ``gelu``, ``nll_loss_forward``, batch norm and
their backwards) into many small ones; nor do Dynamo or Inductor pick a backend by
device. So the one patch here wraps Inductor's entry point
``torch._inductor.compile_fx.compile_fx``, which the default backend (``torch.compile(fn)``,
``backend="inductor"``) calls by that name at each compile: a graph that holds a vkml
tensor goes through AOT autograd (functionalisation, the joint forward and backward graph,
the partitioner, as ``backend="aot_eager"``) and its graphs run vkml's eager kernels from
Python, or, where it can record no autograd history (an optimizer step), runs as Dynamo
captured it (``_without_autograd``); every other graph (CPU, CUDA) goes to Inductor with
its arguments untouched.

Importing Dynamo and Inductor takes seconds, and ``import torch`` loads torch_vkml by
itself, so nothing here imports them: the device interface is registered and
``compile_fx`` wrapped right after the module that defines each is first imported
(``_post_import``), or at once where it already is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from . import _device, _event, _memory
from ._post_import import after_import

_DEVICE = "vkml"

# --------------------------------------------------------------------------
# Dynamo's device interface
# --------------------------------------------------------------------------


class _DeviceGuard:
    """``with VkmlInterface.device(i):`` makes device ``i`` current, as ``torch.cuda.device``."""

    def __init__(self, device: int | torch.device | str | None) -> None:
        self.index = None if device is None else _device._index(device)
        self.previous = -1

    def __enter__(self) -> None:
        if self.index is not None:
            self.previous = _exchange_device(self.index)

    def __exit__(self, *exc: object) -> None:
        if self.index is not None:
            _exchange_device(self.previous)


def _exchange_device(index: int) -> int:
    """Make ``index`` current and return the previous one; ``index < 0`` changes nothing."""
    if index < 0:
        return -1
    previous = _device.current_device()
    if index != previous:
        _device.set_device(index)
    return previous


def _current_stream(device: int | torch.device | str | None = None) -> torch.Stream:
    """The device's one in-order stream."""
    return torch.accelerator.current_stream(
        torch.device(_DEVICE, _device._check(_device._index(device)))
    )


class _StreamContext:
    """``with stream(s):`` keeps the work on ``s``: the device's only stream, so nothing changes."""

    def __init__(self, stream: torch.Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


def _make_interface(base: ModuleType) -> type:
    """The interface class, built on ``torch._dynamo.device_interface.DeviceInterface``."""
    properties = base.caching_worker_device_properties
    current = base.caching_worker_current_devices

    class VkmlInterface(base.DeviceInterface):
        device = _DeviceGuard
        Event = _event.Event  # a torch.Event subclass, which Dynamo captures
        Stream = torch.Stream

        class Worker:
            """Device queries for compile workers, answered from what the parent recorded."""

            @staticmethod
            def set_device(device: int) -> None:
                current[_DEVICE] = device

            @staticmethod
            def current_device() -> int:
                return current.get(_DEVICE, _device.current_device())

            @staticmethod
            def get_device_properties(device=None) -> Any:
                index = (
                    VkmlInterface.Worker.current_device()
                    if device is None
                    else _device._index(device)
                )
                if _DEVICE not in properties:
                    properties[_DEVICE] = [
                        _device.get_device_properties(i) for i in range(_device.device_count())
                    ]
                return properties[_DEVICE][index]

        current_device = staticmethod(_device.current_device)
        set_device = staticmethod(_device.set_device)
        exchange_device = staticmethod(_exchange_device)
        maybe_exchange_device = staticmethod(_exchange_device)
        device_count = staticmethod(_device.device_count)
        is_available = staticmethod(_device.is_available)
        stream = staticmethod(_StreamContext)
        current_stream = staticmethod(_current_stream)
        synchronize = staticmethod(_device.synchronize)
        get_device_properties = staticmethod(_device.get_device_properties)
        memory_allocated = staticmethod(_memory.memory_allocated)

        @staticmethod
        def set_stream(stream: torch.Stream) -> None:
            """Each device has one stream: nothing to switch."""

        @staticmethod
        def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
            """Each device has one stream: nothing to switch."""

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return 0

        @staticmethod
        def get_compute_capability(device=None) -> str:
            return ""

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return True

        @classmethod
        def is_dtype_supported(cls, dtype: torch.dtype, including_emulation: bool = False) -> bool:
            if dtype in (torch.float64, torch.complex128):
                return _device.get_device_properties().supports_fp64
            return True

    return VkmlInterface


def _register_interface(module: ModuleType) -> None:
    """Called with ``torch._dynamo.device_interface`` once it is imported."""
    if _DEVICE not in module.device_interfaces:
        module.register_interface_for_device(_DEVICE, _make_interface(module))


# --------------------------------------------------------------------------
# Graphs with vkml tensors: AOT autograd and vkml's eager kernels
# --------------------------------------------------------------------------


def _on_vkml(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == _DEVICE


def _holds_vkml(gm: Any, example_inputs: Any) -> bool:
    """Whether a graph from Dynamo takes, makes or returns a vkml tensor."""
    from torch.utils._pytree import tree_leaves

    if any(_on_vkml(x) for x in tree_leaves(example_inputs)):
        return True
    if isinstance(gm, torch.fx.GraphModule):
        for node in gm.graph.nodes:
            value = node.meta.get("example_value", node.meta.get("val"))
            if value is not None and any(_on_vkml(x) for x in tree_leaves(value)):
                return True
    return False


@functools.cache
def _eager_backend() -> Callable[..., Any]:
    """AOT autograd whose forward and backward graphs run as they are (aten ops, eagerly).

    The partitioner is the default one, which saves for the backward what eager autograd
    saves; Inductor's min-cut partitioner recomputes pointwise ops in the backward, which
    only pays where they are fused into generated kernels.
    """
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.debugging import boxed_nop
    from torch._functorch.partitioners import default_partition

    return aot_autograd(
        fw_compiler=boxed_nop,
        bw_compiler=boxed_nop,
        partition_fn=default_partition,
        keep_inference_input_mutations=True,
    )


def _without_autograd(gm: Any) -> bool:
    """Whether a graph can record no autograd history: traced with grad mode off (Dynamo
    guards it, so it also runs so) and never turning it on.

    Such a graph (an optimizer step, inference under ``no_grad``) runs as Dynamo captured
    it, in-place ops included. Through AOT autograd's functionalisation every state tensor
    an optimizer updates in place would be computed out of place and then copied back (a
    foreach Adam step: 25 dispatches instead of eager's 7); Inductor fuses those copies into
    its generated kernels, which vkml does not have.
    """
    if torch.is_grad_enabled() or not isinstance(gm, torch.fx.GraphModule):
        return False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch._C._set_grad_enabled:
            if not node.args or node.args[0] is not False:
                return False
    return True


def _wrap_compile_fx(module: ModuleType) -> None:
    """Called with ``torch._inductor.compile_fx`` once it is imported."""
    inductor = module.compile_fx
    if getattr(inductor, "_vkml_wrapped", False):
        return

    @functools.wraps(inductor)
    def compile_fx(model_, example_inputs_, *args, **kwargs):
        if _holds_vkml(model_, example_inputs_):
            if _without_autograd(model_):
                return model_.forward
            return _eager_backend()(model_, example_inputs_)
        return inductor(model_, example_inputs_, *args, **kwargs)

    compile_fx._vkml_wrapped = True
    module.compile_fx = compile_fx


# --------------------------------------------------------------------------
# Random ops in activation-checkpointed regions
# --------------------------------------------------------------------------


def _register_rng_prims(module: ModuleType) -> None:
    """Called with ``torch._prims.rng_prims`` once it is imported.

    AOT autograd's partitioner recomputes a checkpointed region (``torch.utils.checkpoint``
    under torch.compile) in the backward, and wraps its random ops (dropout) in
    ``run_and_save_rng_state`` (forward) and ``run_with_rng_state`` (backward) so that the
    recomputation draws the forward's numbers. Those ops know cpu, cuda, hpu and xpu only
    (a table local to each implementation) and raised "Backend not supported for vkml":
    here they save and restore vkml's generator state, as they do CUDA's.
    """
    from torch._C import DispatchKey
    from torch._higher_order_ops import utils as hop_utils

    from . import _random

    def run_and_save(op, *args, **kwargs):
        return _random.get_rng_state(), op(*args, **kwargs)

    def run_with(rng_state, op, *args, **kwargs):
        current = _random.get_rng_state()
        _random.set_rng_state(rng_state.cpu())
        try:
            return op(*args, **kwargs)
        finally:
            _random.set_rng_state(current)

    def on_vkml(args, kwargs) -> bool:
        return module.get_device(args, kwargs) == _DEVICE

    def routed(original, ours, skip):
        @functools.wraps(original)
        def kernel(*args, **kwargs):
            if on_vkml(args[skip:], kwargs):
                return ours(*args, **kwargs)
            return original(*args, **kwargs)

        return kernel

    for hop, ours, skip in (
        (module.run_and_save_rng_state, run_and_save, 1),  # (op, *args)
        (module.run_with_rng_state, run_with, 2),  # (rng_state, op, *args)
    ):
        if DispatchKey.PrivateUse1 not in hop.py_kernels:
            hop.py_impl(DispatchKey.PrivateUse1)(ours)
        backend_select = hop.py_kernels[DispatchKey.BackendSelect]
        hop.py_kernels[DispatchKey.BackendSelect] = routed(backend_select, ours, skip)
    # Under fake tensors the partitioner asks run_and_save_rng_state for a state as well.
    fake = hop_utils.registered_hop_fake_fns[module.run_and_save_rng_state]
    hop_utils.registered_hop_fake_fns[module.run_and_save_rng_state] = routed(fake, run_and_save, 1)


def install() -> None:
    """Registers vkml with Dynamo and routes its graphs past Inductor, when they load."""
    what = "torch.compile support for vkml"
    after_import("torch._dynamo.device_interface", _register_interface, what)
    after_import("torch._inductor.compile_fx", _wrap_compile_fx, what)
    after_import("torch._prims.rng_prims", _register_rng_prims, what)
