"""bfloat16 beyond elementwise ops: matrix products, reductions and softmax compute in
float32 on vkml and round once, as PyTorch's CPU kernels do; compared against the CPU."""

import pytest
import torch
from conftest import assert_close_to_cpu, assert_grads_close_to_cpu, make

pytestmark = pytest.mark.usefixtures("no_fallback")

BF16 = dict(atol=2e-2, rtol=2e-2)


def bf16(*shape):
    return make(shape, torch.float32).to(torch.bfloat16)


def test_matrix_products():
    a, b, bias = bf16(5, 7), bf16(7, 3), bf16(3)
    assert_close_to_cpu(torch.mm, a, b, **BF16)
    assert_close_to_cpu(lambda x, y: x.t() @ y.t().t(), a.t().contiguous(), b, **BF16)
    assert_close_to_cpu(lambda c, x, y: torch.addmm(c, x, y, beta=0.5, alpha=2), bias, a, b, **BF16)
    assert_close_to_cpu(torch.bmm, bf16(2, 4, 6), bf16(2, 6, 3), **BF16)
    assert_close_to_cpu(torch.nn.functional.linear, a, bf16(4, 7), bf16(4), **BF16)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.sum(),
        lambda t: t.sum(1),
        lambda t: t.mean(0, keepdim=True),
        lambda t: t.amax(1),
        lambda t: t.max(1),
        lambda t: t.argmax(0),
        lambda t: t.min(),
        lambda t: t.softmax(1),
        lambda t: t.log_softmax(0),
    ],
    ids=["sum", "sum1", "mean0", "amax", "max_dim", "argmax", "min", "softmax", "log_softmax"],
)
def test_reductions_and_softmax(fn):
    assert_close_to_cpu(fn, bf16(6, 9), **BF16)


def test_softmax_and_linear_gradients():
    x = bf16(4, 5)
    w = bf16(3, 5)
    grads = []
    for dev in ("cpu", "vkml"):
        xd = x.detach().to(dev).requires_grad_()
        wd = w.detach().to(dev).requires_grad_()
        torch.nn.functional.linear(xd, wd).log_softmax(1).sum().backward()
        grads.append((xd.grad.cpu(), wd.grad.cpu()))
    for g_dev, g_cpu in zip(grads[1], grads[0], strict=True):
        torch.testing.assert_close(g_dev, g_cpu, **BF16)


# --------------------------------------------------------------------------
# Indexing: gathers and plain writes move the 16 bits; reductions compute in fp32
# and round each step to bfloat16 (compare-and-swap on the enclosing 32-bit word).
# --------------------------------------------------------------------------

F = torch.nn.functional


def idx(high, *shape):
    return make(shape, torch.int64, low=0, high=high)


def test_gathers_move_bits_exactly():
    # Expected bits from the same gathers on the int16 view: the CPU's bfloat16 gather
    # itself turns NaNs into 0xffff.
    bits = make((6, 7), torch.int32, low=-(2**15), high=2**15).to(torch.int16)
    xv = bits.view(torch.bfloat16).to("vkml")
    i = idx(6, 6, 5)  # valid along both dims
    cases = [
        lambda x, i: torch.gather(x, 1, i),
        lambda x, i: x.index_select(0, i[0]),
        lambda x, i: x[i[:, 0]],
        lambda x, i: x.take(i),
        lambda x, i: torch.take_along_dim(x, i, 1),
        lambda x, i: x.repeat_interleave(2, 0),
        lambda x, i: F.embedding(i, x),
        lambda x, i: torch.zeros_like(x).scatter(1, torch.arange(5).expand(6, 5).to(x.device), x),
    ]
    for k, fn in enumerate(cases):
        got = fn(xv, i.to("vkml")).cpu().view(torch.int16)
        assert torch.equal(got, fn(bits, i)), k


