"""torch._grouped_mm (F.grouped_mm) on vkml (ops_grouped_mm.cpp, gemm.comp's GEMM_GROUP_*):
a product per group, the groups given by int32 offsets on the device, as mixture-of-experts
layers run their experts. Compared with per-group products in float64 on the CPU (the
CPU's own _grouped_mm has no backward for several layouts); bad input raises as on CPU."""

import pytest
import torch
from conftest import assert_raises_like_cpu, dtype_id, make

import torch_vkml

VKML = "vkml"

pytestmark = pytest.mark.usefixtures("no_fallback")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Each product accumulates in fp32 and rounds once to the output dtype: the reference,
# rounded likewise, is within an ulp or two.
TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.float16: dict(atol=2e-3, rtol=2e-3),
    torch.bfloat16: dict(atol=2e-2, rtol=1.6e-2),
}


def _starts_ends(offs):
    ends = offs.tolist()
    return zip([0] + ends[:-1], ends, strict=True)


def _reference(a, b, offs):
    """The grouped product in float64, per group; zeros outside every group."""
    a, b = a.double(), b.double()
    if offs is None:
        return a @ b
    if a.dim() == 2 and b.dim() == 3:  # groups of A's rows, B[g] each
        out = torch.zeros(a.shape[0], b.shape[-1], dtype=torch.float64)
        for g, (s, e) in enumerate(_starts_ends(offs)):
            out[s:e] = a[s:e] @ b[g]
    elif a.dim() == 3:  # groups of B's columns, A[g] each
        out = torch.zeros(a.shape[1], b.shape[-1], dtype=torch.float64)
        for g, (s, e) in enumerate(_starts_ends(offs)):
            out[:, s:e] = a[g] @ b[:, s:e]
    else:  # groups of the contraction, one matrix each
        out = torch.zeros(len(offs), a.shape[0], b.shape[-1], dtype=torch.float64)
        for g, (s, e) in enumerate(_starts_ends(offs)):
            out[g] = a[:, s:e] @ b[s:e]
    return out


def _check(a, b, offs):
    got = torch._grouped_mm(a.to(VKML), b.to(VKML), offs=None if offs is None else offs.to(VKML))
    assert got.device.type == VKML and got.dtype == a.dtype
    want = _reference(a, b, offs).to(a.dtype)
    torch.testing.assert_close(got.cpu(), want, **TOL[a.dtype])


def _offsets(*ends):
    return torch.tensor(ends, dtype=torch.int32)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_rows_by_group(dtype):
    """2-D x 3-D (the experts' forward): an empty group, groups of one row and of more
    than a tile, rows after the last offset left as zeros; B in either layout."""
    a = make((152, 24), dtype)
    offs = _offsets(1, 1, 70, 71, 140)
    _check(a, make((5, 32, 24), dtype).transpose(-2, -1), offs)  # nn.Linear's layout
    _check(a, make((5, 24, 32), dtype), offs)
    _check(a.t().contiguous().t(), make((5, 24, 32), dtype), offs)  # A contiguous along m
    _check(make((0, 24), dtype), make((5, 24, 32), dtype), _offsets(0, 0, 0, 0, 0))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_columns_by_group(dtype):
    """3-D x 2-D: groups of B's columns, A[g] for each."""
    a = make((4, 20, 24), dtype)
    offs = _offsets(8, 8, 75, 96)
    _check(a, make((24, 104), dtype), offs)
    _check(a, make((104, 24), dtype).t(), offs)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_contraction_by_group(dtype):
    """2-D x 2-D (the experts' weight gradients): one output matrix per group, the empty
    group's all zeros; ragged group edges in every operand layout."""
    a, b = make((16, 144), dtype), make((144, 24), dtype)
    offs = _offsets(8, 8, 31, 100, 144)
    _check(a, b, offs)
    _check(a.t().contiguous().t(), b.t().contiguous().t(), offs)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_batched_without_offsets(dtype):
    _check(make((3, 17, 24), dtype), make((3, 24, 16), dtype), None)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_groups_on_the_matrix_units(dtype, emulated_matrix_units):
    """fp16 and bf16 grouped products run on the matrix-unit kernel (its emulation here):
    each grouping in both operand forms, with narrow loads along the grouped side (a
    group starts anywhere); tiles of 64 and 128 rows."""
    cases = [
        (
            make((160, 72), dtype),
            make((4, 96, 72), dtype).transpose(-2, -1),
            _offsets(5, 5, 70, 133),
        ),
        (make((72, 160), dtype).t(), make((4, 72, 96), dtype), _offsets(5, 5, 70, 133)),
        (make((4, 64, 72), dtype), make((72, 136), dtype), _offsets(8, 8, 61, 130)),
        (make((4, 64, 72), dtype), make((136, 72), dtype).t(), _offsets(8, 8, 61, 130)),
        (make((64, 200), dtype), make((200, 96), dtype), _offsets(8, 8, 71, 200)),
        (make((200, 64), dtype).t(), make((96, 200), dtype).t(), _offsets(8, 8, 71, 200)),
        (make((300, 136), dtype), make((3, 136, 144), dtype), _offsets(1, 150, 290)),
    ]
    for a, b, offs in cases:
        _check(a, b, offs)  # the kernel's start-up check runs at the first product
        with torch_vkml.profile() as prof:
            torch._grouped_mm(a.to(VKML), b.to(VKML), offs=offs.to(VKML))
            torch_vkml.synchronize()
        names = [k.name for k in prof.kernels if k.name.startswith("gemm")]
        assert len(names) == 1 and names[0].startswith("gemm_coopmat"), names


