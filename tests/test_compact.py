"""Data-dependent shapes (ops_compact.cpp): nonzero, nonzero_static, masked_select,
masked_scatter, against the CPU."""

import pytest
import torch
from conftest import (
    ALL_DTYPES,
    VKML,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    check_raises_later,
    dtype_id,
    leaf,
    make,
)

pytestmark = pytest.mark.usefixtures("no_fallback")


# ---------------------------------------- nonzero, masked_select / _scatter


@pytest.mark.parametrize("dtype", ALL_DTYPES + [torch.uint8], ids=dtype_id)
def test_nonzero(dtype):
    x = make((4, 5, 3), dtype, low=-1, high=2)
    assert_close_to_cpu(torch.nonzero, x)
    assert_close_to_cpu(lambda t: t.transpose(0, 2).nonzero(), x)
    assert_close_to_cpu(lambda t: torch.nonzero(t, as_tuple=True), x)
    assert_close_to_cpu(torch.argwhere, x)


def test_nonzero_edge_cases():
    assert_close_to_cpu(torch.nonzero, torch.zeros(3, 4))
    assert_close_to_cpu(torch.nonzero, torch.ones(0, 4))
    assert_close_to_cpu(torch.nonzero, torch.tensor(2.0))
    assert_close_to_cpu(torch.nonzero, torch.tensor(0))
    big = make(3000, torch.bool)  # several tiles of the prefix scan
    assert_close_to_cpu(torch.nonzero, big)
    assert_close_to_cpu(
        lambda t: torch.nonzero(t, out=torch.empty(0, dtype=torch.long, device=t.device)), big
    )


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_nonzero_static(dtype):
    x = make((3, 4), dtype)
    for size, fill in [(0, -1), (3, -1), (12, 7), (20, -5)]:
        assert_close_to_cpu(
            lambda t, s=size, f=fill: torch.nonzero_static(t, size=s, fill_value=f), x
        )
    assert_close_to_cpu(lambda t: torch.nonzero_static(t, size=4), make((0, 3), dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_masked_select_and_scatter(dtype):
    x = make((4, 5), dtype)
    mask = make((4, 5), torch.bool)
    src = make(25, dtype)
    assert_close_to_cpu(torch.masked_select, x, mask)
    assert_close_to_cpu(lambda t, m: t.masked_select(m[1]), x, mask)  # broadcast mask
    assert_close_to_cpu(lambda t, m: t.t().masked_select(m.t()), x, mask)
    assert_close_to_cpu(lambda t, m: t[:0].masked_select(m[:0]), x, mask)
    assert_close_to_cpu(lambda t, m, s: t.masked_scatter(m, s), x, mask, src)
    assert_close_to_cpu(lambda t, m, s: t.t().masked_scatter_(m.t(), s.view(5, 5)), x, mask, src)
    assert_close_to_cpu(lambda t, m, s: t.masked_scatter(m[2], s), x, mask, src)


def test_masked_select_backward():
    x = leaf((4, 5))
    mask = make((4, 5), torch.bool)
    assert_grads_close_to_cpu(lambda t, m: t.masked_select(m), x, mask)
    src = leaf(20)
    assert_grads_close_to_cpu(lambda t, m, s: (t * 1).masked_scatter(m, s), x, mask, src)


def test_masked_scatter_checks_the_source_size_on_the_device():
    """A mask with more ones than the source has elements raises the CPU's error at the
    next read, without a wait of its own (CUDA checks it in the kernel too)."""
    x = make((4, 5))
    mask = torch.ones(4, 5, dtype=torch.bool)
    check_raises_later(lambda t, m, s: t.masked_scatter(m, s), x, mask, make((7,)))


def test_nonzero_out_never_casts():
    x = torch.tensor([[0.0, 1.0], [2.0, 0.0]], device="vkml")
    for name, call in [
        ("nonzero", lambda out: torch.nonzero(x, out=out)),
        ("nonzero_static", lambda out: torch.nonzero_static(x, size=3, out=out)),
    ]:
        with pytest.raises(
            RuntimeError, match=f"{name}: Expected out tensor to have scalar type Long"
        ):
            call(torch.empty(0, device="vkml"))
        with pytest.raises(RuntimeError, match="same device"):
            call(torch.empty(0, dtype=torch.long))  # on the CPU
        out = torch.empty(0, dtype=torch.long, device="vkml")
        call(out)
        assert out.cpu().tolist()[:2] == [[0, 1], [1, 0]]


def test_nonzero_is_column_major_as_on_the_cpu():
    # The CPU's and CUDA's nonzero lay their (n, ndim) result out column by column, so
    # that as_tuple's and torch.where's index tensors are contiguous; vkml's were strided
    # (stride ndim), and code viewing them (or a CSR tensor's col_indices, built from
    # them by ATen's dense-to-CSR conversion) raised where the CPU's works.
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))
    x[x < 0] = 0
    for t in (x, x[0], x.unsqueeze(0).expand(3, 4, 5)):
        want = t.nonzero()
        got = t.to(VKML).nonzero()
        assert got.stride() == want.stride()
        assert torch.equal(got.cpu(), want)
    rows, cols = torch.where(x.to(VKML) > 0)
    assert rows.is_contiguous() and cols.is_contiguous()
    assert torch.equal(cols.view(-1, 1).cpu(), torch.where(x > 0)[1].view(-1, 1))
    csr = x.to(VKML).to_sparse_csr()
    assert csr.col_indices().is_contiguous()
    torch.testing.assert_close(csr.to_dense().cpu(), x)
