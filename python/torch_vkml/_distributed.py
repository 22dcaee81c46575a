"""torch.distributed on vkml tensors: the ``vkml_gloo`` c10d backend.

The backend (csrc/aten/distributed.cpp) stages vkml tensors through host buffers into a
``ProcessGroupGloo`` that the creator below builds from the store, rank, size and timeout
torch.distributed hands it. It is registered for the ``vkml`` device, so
``dist.init_process_group()`` with no backend argument (when ``torch.accelerator`` is
vkml), ``backend="vkml_gloo"`` and ``backend="cpu:gloo,vkml:vkml_gloo"`` all use it, and
``dist.get_default_backend_for_device("vkml")`` names it.

Collectives are synchronous in this slice: each copies to the host, runs Gloo, waits and
copies back before it returns (``async_op=True`` gets a Work that is already completed).

``import torch`` already imports torch.distributed, so registering here costs no import
time; nothing is registered where torch was built without distributed support.
"""

from __future__ import annotations

from typing import Any

BACKEND_NAME = "vkml_gloo"


def _create_backend(dist_opts: Any, backend_options: Any = None) -> Any:  # noqa: ARG001
    """The ``extended_api`` creator: a ProcessGroupGloo wrapped in the staging backend."""
    from torch.distributed import ProcessGroupGloo

    from . import _C

    gloo = ProcessGroupGloo(
        dist_opts.store, dist_opts.group_rank, dist_opts.group_size, timeout=dist_opts.timeout
    )
    gloo.options.global_ranks_in_group = dist_opts.global_ranks_in_group
    gloo.options.group_name = dist_opts.group_id
    return _C._make_staging_backend(gloo)


def _fix_default_backend(helper: Any) -> Any:
    """Wrap ``_new_process_group_helper`` so a group using vkml_gloo has a default backend.

    torch 2.13 sets the ProcessGroup's default backend type to GLOO when no backend is
    given (the accelerator's default is used) even when the only backend registered is a
    custom one, and for "cpu:gloo,vkml:vkml_gloo" compares the upper-case plugin name with
    lower-case backend names and sets none; either way getDefaultBackend() then fails,
    e.g. in DDP's constructor ("Could not find backend type 1 ..."). Here the default
    becomes the registered custom backend (ours) where the chosen type has no backend.
    """
    import functools

    import torch
    from torch.distributed import ProcessGroup

    @functools.wraps(helper)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = helper(*args, **kwargs)
        pg = result[0] if isinstance(result, tuple) else result
        if isinstance(pg, ProcessGroup):
            try:
                ours = pg._get_backend(torch.device("vkml")).name() == BACKEND_NAME
            except RuntimeError:
                ours = False
            if ours:
                try:
                    pg._get_backend(torch.device("cpu"))
                    has_cpu = True
                except RuntimeError:
                    has_cpu = False
                # the default backend type must name a backend registered in the group
                name = pg._get_backend_name().lower()
                if name == "undefined" or (name == "gloo" and not has_cpu):
                    pg._set_default_backend(ProcessGroup.BackendType.CUSTOM)
        return result

    wrapper._vkml_default_backend = True  # type: ignore[attr-defined]
    return wrapper


def install() -> None:
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        return
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(
        BACKEND_NAME, _create_backend, extended_api=True, devices=["vkml"]
    )
    c10d = dist.distributed_c10d
    if not getattr(c10d._new_process_group_helper, "_vkml_default_backend", False):
        c10d._new_process_group_helper = _fix_default_backend(c10d._new_process_group_helper)


__all__ = ["BACKEND_NAME", "install"]
