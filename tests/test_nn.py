"""NN functional ops, forward and backward, against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import FLOAT_DTYPES, assert_close_to_cpu, assert_grads_close_to_cpu, dtype_id, make

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

LAYOUTS = {
    "contiguous": ((3, 4, 5), lambda t: t),
    "transposed": ((5, 4, 3), lambda t: t.transpose(0, 2)),
}


def _leaf(shape, dtype=torch.float32, **kw):
    return make(shape, dtype, **kw).requires_grad_()


# ------------------------------------------------------------------ relu


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_relu_and_threshold_backward(dtype, layout):
    shape, view = LAYOUTS[layout]
    x = _leaf(shape, dtype)
    # relu's backward is aten::threshold_backward
    assert_grads_close_to_cpu(lambda t: F.relu(view(t)), x)
    assert_grads_close_to_cpu(lambda t: torch.nn.ReLU()(view(t) * 2), x)
    assert_grads_close_to_cpu(lambda t: F.relu(view(t) * 1, inplace=True), x)


# --------------------------------------------------------------- softmax


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax(fn, dtype, layout, dim):
    shape, view = LAYOUTS[layout]
    x = _leaf(shape, dtype)
    assert_grads_close_to_cpu(lambda t: fn(view(t), dim=dim), x)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("cols", [300, 4500])
def test_softmax_rows_with_special_values(fn, cols):
    """-inf entries, a row of -inf only, NaN and +inf, in rows held in registers (300)
    and streamed (4500)."""
    x = make((5, cols))
    x[0, ::7] = float("-inf")
    x[1] = float("-inf")
    x[2, 5] = float("nan")
    x[3, 9] = float("inf")
    assert_close_to_cpu(lambda t: fn(t, dim=1), x)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_is_numerically_stable(fn):
    inf = float("inf")
    x = torch.tensor([[1000.0, 0.0, -1000.0], [-1000.0, -1000.5, -999.0], [0.0, -inf, 1.0]])
    assert_close_to_cpu(lambda t: fn(t, dim=1), x)
    assert_close_to_cpu(lambda t: fn(t[:2], dim=0), x)


# rows of up to 4096 are held in registers, longer ones streamed (online softmax)
@pytest.mark.parametrize(
    "shape, dim", [((3, 5000), -1), ((5000, 3), 0), ((2, 3000, 2), 1), ((3, 3000), -1)]
)
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_long_rows(fn, shape, dim):
    x = _leaf(shape, low=-10, high=10)
    assert_grads_close_to_cpu(lambda t: fn(t, dim=dim), x)


@pytest.mark.skipif(
    not torch_vkml.get_device_properties().supports_fp64, reason="device has no shaderFloat64"
)
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax, F.softmin])
@pytest.mark.parametrize("shape, dim", [((4, 7), 1), ((5, 3, 2), 1), ((2, 300), -1)])
def test_softmax_float64(fn, shape, dim):
    # float64 rows, and float32 input promoted by dtype= (softmax.with_dtype)
    assert_grads_close_to_cpu(
        lambda t: fn(t, dim=dim), _leaf(shape, torch.float64, low=-20, high=20)
    )
    assert_grads_close_to_cpu(lambda t: fn(t, dim=dim, dtype=torch.float64), _leaf(shape))


def test_softmax_empty():
    assert_close_to_cpu(lambda t: F.softmax(t, dim=1), make((0, 4)))
    assert_close_to_cpu(lambda t: F.log_softmax(t, dim=0), make((0, 4)))


# ---------------------------------------------------------------- losses

N, C = 6, 5


def _targets(ignore):
    target = make(N, torch.int64, low=0, high=C)
    if ignore == "default":
        target[[1, 4]] = -100
    elif ignore == "custom":
        target[[0, 3]] = 2
    return target


def _loss_kwargs(reduction, weighted, ignore):
    kwargs = {"reduction": reduction}
    if weighted:
        kwargs["weight"] = make(C, low=0.2, high=2.0)
    if ignore == "custom":
        kwargs["ignore_index"] = 2
    return kwargs


LOSS_CASES = [
    pytest.param(
        reduction,
        weighted,
        ignore,
        id=f"{reduction}-{'weight' if weighted else 'noweight'}-ignore_{ignore}",
    )
    for reduction in ("mean", "sum", "none")
    for weighted in (False, True)
    for ignore in ("none", "default", "custom")
]


def _call_loss(loss_fn, kwargs):
    def fn(x, target, *weight):
        return loss_fn(x, target, **kwargs, **({"weight": weight[0]} if weight else {}))

    return fn


@pytest.mark.parametrize("reduction, weighted, ignore", LOSS_CASES)
def test_nll_loss(reduction, weighted, ignore):
    log_probs = F.log_softmax(make((N, C)), dim=1).requires_grad_()
    kwargs = _loss_kwargs(reduction, weighted, ignore)
    weight = (kwargs.pop("weight"),) if weighted else ()
    assert_grads_close_to_cpu(_call_loss(F.nll_loss, kwargs), log_probs, _targets(ignore), *weight)


@pytest.mark.parametrize("reduction, weighted, ignore", LOSS_CASES)
def test_cross_entropy(reduction, weighted, ignore):
    logits = _leaf((N, C))
    kwargs = _loss_kwargs(reduction, weighted, ignore)
    weight = (kwargs.pop("weight"),) if weighted else ()
    assert_grads_close_to_cpu(
        _call_loss(F.cross_entropy, kwargs), logits, _targets(ignore), *weight
    )


def test_cross_entropy_module_and_unbatched():
    logits = _leaf((N, C))
    target = _targets("none")
    assert_grads_close_to_cpu(lambda x, t: torch.nn.CrossEntropyLoss()(x, t), logits, target)
    assert_grads_close_to_cpu(lambda x, t: F.cross_entropy(x[0], t[0]), logits, target)
    assert_grads_close_to_cpu(
        lambda x, t: F.cross_entropy(x.t().contiguous().t(), t), logits, target
    )


def test_nll_loss_all_ignored_mean_is_nan():
    log_probs = F.log_softmax(make((N, C)), dim=1)
    target = torch.full((N,), -100)
    _, vk = assert_close_to_cpu(F.nll_loss, log_probs, target)
    assert vk.cpu().isnan().item()


# ------------------------------------------------ rrelu, channel_shuffle, unfold


def test_rrelu_eval_and_training():
    x = _leaf((4, 6))
    assert_grads_close_to_cpu(lambda t: F.rrelu(t, 0.1, 0.3, training=False), x)
    xv = x.detach().to("vkml").requires_grad_()
    y = F.rrelu(xv, 0.1, 0.3, training=True)
    ratio = (y / xv).detach().cpu()
    neg = x.detach() < 0
    assert torch.all(ratio[~neg] == 1)
    assert torch.all((ratio[neg] >= 0.1) & (ratio[neg] <= 0.3))
    assert ratio[neg].unique().numel() > 1  # one slope per element
    y.sum().backward()
    torch.testing.assert_close(xv.grad.cpu(), ratio)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_channel_shuffle(dtype):
    x = make((2, 6, 3, 2), dtype)
    assert_close_to_cpu(lambda t: F.channel_shuffle(t, 3), x)
    assert_close_to_cpu(lambda t: F.channel_shuffle(t.transpose(2, 3), 2), x)
    if dtype == torch.float32:
        assert_grads_close_to_cpu(lambda t: F.channel_shuffle(t, 2), x.requires_grad_())


@pytest.mark.parametrize("dim, size, step", [(0, 3, 2), (1, 2, 3), (-1, 4, 1), (1, 5, 5)])
def test_unfold_backward(dim, size, step):
    assert_grads_close_to_cpu(lambda t: t.unfold(dim, size, step) * 1, _leaf((7, 6, 5)))


# ------------------------------------------------------------ cdist, pdist


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_cdist_and_pdist(p):
    x1 = make((2, 4, 3), discrete=True).requires_grad_()  # ties and zero distances
    x2 = make((2, 5, 3), discrete=True).requires_grad_()
    # compute_mode keeps p = 2 on _cdist_forward rather than the matmul formula
    mode = "donot_use_mm_for_euclid_dist"
    assert_grads_close_to_cpu(lambda a, b: torch.cdist(a, b, p, compute_mode=mode), x1, x2)
    assert_grads_close_to_cpu(lambda a: F.pdist(a, p), make((5, 3), discrete=True).requires_grad_())


# ------------------------------------------------------------ embedding_bag


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag(mode, padding_idx):
    weight = make((10, 3), unique=True).requires_grad_()
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2, 2])
    offsets = torch.tensor([0, 4, 4, 8])  # an empty bag and a padding-only bag

    def fn(w, i, o):
        return F.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx)

    assert_grads_close_to_cpu(fn, weight, indices, offsets)
    assert_grads_close_to_cpu(
        lambda w, i: F.embedding_bag(i, w, mode=mode), weight, indices.view(2, 5)
    )


def test_embedding_bag_per_sample_weights_and_last_offset():
    weight = _leaf((8, 4))
    psw = _leaf(6)
    indices = torch.tensor([0, 7, 3, 3, 1, 5])
    offsets = torch.tensor([0, 2, 5, 6])

    def fn(w, p):
        return F.embedding_bag(
            indices.to(w.device),
            w,
            offsets.to(w.device),
            mode="sum",
            per_sample_weights=p,
            include_last_offset=True,
        )

    assert_grads_close_to_cpu(fn, weight, psw)
    assert_close_to_cpu(
        lambda w: F.embedding_bag(indices.to(w.device), w, offsets.to(w.device), mode="mean"),
        make((8, 4), torch.float16),
    )
