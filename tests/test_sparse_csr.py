"""Sparse compressed tensors (CSR and CSC) on vkml (ops_sparse_csr.cpp): conversions to
and from dense and COO tensors, sparse @ dense, dense @ sparse and sparse @ vector
products with their gradients (the dense side's, and the CSR values'), and a graph
network trained on a CSR adjacency matrix, each against the CPU. Before, a CSR tensor
could be moved to vkml but every op on it raised NotImplementedError. Ops without a
kernel of their own take the counted CPU route.

Tolerance: float32 sums of at most a few dozen products in another order, 1e-6
relative; float16 and bfloat16 products add up in float32 and round once, so they sit
within one rounding of the float32 result."""

import pytest
import torch
from conftest import VKML

import torch_vkml

pytestmark = [
    pytest.mark.usefixtures("no_fallback"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse invariant checks"),
]

TOL = dict(atol=1e-6, rtol=1e-6)


def _matrix(rows=9, cols=7, density=0.35, seed=0):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(rows, cols, generator=g) * (torch.rand(rows, cols, generator=g) < density)
    m[2] = 0  # an empty row
    return m


def _compress(dense, layout):
    return dense.to_sparse_csr() if layout == torch.sparse_csr else dense.to_sparse_csc()


def _structure(t):
    if t.layout == torch.sparse_csr:
        return t.crow_indices(), t.col_indices(), t.values()
    return t.ccol_indices(), t.row_indices(), t.values()


def _same_compressed(got, want):
    assert got.device.type == VKML
    assert got.layout == want.layout and got.shape == want.shape
    for g, w in zip(_structure(got), _structure(want), strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g.cpu(), w, **TOL, equal_nan=True)


@pytest.mark.parametrize("layout", [torch.sparse_csr, torch.sparse_csc])
def test_conversions_match_cpu(layout):
    dense = _matrix()
    want = _compress(dense, layout)
    _same_compressed(_compress(dense.to(VKML), layout), want)  # dense -> compressed
    _same_compressed(dense.to(VKML).to_sparse(layout=layout), want)
    _same_compressed(want.to(VKML), want)  # a CPU tensor moved over
    back = want.to(VKML).cpu()
    assert back.layout == layout
    torch.testing.assert_close(back.to_dense(), dense)
    got = _compress(dense.to(VKML), layout)
    torch.testing.assert_close(got.to_dense().cpu(), dense)  # compressed -> dense
    coo = got.to_sparse()  # compressed -> COO
    assert coo.layout == torch.sparse_coo and coo.device.type == VKML
    torch.testing.assert_close(coo.to_dense().cpu(), dense)
    _same_compressed(_compress(dense.to_sparse().to(VKML), layout), want)  # COO -> compressed
    _same_compressed(got.clone(), want)
    other = torch.sparse_csc if layout == torch.sparse_csr else torch.sparse_csr
    _same_compressed(_compress(got, other), _compress(want, other))  # CSR <-> CSC
    int32 = _compress(dense, other)
    int32 = torch.sparse_compressed_tensor(
        *(t.int() for t in _structure(int32)[:2]), int32.values(), int32.shape, layout=other
    )
    _same_compressed(_compress(int32.to(VKML), layout), _compress(int32, layout))


def test_constructor_int32_indices_and_transpose():
    want = _matrix().to_sparse_csr()
    crow, col, values = want.crow_indices().int(), want.col_indices().int(), want.values()
    got = torch.sparse_csr_tensor(crow, col, values, want.shape, device=VKML)
    _same_compressed(got, torch.sparse_csr_tensor(crow, col, values, want.shape))
    assert got.crow_indices().dtype == torch.int32
    b = torch.randn(7, 3)
    torch.testing.assert_close((got @ b.to(VKML)).cpu(), want @ b, **TOL)
    # t() of a CSR matrix is the CSC matrix of its transpose, a view of the same entries
    t = got.t()
    assert t.layout == torch.sparse_csc
    torch.testing.assert_close(t.to_dense().cpu(), want.to_dense().t())
    # a row of a CSR matrix (x[i]) is a sparse vector, as on the CPU
    row = got[3]
    assert row.layout == torch.sparse_coo and row.device.type == VKML
    torch.testing.assert_close(row.cpu().to_dense(), want.to_dense()[3])


@pytest.mark.parametrize("layout", [torch.sparse_csr, torch.sparse_csc])
def test_products_match_cpu(layout):
    dense = _matrix()
    a, b, c, v = _compress(dense, layout), torch.randn(7, 4), torch.randn(5, 9), torch.randn(7)
    a_dev = a.to(VKML)
    cases = {
        "mm": (lambda a, b, c, v: a @ b),
        "sparse.mm": (lambda a, b, c, v: torch.sparse.mm(a, b)),
        "dense @ sparse": (lambda a, b, c, v: c @ a),
        "mv": (lambda a, b, c, v: a @ v),
        "addmm": (
            lambda a, b, c, v: torch.addmm(
                torch.ones(9, 4, device=b.device), a, b, beta=0.5, alpha=2
            )
        ),
        "addmv": (lambda a, b, c, v: torch.addmv(torch.ones(9, device=v.device), a, v, alpha=-1)),
    }
    for name, f in cases.items():
        got = f(a_dev, b.to(VKML), c.to(VKML), v.to(VKML))
        assert got.device.type == VKML and got.layout == torch.strided, name
        torch.testing.assert_close(got.cpu(), f(a, b, c, v), **TOL, msg=name)


def test_addmm_out_scalar_product_and_dense_sum():
    a = _matrix().to_sparse_csr()
    b = torch.randn(7, 4)
    out = torch.empty(9, 4, device=VKML)
    torch.addmm(torch.zeros(9, 4, device=VKML), a.to(VKML), b.to(VKML), out=out)
    torch.testing.assert_close(out.cpu(), a @ b, **TOL)
    _same_compressed(a.to(VKML) * 3, a * 3)
    base = torch.randn(9, 7)
    got = base.to(VKML) + a.to(VKML)
    torch.testing.assert_close(got.cpu(), base + a.to_dense(), **TOL)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_products_round_once(dtype):
    a, b = _matrix(), torch.randn(7, 4)
    got = (a.to(dtype).to_sparse_csr().to(VKML) @ b.to(dtype).to(VKML)).cpu()
    want = (a.to(dtype).float() @ b.to(dtype).float()).to(dtype)  # float32 sums, one rounding
    assert got.dtype == dtype
    torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_empty_matrix():
    a = torch.zeros(4, 5).to_sparse_csr()
    b = torch.randn(5, 2)
    got = a.to(VKML) @ b.to(VKML)
    assert a.to(VKML)._nnz() == 0
    torch.testing.assert_close(got.cpu(), torch.zeros(4, 2))


@pytest.mark.parametrize("via", ["sparse.mm", "matmul"])
def test_gradients_match_cpu(via):
    def grads(device):
        a = _matrix().to(device).to_sparse_csr().requires_grad_()
        b = torch.randn(7, 4, generator=torch.Generator().manual_seed(1)).to(device)
        b.requires_grad_()
        out = torch.sparse.mm(a, b) if via == "sparse.mm" else a @ b
        out.square().sum().backward()
        return a.grad, b.grad

    (ga, gb), (wa, wb) = grads(VKML), grads("cpu")
    torch.testing.assert_close(gb.cpu(), wb, **TOL)
    assert ga.layout == wa.layout
    torch.testing.assert_close(ga.cpu().to_dense(), wa.to_dense(), **TOL)


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_reduced_products_match_cpu(reduce):
    # torch.sparse.mm(csr, dense, reduce) (PyG's mean and max aggregations over a CSR
    # adjacency): values and both gradients; ties in a max pick the first entry, as the CPU.
    dense = _matrix()
    dense[4, :3] = torch.tensor([1.0, 1.0, 1.0])  # a row of equal terms against ones
    b = torch.randn(7, 4, generator=torch.Generator().manual_seed(2))
    b[:3] = 1.0

    def run(device):
        a = dense.to(device).to_sparse_csr().requires_grad_()
        x = b.to(device).requires_grad_()
        out = torch.sparse.mm(a, x, reduce)
        weights = torch.arange(out.numel(), device=device).view_as(out).float().sin()
        (out * weights).sum().backward()
        return out.detach(), a.grad.to_dense(), x.grad

    for got, want in zip(run(VKML), run("cpu"), strict=True):
        torch.testing.assert_close(got.cpu(), want, **TOL)
    with torch.no_grad():
        got = torch.sparse.mm(dense.to(VKML).to_sparse_csr(), b.to(VKML), reduce)
    torch.testing.assert_close(got.cpu(), torch.sparse.mm(dense.to_sparse_csr(), b, reduce), **TOL)


def _gcn_train(device, steps=3):
    """Two graph convolutions over the normalized adjacency D^-1/2 (A + I) D^-1/2 as a CSR
    matrix built on the device from an edge list (a GCN's propagation)."""
    g = torch.Generator().manual_seed(0)
    n, f = 40, 8
    edges = torch.randint(0, n, (2, 160), generator=g)
    x, y = torch.randn(n, f, generator=g), torch.randint(0, 3, (n,), generator=g)
    torch.manual_seed(0)
    w1, w2 = torch.nn.Linear(f, 16), torch.nn.Linear(16, 3)
    model = torch.nn.ModuleList([w1, w2]).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loop = torch.arange(n)
    idx = torch.cat([edges, torch.stack([loop, loop])], 1).to(device)
    adj = torch.sparse_coo_tensor(idx, torch.ones(idx.shape[1], device=device), (n, n))
    adj = adj.coalesce()
    deg = torch.zeros(n, device=device).index_add_(0, adj.indices()[0], adj.values())
    norm = deg.rsqrt()
    vals = norm[adj.indices()[0]] * adj.values() * norm[adj.indices()[1]]
    a = torch.sparse_coo_tensor(adj.indices(), vals, (n, n)).to_sparse_csr()
    losses = []
    x, y = x.to(device), y.to(device)
    for _ in range(steps):
        h = torch.relu(a @ w1(x))
        loss = torch.nn.functional.cross_entropy(a @ w2(h), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in model.parameters()]


def test_gcn_on_a_csr_adjacency_trains_like_cpu():
    (got_losses, got_params), (want_losses, want_params) = _gcn_train(VKML), _gcn_train("cpu")
    torch.testing.assert_close(got_losses, want_losses, atol=1e-6, rtol=1e-5)
    for g, w in zip(got_params, want_params, strict=True):
        torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-5)