@pytest.mark.parametrize(
    "fn",
    [
        # A rotation of 0..3 per row: a plain scatter to a repeated index lands in an
        # unspecified order (as on CUDA).
        lambda x, s, i: x.scatter(1, (i[:, :1] + torch.arange(4, device=i.device)) % 4, s),
        lambda x, s, i: x.scatter(1, i, 1.5),
        lambda x, s, i: x.scatter_add(1, i, s),
        lambda x, s, i: x.scatter(1, i, s, reduce="multiply"),
        lambda x, s, i: x.scatter_reduce(1, i, s, "sum"),
        lambda x, s, i: x.scatter_reduce(1, i, s, "prod", include_self=False),
        lambda x, s, i: x.scatter_reduce(1, i, s, "mean"),
        lambda x, s, i: x.scatter_reduce(1, i, s, "amax"),
        lambda x, s, i: x.scatter_reduce(1, i, s, "amin", include_self=False),
        lambda x, s, i: x.index_add(0, i[0], s[:, :4].t(), alpha=2),
        lambda x, s, i: x.index_copy(0, torch.arange(4, device=x.device), s[:, :4].t()),
        lambda x, s, i: x.index_fill(1, i[0], -2.5),
        lambda x, s, i: x.index_reduce(0, i[0], s[:, :4].t(), "prod"),
        lambda x, s, i: x.index_reduce(0, i[0], s[:, :4].t(), "amax", include_self=False),
        lambda x, s, i: x.index_put((i[0], i[1]), s[0, :4], accumulate=True),
        lambda x, s, i: x.index_put((i[0],), s[:, :4].t()[:1].expand(4, 6).contiguous()),
        lambda x, s, i: x.put(i[:2], s[:2, :4], accumulate=True),
        lambda x, s, i: torch.ops.aten._unsafe_masked_index_put_accumulate(
            x, s[:4, :4] > 0, (i[0].view(4, 1), i[1].view(1, 4)), s[:4, :4]
        ),
    ],
    ids=[
        "scatter",
        "scatter_value",
        "scatter_add",
        "scatter_multiply",
        "reduce_sum",
        "reduce_prod",
        "reduce_mean",
        "reduce_amax",
        "reduce_amin",
        "index_add",
        "index_copy",
        "index_fill",
        "index_reduce_prod",
        "index_reduce_amax",
        "index_put_acc",
        "index_put",
        "put_acc",
        "masked_index_put_acc",
    ],
)
def test_scatters(fn):
    # Small whole numbers: every bfloat16 sum and product here is exact, whatever the
    # order in which duplicate indices arrive.
    x = make((6, 6), torch.float32, low=-3, high=4, discrete=True).to(torch.bfloat16)
    s = make((6, 6), torch.float32, low=-2, high=3, discrete=True).to(torch.bfloat16)
    i = make((6, 4), torch.int64, low=0, high=4)
    assert_close_to_cpu(fn, x, s, i, atol=0, rtol=0)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, s, i: x.scatter_add(1, i, s),
        lambda x, s, i: x.scatter_reduce(1, i, s, "prod"),
        lambda x, s, i: x.scatter_reduce(1, i, s, "mean"),
        lambda x, s, i: x.index_add(1, i[0], s),
        lambda x, s, i: x.index_add(1, i[0], s, alpha=1.7),
        lambda x, s, i: x.index_reduce(1, i[0], s, "prod"),
        lambda x, s, i: x.index_put((i[:, 0],), s, accumulate=True),
        lambda x, s, i: x.put(i[:3], s[:3], accumulate=True),
    ],
    ids=[
        "scatter_add",
        "prod",
        "mean",
        "index_add",
        "index_add_alpha",
        "index_reduce",
        "index_put",
        "put",
    ],
)
def test_reductions_round_like_cpu(fn):
    # The CPU sums scatter reductions and index_add (alpha 1) in float32 and rounds
    # once, but rounds every step of index_add with alpha, index_reduce, index_put_
    # and put_: bit for bit in a fixed (deterministic) order.
    x, s = bf16(6, 7), bf16(6, 7)
    i = make((6, 7), torch.int64, low=0, high=5)
    torch.use_deterministic_algorithms(True)
    try:
        assert_close_to_cpu(fn, x, s, i, atol=0, rtol=0)
    finally:
        torch.use_deterministic_algorithms(False)


