"""max_unpool1d / 2d / 3d (composite/unpool.cpp), forward and backward, against the CPU."""

import pytest
import torch.nn.functional as F
from conftest import assert_close_to_cpu, assert_grads_close_to_cpu, make

pytestmark = pytest.mark.usefixtures("no_fallback")


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool(dims):
    shape = (2, 3) + (6,) * dims
    pool = getattr(F, f"max_pool{dims}d")
    unpool = getattr(F, f"max_unpool{dims}d")
    x = make(shape, unique=True)
    pooled, indices = pool(x, 2, return_indices=True)

    def fn(p, i):
        return unpool(p, i, 2, output_size=x.shape[2:])

    assert_grads_close_to_cpu(fn, pooled.requires_grad_(), indices)


def test_max_unpool_unbatched_and_bad_index():
    x = make((3, 4, 4), unique=True)
    pooled, indices = F.max_pool2d(x, 2, return_indices=True)
    assert_close_to_cpu(lambda p, i: F.max_unpool2d(p, i, 2), pooled, indices)
    bad = indices.clone()
    bad[0, 0, 0] = 100
    with pytest.raises((RuntimeError, IndexError)):
        F.max_unpool2d(pooled.to("vkml"), bad.to("vkml"), 2).cpu()
