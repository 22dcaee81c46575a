"""channel_shuffle and unfold_backward (composite/rearrange.cpp) against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    ALL_DTYPES,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    leaf,
    make,
)

pytestmark = pytest.mark.usefixtures("no_fallback")


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_channel_shuffle_transposed_and_grad(dtype):
    x = make((2, 6, 3, 2), dtype)
    assert_close_to_cpu(lambda t: F.channel_shuffle(t, 3), x)
    assert_close_to_cpu(lambda t: F.channel_shuffle(t.transpose(2, 3), 2), x)
    if dtype == torch.float32:
        assert_grads_close_to_cpu(lambda t: F.channel_shuffle(t, 2), x.requires_grad_())


@pytest.mark.parametrize("dim, size, step", [(0, 3, 2), (1, 2, 3), (-1, 4, 1), (1, 5, 5)])
def test_unfold_backward(dim, size, step):
    assert_grads_close_to_cpu(lambda t: t.unfold(dim, size, step) * 1, leaf((7, 6, 5)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_channel_shuffle(dtype):
    x = make((2, 6, 3, 2), dtype)
    for groups in (1, 2, 3, 6):
        assert_close_to_cpu(lambda t, g=groups: F.channel_shuffle(t, g), x)
    assert_close_to_cpu(lambda t: F.channel_shuffle(t.transpose(2, 3), 2), x)
    assert_raises_like_cpu(lambda t: F.channel_shuffle(t, 4), x)


def test_channel_shuffle_grad():
    assert_grads_close_to_cpu(lambda t: F.channel_shuffle(t, 2) * 2, leaf((2, 4, 3)))
