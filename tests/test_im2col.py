"""F.unfold / F.fold (im2col / col2im, ops_im2col.cpp), forward and backward, against
the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    FLOAT_DTYPES,
    VKML,
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


def test_unfold_fold_float64():
    """float64 windows and their adjoint in double (F.fold, unfold's backward: the CPU
    route raised NotImplementedError for float64 col2im)."""
    import torch_vkml

    if not torch_vkml.get_device_properties(0).supports_fp64:
        return
    kw = dict(kernel_size=(2, 3), stride=2, padding=1, dilation=(1, 2))
    x = leaf((2, 3, 6, 7), torch.float64)
    assert_grads_close_to_cpu(lambda t: F.unfold(t, **kw), x)
    c = F.unfold(x.detach(), **kw).clone().requires_grad_()
    assert_grads_close_to_cpu(lambda t: F.fold(t, (6, 7), **kw), c)


def test_unfold_fold_errors():
    assert_raises_like_cpu(lambda t: F.unfold(t, 5), make((1, 2, 3, 3)))
    assert_raises_like_cpu(lambda t: F.fold(t, (4, 4), 2), make((1, 7, 9)))


@pytest.mark.parametrize("dtype", [torch.bool, torch.complex64, torch.int32], ids=str)
def test_unfold_of_other_dtypes_moves_elements_on_the_device(dtype):
    """im2col only moves elements: for dtypes without its kernel, a strided view of the
    padded input copied into place (native, no CPU)."""
    x = make((2, 3, 7, 6), torch.float32)
    x = (
        (x > 0)
        if dtype == torch.bool
        else x.to(dtype)
        if dtype != torch.complex64
        else torch.complex(x, -x)
    )
    kw = dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 1))
    got = F.unfold(x.to(VKML), **kw).cpu()
    if dtype == torch.int32:  # the CPU has no integer im2col: compare with float
        want = F.unfold(x.float(), **kw).to(dtype)
    else:
        want = F.unfold(x, **kw)
    assert torch.equal(got, want)
    assert torch.equal(
        F.unfold(x[0].to(VKML), 2).cpu(),
        (F.unfold(x[0].float(), 2) if dtype == torch.int32 else F.unfold(x[0], 2)).to(dtype),
    )