def test_scatter_add_sums_in_float32():
    # 64 additions of 1 + 2^-7 onto 0: as on the CPU the sum is kept in float32
    # (64.5); rounding every step to bfloat16 would lose the tails past 2.
    src = torch.full((1, 64), 1 + 2**-7, dtype=torch.bfloat16)
    index = torch.zeros(1, 64, dtype=torch.int64)
    got = torch.zeros(1, 1, dtype=torch.bfloat16, device="vkml").scatter_add(
        1, index.to("vkml"), src.to("vkml")
    )
    assert got.dtype == torch.bfloat16
    assert got.item() == 64.5


def test_embedding_backward():
    w = bf16(10, 4).requires_grad_()
    i = make((3, 5), torch.int64, low=0, high=10)
    assert_grads_close_to_cpu(lambda w: F.embedding(i.to(w.device), w, padding_idx=2), w, **BF16)


# --------------------------------------------------------------------------
# Sorting, searching, scans
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.sort(1),
        lambda t: t.sort(dim=0, descending=True, stable=True),
        lambda t: t.argsort(1),
        lambda t: t.msort(),
        lambda t: t.topk(3, 1),
        lambda t: t.kthvalue(2, 1),
        lambda t: t.median(1),
        lambda t: t.nanmedian(),
        lambda t: torch.unique(t, return_inverse=True, return_counts=True),
        lambda t: torch.unique_consecutive(t.flatten(), return_counts=True),
        lambda t: torch.searchsorted(t.sort(1).values, t[:, :3]),
        lambda t: torch.bucketize(t, t[0].sort().values, right=True),
        lambda t: t.histc(7, -2, 2),
    ],
    ids=[
        "sort",
        "sort_desc",
        "argsort",
        "msort",
        "topk",
        "kthvalue",
        "median",
        "nanmedian",
        "unique",
        "unique_consecutive",
        "searchsorted",
        "bucketize",
        "histc",
    ],
)
def test_sort_and_search(fn):
    t = make((5, 8), torch.float32, unique=True).to(torch.bfloat16)
    assert_close_to_cpu(fn, t, atol=0, rtol=0)


@pytest.mark.parametrize("n", [7, 3000])  # per-line and chunked row scans
@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.cumsum(-1),
        lambda t: t.cumprod(-1),
        lambda t: t.cummax(-1),
        lambda t: t.cummin(0),
        lambda t: t.logcumsumexp(-1),
    ],
    ids=["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"],
)
def test_scans(fn, n):
    t = make((3, n), torch.float32, low=-1, high=1.05).to(torch.bfloat16)
    # cumsum of 3000 elements: fp32 accumulation vs the CPU's may differ by a few ulps
    # of the running value.
    assert_close_to_cpu(fn, t, atol=5e-2 if n > 100 else 2e-2, rtol=2e-2)


# --------------------------------------------------------------------------
# nn: convolution, pooling, normalisation, resampling, nll_loss
# --------------------------------------------------------------------------

BF16_GRAD = dict(atol=6e-2, rtol=3e-2)


def req(t):
    return t.requires_grad_()


