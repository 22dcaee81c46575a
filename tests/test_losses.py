"""Losses beyond nll_loss / cross_entropy on 2-D scores: spatial cross entropy
(nll_loss2d), regression losses, margin losses; forward and backward against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_grads_close_to_cpu, assert_raises_like_cpu, make

pytestmark = pytest.mark.usefixtures("no_fallback")

REDUCTIONS = ["none", "mean", "sum"]


def _leaf(shape, dtype=torch.float32, **kw):
    return make(shape, dtype, **kw).requires_grad_()


# ------------------------------------------------------------ nll_loss2d


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(2, 4, 3, 5), (2, 4, 6), (1, 3, 2, 2, 3)])
def test_cross_entropy_spatial(reduction, shape):
    target = make((shape[0], *shape[2:]), torch.int64, low=0, high=shape[1])
    target.view(-1)[::5] = -100
    assert_grads_close_to_cpu(
        lambda x, t: F.cross_entropy(x, t, reduction=reduction), _leaf(shape), target
    )


def test_nll_loss2d_weight_and_ignore_index():
    weight = make(4, low=0.5, high=2)
    target = make((2, 3, 5), torch.int64, low=0, high=4)
    assert_grads_close_to_cpu(
        lambda x, t, w: F.nll_loss(x, t, weight=w, ignore_index=2),
        F.log_softmax(make((2, 4, 3, 5)), 1).requires_grad_(),
        target,
        weight,
    )


def test_nll_loss2d_bad_target_shape():
    assert_raises_like_cpu(
        lambda x, t: F.nll_loss(x, t),
        make((2, 4, 3, 5)),
        make((2, 3, 4), torch.int64, low=0, high=4),
    )


# -------------------------------------------------------- regression losses


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "loss",
    [
        F.mse_loss,
        F.smooth_l1_loss,
        lambda x, y, **kw: F.smooth_l1_loss(x, y, beta=0.5, **kw),
        lambda x, y, **kw: F.smooth_l1_loss(x, y, beta=0.0, **kw),
        F.huber_loss,
        lambda x, y, **kw: F.huber_loss(x, y, delta=2.0, **kw),
    ],
    ids=["mse", "smooth_l1", "smooth_l1_beta", "smooth_l1_beta0", "huber", "huber_delta"],
)
def test_regression_loss(loss, reduction):
    x = make((3, 7), discrete=True) * 0.5  # ties at |x - y| == beta / delta
    y = make((3, 7), discrete=True) * 0.5
    assert_grads_close_to_cpu(
        lambda a, b: loss(a, b, reduction=reduction), x.requires_grad_(), y.requires_grad_()
    )


@pytest.mark.parametrize("loss", [F.mse_loss, F.smooth_l1_loss, F.huber_loss])
def test_regression_loss_float16(loss):
    assert_grads_close_to_cpu(loss, _leaf((4, 5), torch.float16), make((4, 5), torch.float16))


def test_regression_loss_out():
    x, y = make((3, 4)), make((3, 4))
    for name in ["mse_loss", "smooth_l1_loss", "huber_loss"]:
        fn = getattr(torch.ops.aten, name).out
        expected = fn(x, y, 0, out=torch.empty(0))
        actual = fn(x.to("vkml"), y.to("vkml"), 0, out=torch.empty(0, device="vkml"))
        torch.testing.assert_close(actual.cpu(), expected)


def test_negative_beta_raises():
    assert_raises_like_cpu(lambda x, y: F.smooth_l1_loss(x, y, beta=-1.0), make(3), make(3))


# ------------------------------------------------------------ margin losses


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p, margin, weighted", [(1, 1.0, False), (2, 0.5, True)])
def test_multi_margin_loss(reduction, p, margin, weighted):
    x = _leaf((5, 4), low=-1, high=1)
    target = make(5, torch.int64, low=0, high=4)
    args = (make(4, low=0.5, high=2),) if weighted else ()

    def fn(a, t, *w):
        return F.multi_margin_loss(
            a, t, p=p, margin=margin, weight=w[0] if w else None, reduction=reduction
        )

    assert_grads_close_to_cpu(fn, x, target, *args)


def test_multi_margin_loss_unbatched():
    assert_grads_close_to_cpu(
        lambda a, t: F.multi_margin_loss(a, t, reduction="none"),
        _leaf(4, low=-1, high=1),
        torch.tensor([2]),
    )


def test_multi_margin_loss_bad_target():
    assert_raises_like_cpu(
        lambda a, t: F.multi_margin_loss(a, t), make((2, 3)), torch.tensor([0, 3])
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    x = _leaf((3, 5), low=-1, high=1)
    target = torch.tensor([[3, 0, -1, 1, 2], [4, 1, 2, 0, 3], [-1, 2, 3, 1, 1]])
    assert_grads_close_to_cpu(
        lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction), x, target
    )
    assert_grads_close_to_cpu(
        lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction),
        _leaf(5, low=-1, high=1),
        target[0],
    )
