"""torch.segment_reduce and its backward against the CPU: every reduction, lengths and
offsets, inner axes, initial values, empty segments, ties, zeros, and the CPU's errors."""

import pytest
import torch
from conftest import (
    VKML,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    check_raises_later,
    leaf,
    make,
)

pytestmark = pytest.mark.usefixtures("no_fallback")

# "amax" and "amin" are the CPU's other names for max and min (PyG passes them).
REDUCTIONS = ["sum", "mean", "max", "min", "prod", "amax", "amin"]


@pytest.mark.parametrize("initial", [None, 0.5])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_lengths_1d(reduce, initial):
    lengths = torch.tensor([2, 0, 3, 1, 4])  # an empty segment among them

    def fn(x, lens):
        return torch.segment_reduce(x, reduce, lengths=lens, initial=initial)

    assert_grads_close_to_cpu(fn, leaf(10), lengths, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_offsets_on_an_inner_axis(reduce):
    """Data [2, 7, 3] reduced along axis 1 with per-row offsets; the second row's offsets
    start past 0 and end short, so some elements belong to no segment."""
    offsets = torch.tensor([[0, 3, 3, 7], [1, 2, 5, 6]], dtype=torch.int32)

    def fn(x, offs):
        return torch.segment_reduce(x, reduce, offsets=offs, axis=1, unsafe=True)

    assert_grads_close_to_cpu(fn, leaf((2, 7, 3)), offsets, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("reduce", ["max", "min", "prod"])
def test_ties_zeros_and_nan(reduce):
    """Tied maxima share the gradient; a segment with one zero sends the product of the
    others to it, two zeros send nothing; NaN propagates."""
    x = torch.tensor([1.0, 3.0, 3.0, 0.0, 2.0, 0.0, 0.0, 5.0, -1.0, -1.0, float("nan"), 4.0])
    lengths = torch.tensor([3, 2, 3, 2, 2])

    def fn(v, lens):
        return torch.segment_reduce(v, reduce, lengths=lens)

    assert_grads_close_to_cpu(fn, x.requires_grad_(), lengths, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_float_dtypes(dtype):
    lengths = torch.tensor([[3, 5], [8, 0]])
    x = make((2, 8, 4), dtype, low=0.5, high=1.5)
    for reduce in REDUCTIONS:
        expected = torch.segment_reduce(x, reduce, lengths=lengths, axis=1)
        actual = torch.segment_reduce(x.to(VKML), reduce, lengths=lengths.to(VKML), axis=1)
        tol = 1e-12 if dtype == torch.float64 else 2e-2
        torch.testing.assert_close(
            actual.cpu(), expected, atol=tol, rtol=tol, equal_nan=True, msg=reduce
        )


def test_training_with_segment_means():
    """A segment-mean pooling layer (graph readout) trains as on the CPU."""
    torch.manual_seed(0)
    cpu = torch.nn.Linear(6, 4)
    vk = torch.nn.Linear(6, 4).to(VKML)
    vk.load_state_dict(cpu.state_dict())
    x, lengths = torch.randn(20, 6), torch.tensor([5, 7, 8])
    for model, dev in ((cpu, "cpu"), (vk, VKML)):
        pooled = torch.segment_reduce(model(x.to(dev)), "mean", lengths=lengths.to(dev))
        pooled.square().sum().backward()
    torch.testing.assert_close(vk.weight.grad.cpu(), cpu.weight.grad, atol=1e-5, rtol=1e-5)


def test_errors_like_cpu():
    x = make(7)
    assert_raises_like_cpu(lambda v: torch.segment_reduce(v, "sum"), x)  # neither given
    assert_raises_like_cpu(
        lambda v, lens: torch.segment_reduce(v, "median", lengths=lens), x, torch.tensor([3, 4])
    )
    assert_raises_like_cpu(  # axis not the last dim of lengths
        lambda v, lens: torch.segment_reduce(v, "sum", lengths=lens, axis=1),
        make((2, 7)),
        torch.tensor([3, 4]),
    )
    assert_raises_like_cpu(  # integer data
        lambda v, lens: torch.segment_reduce(v, "sum", lengths=lens),
        make(7, torch.int64),
        torch.tensor([3, 4]),
    )


@pytest.mark.parametrize(
    "lengths,unsafe", [([3, 2], False), ([3, -1, 5], False), ([3, -1, 5], True)]
)
def test_bad_lengths_raise_at_the_next_read(lengths, unsafe):
    """Lengths that do not sum to the axis' size, or a negative length (an error even
    with unsafe, in other words): checked on the device (no host wait) and raised at the
    next read in the CPU's words."""
    check_raises_later(
        lambda v, lens: torch.segment_reduce(v, "sum", lengths=lens, unsafe=unsafe),
        make(7),
        torch.tensor(lengths),
    )


def test_decreasing_offsets_raise_at_the_next_read():
    check_raises_later(
        lambda v, offs: torch.segment_reduce(v, "sum", offsets=offs),
        make(7),
        torch.tensor([0, 3, 2, 7]),
    )


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_tied_gradients_as_cpu_and_cuda(reduce):
    """Ties share a positive gradient and each keep a negative one whole: what PyTorch's
    CPU and CUDA kernels compute (they divide only gradients above zero)."""
    x = torch.tensor([2.0, 2.0, 2.0, 7.0, 7.0])
    lengths, grad = torch.tensor([3, 2]), torch.tensor([0.9, -0.6])
    grads = []
    for dev in ("cpu", VKML):
        v = x.to(dev, copy=True).requires_grad_()
        torch.segment_reduce(v, reduce, lengths=lengths.to(dev)).backward(grad.to(dev))
        grads.append(v.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], atol=0, rtol=0)
    torch.testing.assert_close(grads[0], torch.tensor([0.3, 0.3, 0.3, -0.6, -0.6]))