ZERO_PRESERVING = ["abs", "neg", "sgn", "sign", "sin", "tanh", "asinh", "atan", "sqrt", "erf"]
ZERO_PRESERVING += ["expm1", "log1p", "ceil", "floor", "round", "trunc", "frac", "relu", "deg2rad"]


@pytest.mark.parametrize("layout", [torch.sparse_csr, torch.sparse_csc])
def test_zero_preserving_ops_on_the_values(layout):
    # f(0) == 0: the CPU maps the values and keeps the structure; so does vkml, natively.
    dense = _matrix() * 0.7
    for name in ZERO_PRESERVING:
        want = getattr(_compress(dense, layout), name)()
        _same_compressed(getattr(_compress(dense.to(VKML), layout), name)(), want)
        in_place = _compress(dense.to(VKML), layout)
        getattr(in_place, name + "_")()
        _same_compressed(in_place, want)
    a = dense.to_sparse_csr()
    torch.testing.assert_close(a.to(VKML).sum().cpu(), a.sum(), **TOL)


def test_other_ops_take_the_counted_cpu_route():
    # No kernel of ours (a CSR + CSR sum): the op runs on the CPU, counted, and its
    # result comes back to vkml.
    a = _matrix().to_sparse_csr()
    torch_vkml.reset_fallback_counts()
    got = a.to(VKML) + a.to(VKML)
    assert torch_vkml.fallback_counts() == {"aten::add.Tensor": 1}
    torch_vkml.reset_fallback_counts()  # for the no_fallback fixture
    _same_compressed(got, a + a)


def test_errors_as_cpu():
    a = _matrix().to_sparse_csr().to(VKML)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        a @ torch.randn(5, 2, device=VKML)
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ torch.randn(7, 2, device=VKML, dtype=torch.float16)