@pytest.mark.parametrize(
    "fn,shapes",
    [
        (lambda x, w, b: F.conv1d(x, w, b, padding=1), [(2, 3, 9), (4, 3, 3), (4,)]),
        (
            lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
            [(2, 3, 7, 6), (10, 3, 3, 3), (10,)],
        ),
        (lambda x, w, b: F.conv2d(x, w, b, groups=3), [(1, 3, 5, 5), (6, 1, 3, 2), (6,)]),
        (lambda x, w, b: F.conv3d(x, w, b), [(1, 2, 4, 4, 3), (3, 2, 2, 2, 2), (3,)]),
        (
            lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, output_padding=1),
            [(1, 9, 4, 3), (9, 8, 3, 3), (8,)],
        ),
        (lambda x, w, b: F.conv_transpose3d(x, w, b), [(1, 2, 3, 3, 2), (2, 3, 2, 2, 2), (3,)]),
    ],
    ids=["conv1d", "conv2d_gemm", "conv2d_groups", "conv3d", "conv_transpose2d", "conv_t3d"],
)
def test_convolution(fn, shapes):
    args = [req(bf16(*s)) for s in shapes]
    assert_grads_close_to_cpu(fn, *args, **BF16_GRAD)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: F.max_pool2d(x, 3, 2, padding=1),
        lambda x: F.max_pool1d(x.flatten(2), 3),
        lambda x: F.max_pool3d(x.unsqueeze(2), (1, 2, 2)),
        lambda x: F.avg_pool2d(x, 2, count_include_pad=False, padding=1),
        lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
        lambda x: F.adaptive_max_pool2d(x, 4),
        lambda x: F.local_response_norm(x.flatten(2), 3),  # the CPU has no bf16 avg_pool3d
        lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
        lambda x: F.interpolate(x, size=(5, 9), mode="nearest"),
        lambda x: F.unfold(x, 2, padding=1),
        lambda x: F.fold(x.reshape(2, 6, 21)[:, :4, :10], (3, 6), 2),
    ],
    ids=[
        "max_pool2d",
        "max_pool1d",
        "max_pool3d",
        "avg_pool2d",
        "adaptive_avg",
        "adaptive_max",
        "local_response_norm",
        "bilinear",
        "nearest",
        "unfold",
        "fold",
    ],
)
def test_pooling_and_resampling(fn):
    x = req(make((2, 3, 6, 7), torch.float32, unique=True).mul(0.05).to(torch.bfloat16))
    assert_grads_close_to_cpu(fn, x, **BF16_GRAD)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        lambda x, w, b: F.layer_norm(x, (5,), w, b),
        lambda x, w, b: F.group_norm(x.reshape(2, 5, 12), 5, w, b),
        lambda x, w, b: F.instance_norm(x.reshape(3, 5, 8), weight=w, bias=b),
    ],
    ids=["batch_norm", "layer_norm", "group_norm", "instance_norm"],
)
def test_normalisation(fn):
    x, w, b = req(bf16(24, 5)), req(bf16(5)), req(bf16(5))
    assert_grads_close_to_cpu(fn, x, w, b, **BF16_GRAD)


def test_batch_norm_running_stats():
    x = bf16(8, 3, 4)
    stats = [torch.zeros(3, dtype=torch.bfloat16), torch.ones(3, dtype=torch.bfloat16)]
    out = {}
    for dev in ("cpu", "vkml"):
        m, v = (s.to(dev, copy=True) for s in stats)
        y = F.batch_norm(x.to(dev), m, v, training=True, momentum=0.5)
        y2 = F.batch_norm(x.to(dev), m, v, training=False)
        out[dev] = [t.cpu() for t in (y, y2, m, v)]
    for a, b in zip(out["vkml"], out["cpu"], strict=True):
        torch.testing.assert_close(a, b, **BF16)


def test_nll_loss():
    x = req(bf16(6, 5).log_softmax(1))
    t = make((6,), torch.int64, low=0, high=5)
    w = bf16(5).abs()
    for reduction in ("mean", "sum", "none"):
        assert_grads_close_to_cpu(
            lambda x, r=reduction: F.nll_loss(x, t.to(x.device), w.to(x.device), reduction=r),
            x,
            **BF16,
        )


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 3), (0, 1.3)])
def test_addr_rounds_like_cpu(beta, alpha):
    # The CPU rounds alpha * v1, the product and the sum each to bfloat16.
    s, a, b = bf16(9, 11), bf16(9), bf16(11)
    assert_close_to_cpu(
        lambda s, a, b: torch.addr(s, a, b, beta=beta, alpha=alpha), s, a, b, atol=0, rtol=0
    )


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_adaptive_avg_pool3d_rounds_like_cpu(dtype):
    # The CPU's 3-d kernel sums 16-bit floats in their own dtype and rounds each of
    # its three divisions: matched bit for bit.
    x = make((2, 3, 5, 7, 6), torch.float32).to(dtype)
    assert_close_to_cpu(lambda t: F.adaptive_avg_pool3d(t, (3, 4, 4)), x, atol=0, rtol=0)