def test_gradients_of_an_experts_layer():
    """Tokens sorted by expert through up and down projections, as transformers' MoE
    layers run them: both inputs' gradients, through _grouped_mm's own backward."""
    offs = _offsets(9, 9, 40, 57)
    x = make((60, 16)).requires_grad_()
    up = make((4, 32, 16)).requires_grad_()
    down = make((4, 16, 32)).requires_grad_()
    grad = make((60, 16))

    def layer(x, up, down, offs, grouped):
        if grouped:
            h = torch._grouped_mm(x, up.transpose(-2, -1), offs=offs)
            return torch._grouped_mm(torch.relu(h), down.transpose(-2, -1), offs=offs)
        parts = []
        for g, (s, e) in enumerate(_starts_ends(offs)):
            parts.append(torch.relu(x[s:e] @ up[g].t()) @ down[g].t())
        parts.append(torch.zeros(x.shape[0] - offs[-1], down.shape[1], dtype=x.dtype))
        return torch.cat(parts)

    leaves = [t.detach().to(VKML).requires_grad_() for t in (x, up, down)]
    layer(*leaves, offs.to(VKML), True).backward(grad.to(VKML))
    ref = [t.detach().double().requires_grad_() for t in (x, up, down)]
    layer(*ref, offs, False).backward(grad.double())
    for got, want in zip(leaves, ref, strict=True):
        torch.testing.assert_close(got.grad.cpu(), want.grad.float(), atol=1e-4, rtol=1e-4)


def test_bad_input_raises_like_cpu():
    a, b3 = make((16, 8)), make((3, 8, 4))
    offs = _offsets(4, 9, 16)
    bad = [
        (lambda a, b, o: torch._grouped_mm(a, b, offs=o.long()), (a, b3, offs)),  # int64 offsets
        (lambda a, b, o: torch._grouped_mm(a, b), (a, b3, offs)),  # 2-D without offsets
        (lambda a, b, o: torch._grouped_mm(a, b, offs=o), (a, make((2, 8, 4)), offs)),  # batches
        (lambda a, b, o: torch._grouped_mm(a, b, offs=o), (make((16, 6)), b3, offs)),  # contraction
        (lambda a, b, o: torch._grouped_mm(a, b, offs=o), (a, make((3, 8, 5)), offs)),  # strides
        (lambda a, b, o: torch._grouped_mm(a, b, offs=o), (a.long(), b3.long(), offs)),  # dtype
        (lambda a, b, o: torch._grouped_mm(a, b, offs=o, bias=b[:, 0]), (a, b3, offs)),  # bias
        (
            lambda a, b, o: torch._grouped_mm(a, b, offs=o, out_dtype=torch.float16),
            (a, b3, offs),
        ),
    ]
    for fn, args in bad:
        assert_raises_like_cpu(fn, *args)
