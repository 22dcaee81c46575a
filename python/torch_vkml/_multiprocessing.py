"""vkml tensors through torch.multiprocessing queues and pipes.

torch.multiprocessing pickles a CUDA tensor as an IPC handle to the same device memory,
and any other tensor by sharing its storage's CPU memory, which a vkml storage has not:
the pickler raised in the queue's feeder thread, and the receiving process waited
forever. A vkml tensor now travels as a copy, its bytes inside the message (so the
sender may exit before the receiver reads it, which shared memory does not allow),
rebuilt on the receiver's vkml device of the same index (requires_grad and Parameter
kept). Unlike CUDA's, the two processes then hold separate tensors: an in-place update
in one is not seen by the other.
"""

from __future__ import annotations

import io
from typing import Any

import torch

_DEVICE = "vkml"


def _rebuild(data: bytes, index: int, requires_grad: bool, parameter: bool) -> Any:
    host = torch.load(io.BytesIO(data), weights_only=True)
    tensor = host.to(torch.device(_DEVICE, index))
    if parameter:
        return torch.nn.Parameter(tensor, requires_grad=requires_grad)
    return tensor.requires_grad_(requires_grad)


def install() -> None:
    """Routes vkml tensors past torch.multiprocessing's sharing reducer."""
    from multiprocessing.reduction import ForkingPickler

    from torch.multiprocessing import reductions

    original = reductions.reduce_tensor

    def reduce_tensor(tensor: torch.Tensor) -> Any:
        if tensor.device.type != _DEVICE:
            return original(tensor)
        if tensor.requires_grad and not tensor.is_leaf:
            raise RuntimeError(  # what torch.multiprocessing says of any device's tensor
                "Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                "since autograd does not support crossing process boundaries.  "
                "If you just want to transfer the data, call detach() on the tensor "
                "before serializing (e.g., putting it on the queue)."
            )
        data = io.BytesIO()
        torch.save(tensor.detach().cpu(), data)
        parameter = isinstance(tensor, torch.nn.Parameter)
        return (
            _rebuild,
            (data.getvalue(), tensor.device.index or 0, tensor.requires_grad, parameter),
        )

    reducers = ForkingPickler._extra_reducers
    for cls, reducer in list(reducers.items()):
        if reducer is original:
            reducers[cls] = reduce_tensor
