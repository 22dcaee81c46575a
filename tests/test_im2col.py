"""F.unfold / F.fold (im2col / col2im, ops_im2col.cpp), forward and backward, against
the CPU."""

import pytest
import torch.nn.functional as F
from conftest import (
    FLOAT_DTYPES,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    dtype_id,
    leaf,
    make,
)

pytestmark = pytest.mark.usefixtures("no_fallback")


# ------------------------------------------------------- unfold / fold


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=3),
        dict(kernel_size=(2, 3), stride=2, padding=1),
        dict(kernel_size=2, dilation=2, padding=(0, 1), stride=(1, 2)),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_unfold_fold(kw, dtype):
    x = leaf((2, 3, 6, 7), dtype)
    assert_grads_close_to_cpu(lambda t: F.unfold(t, **kw), x)
    assert_close_to_cpu(lambda t: F.unfold(t[0].mT, **kw), x)  # unbatched, non-contiguous
    cols = F.unfold(x.detach(), **kw)
    c = cols.clone().requires_grad_()
    assert_grads_close_to_cpu(lambda t: F.fold(t, (6, 7), **kw), c)
    assert_close_to_cpu(lambda t: F.fold(t[0], (6, 7), **kw), c)


def test_unfold_fold_errors():
    assert_raises_like_cpu(lambda t: F.unfold(t, 5), make((1, 2, 3, 3)))
    assert_raises_like_cpu(lambda t: F.fold(t, (4, 4), 2), make((1, 7, 9)))
