"""View ops: values, strides, and storage sharing with the base tensor."""

import pytest
import torch
from conftest import (
    ALL_DTYPES,
    VKML,
    assert_close_to_cpu,
    assert_raises_like_cpu,
    assert_same,
    dtype_id,
    make,
)

pytestmark = pytest.mark.usefixtures("no_fallback")

# name -> (base shape, view function, whether the view can be written)
VIEWS = {
    "view": ((4, 6), lambda x: x.view(3, 8), True),
    "view_flat": ((4, 6), lambda x: x.view(-1), True),
    "view_3d": ((4, 6), lambda x: x.view(2, 3, 4), True),
    "view_dtype": ((4, 6), lambda x: x.view(torch.int32), True),
    "reshape": ((4, 6), lambda x: x.reshape(6, -1), True),
    "transpose": ((4, 6), lambda x: x.transpose(0, 1), True),
    "transpose_3d": ((2, 3, 4), lambda x: x.transpose(0, 2), True),
    "permute": ((2, 3, 4), lambda x: x.permute(2, 0, 1), True),
    "t": ((4, 6), lambda x: x.t(), True),
    "mT": ((2, 3, 4), lambda x: x.mT, True),
    "movedim": ((2, 3, 4), lambda x: x.movedim(0, -1), True),
    "slice_steps": ((5, 7), lambda x: x[1:4:2, ::3], True),
    "slice_last": ((5, 7), lambda x: x[..., -1], True),
    "slice_tail": ((5, 7), lambda x: x[-3:], True),
    "slice_newaxis": ((5, 7), lambda x: x[:, None, 1:], True),
    "expand": ((3, 1), lambda x: x.expand(3, 4), False),
    "expand_new_dims": ((4,), lambda x: x.expand(2, 3, 4), False),
    "as_strided": ((16,), lambda x: x.as_strided((3, 3), (4, 1), 1), True),
    "as_strided_overlap": ((16,), lambda x: x.as_strided((3, 3), (1, 1)), False),
    "unsqueeze": ((4, 6), lambda x: x.unsqueeze(0), True),
    "unsqueeze_last": ((4, 6), lambda x: x.unsqueeze(-1), True),
    "squeeze": ((1, 4, 1, 6), lambda x: x.squeeze(), True),
    "squeeze_dim": ((1, 4, 1, 6), lambda x: x.squeeze(2), True),
    "squeeze_noop": ((4, 6), lambda x: x.squeeze(0), True),
    "narrow": ((4, 6), lambda x: x.narrow(1, 2, 3), True),
    "select": ((4, 6), lambda x: x.select(0, 2), True),
    "select_neg": ((4, 6), lambda x: x.select(1, -1), True),
    "index_int": ((4, 6), lambda x: x[2], True),
    "flatten": ((2, 3, 4), lambda x: x.flatten(), True),
    "flatten_from_1": ((2, 3, 4), lambda x: x.flatten(1), True),
    "diagonal": ((4, 6), lambda x: x.diagonal(), True),
    "diagonal_offset": ((4, 6), lambda x: x.diagonal(1), True),
    "chunk": ((4, 6), lambda x: x.chunk(3, dim=1), True),
    "chunk_uneven": ((7, 3), lambda x: x.chunk(4), True),
    "split": ((5, 3), lambda x: x.split(2), True),
    "split_sizes": ((4, 6), lambda x: x.split([1, 3, 2], dim=1), True),
    "unbind": ((4, 6), lambda x: x.unbind(1), True),
}


def _pattern(shape, dtype, offset):
    values = torch.arange(offset, offset + torch.Size(shape).numel()).reshape(shape)
    return (values % 2).bool() if dtype == torch.bool else values.to(dtype)


@pytest.mark.parametrize("name", list(VIEWS))
def test_view(name):
    shape, view_fn, writable = VIEWS[name]
    base_cpu = make(shape, torch.float32)
    base_vk = base_cpu.to(VKML)
    out_cpu, out_vk = view_fn(base_cpu), view_fn(base_vk)
    assert_same(out_vk, out_cpu)
    if isinstance(out_cpu, torch.Tensor):
        out_cpu, out_vk = (out_cpu,), (out_vk,)
    for i, (v_cpu, v_vk) in enumerate(zip(out_cpu, out_vk, strict=True)):
        # same view metadata as the CPU, over the same storage as the base
        assert v_vk.stride() == v_cpu.stride()
        assert v_vk.storage_offset() == v_cpu.storage_offset()
        assert v_vk._is_view() == v_cpu._is_view()
        assert v_vk.untyped_storage().data_ptr() == base_vk.untyped_storage().data_ptr()
        if writable:
            # writing through the view changes the base
            src = _pattern(v_cpu.shape, v_cpu.dtype, offset=100 * (i + 1))
            v_cpu.copy_(src)
            v_vk.copy_(src.to(VKML))
    # and materialising the view gives the same values as on the CPU
    assert_same(tuple(v.contiguous() for v in out_vk), tuple(v.contiguous() for v in out_cpu))
    assert_same(base_vk, base_cpu)


@pytest.mark.parametrize("dtype", ALL_DTYPES + [torch.uint8], ids=dtype_id)
@pytest.mark.parametrize(
    "view_fn",
    [
        lambda x: x.t(),
        lambda x: x[1::2, ::3],
        lambda x: x.reshape(2, 3, 8).permute(1, 2, 0),
        lambda x: x[:, 5:6].expand(6, 4),
        lambda x: x.as_strided((4, 4), (1, 2), 3),
    ],
    ids=["transposed", "stepped", "permuted", "expanded", "as_strided"],
)
def test_materialise(view_fn, dtype):
    x = make((6, 8), dtype)
    _, out = assert_close_to_cpu(lambda t: view_fn(t).contiguous(), x)
    assert out.is_contiguous()
    assert_close_to_cpu(lambda t: view_fn(t).clone(), x)
    assert_close_to_cpu(lambda t: view_fn(t).reshape(-1), x)


def test_contiguous_of_contiguous_is_self():
    x = torch.ones(3, 4, device=VKML)
    assert x.contiguous() is x


def test_reshape_and_flatten_copy_when_needed():
    x_cpu = make((4, 6))
    x_vk = x_cpu.to(VKML)
    for fn in (lambda t: t.t().reshape(-1), lambda t: t.t().flatten()):
        out_cpu, out_vk = fn(x_cpu), fn(x_vk)
        assert_same(out_vk, out_cpu)
        assert out_vk.is_contiguous()
        ptr = out_vk.untyped_storage().data_ptr()
        assert ptr != x_vk.untyped_storage().data_ptr()
        out_vk.fill_(0)  # a copy: the base is unchanged
    assert_same(x_vk, x_cpu)


def test_view_of_noncontiguous_is_an_error():
    assert_raises_like_cpu(lambda t: t.t().view(-1), make((4, 6)))


def test_chained_views_write_through():
    base_cpu = torch.zeros(4, 6, 8)
    base_vk = base_cpu.to(VKML)
    for base in (base_cpu, base_vk):
        v = base.permute(2, 0, 1)[1::3, :, 2:5].transpose(0, 2).select(1, 3)
        v.copy_(torch.arange(v.numel(), dtype=torch.float32).reshape(v.shape))
    assert_same(base_vk, base_cpu)
