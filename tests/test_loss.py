"""Losses (ops_loss.cpp) against the CPU, forward and backward: nll_loss on 2-D scores,
spatial cross entropy (nll_loss2d), regression losses, margin losses, binary cross
entropy. The fused cross entropy on 2-D scores: test_cross_entropy.py."""

import pytest
import torch
import torch.nn.functional as F
from class_target_cases import LOSS_CASES, C, N, call_loss, class_targets, loss_kwargs
from conftest import (
    VKML,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    leaf,
    make,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

REDUCTIONS = ["none", "mean", "sum"]


# ------------------------------------------------------------ nll_loss2d


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(2, 4, 3, 5), (2, 4, 6), (1, 3, 2, 2, 3)])
def test_cross_entropy_spatial(reduction, shape):
    target = make((shape[0], *shape[2:]), torch.int64, low=0, high=shape[1])
    target.view(-1)[::5] = -100
    assert_grads_close_to_cpu(
        lambda x, t: F.cross_entropy(x, t, reduction=reduction), leaf(shape), target
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
    assert_grads_close_to_cpu(loss, leaf((4, 5), torch.float16), make((4, 5), torch.float16))


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
    x = leaf((5, 4), low=-1, high=1)
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
        leaf(4, low=-1, high=1),
        torch.tensor([2]),
    )


def test_multi_margin_loss_bad_target():
    assert_raises_like_cpu(
        lambda a, t: F.multi_margin_loss(a, t), make((2, 3)), torch.tensor([0, 3])
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    x = leaf((3, 5), low=-1, high=1)
    target = torch.tensor([[3, 0, -1, 1, 2], [4, 1, 2, 0, 3], [-1, 2, 3, 1, 1]])
    assert_grads_close_to_cpu(
        lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction), x, target
    )
    assert_grads_close_to_cpu(
        lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction),
        leaf(5, low=-1, high=1),
        target[0],
    )


def _many_classes_multilabel():
    x = leaf((2, 300), low=-1, high=1)
    target = torch.randint(-1, 300, (2, 300), generator=torch.Generator().manual_seed(5))
    return F.multilabel_margin_loss, x, target, "aten::multilabel_margin_loss_forward"


def _many_classes_multi():
    x = leaf((2, 150_000), low=-1, high=1)
    return F.multi_margin_loss, x, torch.tensor([7, 149_000]), "aten::multi_margin_loss"


@pytest.mark.parametrize(
    "case", [_many_classes_multilabel, _many_classes_multi], ids=["multilabel", "multi"]
)
def test_margin_losses_of_many_classes(case):
    """One thread walks a row's targets against its classes (multilabel: c^2 steps) or its
    classes (multi): where the driver stops an invocation's loops at 65535 iterations
    (Mesa 22.3's lavapipe; multi_margin_loss of 150000 classes was 37 % off there) such
    rows take the counted CPU route; elsewhere the kernel runs them."""
    loss, x, target, op = case()
    assert_grads_close_to_cpu(lambda a, t: loss(a, t), x, target)
    counts = torch_vkml.fallback_counts()
    if torch_vkml.get_device_properties().loop_iteration_limit:
        assert op in counts, counts
    else:
        assert not counts, counts
    torch_vkml.reset_fallback_counts()  # the no_fallback check: these are the point here


def test_margin_losses_in_float64_take_the_counted_cpu_route():
    """No float64 margin kernel: forward and backward run on the CPU, counted (they
    raised NotImplementedError before)."""
    x = leaf((4, 5), torch.float64)
    target = torch.tensor([0, 4, 2, 1])
    assert_grads_close_to_cpu(
        lambda a, t: F.multi_margin_loss(a, t, p=2, margin=0.5), x, target, atol=1e-12, rtol=1e-12
    )
    labels = torch.tensor([[0, 3, -1, 1, 1], [4, -1, 0, 0, 0], [1, 2, 3, -1, 0], [-1, 0, 0, 0, 0]])
    assert_grads_close_to_cpu(
        lambda a, t: F.multilabel_margin_loss(a, t), x, labels, atol=1e-12, rtol=1e-12
    )
    counts = torch_vkml.fallback_counts()
    assert {"aten::multi_margin_loss", "aten::multilabel_margin_loss_forward"} <= set(counts)
    torch_vkml.reset_fallback_counts()


# ---------------------------------------------------- nll_loss, 2-d scores


@pytest.mark.parametrize("reduction, weighted, ignore", LOSS_CASES)
def test_nll_loss(reduction, weighted, ignore):
    log_probs = F.log_softmax(make((N, C)), dim=1).requires_grad_()
    kwargs = loss_kwargs(reduction, weighted, ignore)
    weight = (kwargs.pop("weight"),) if weighted else ()
    assert_grads_close_to_cpu(
        call_loss(F.nll_loss, kwargs), log_probs, class_targets(ignore), *weight
    )


def test_nll_loss_all_ignored_mean_is_nan():
    log_probs = F.log_softmax(make((N, C)), dim=1)
    target = torch.full((N,), -100)
    _, vk = assert_close_to_cpu(F.nll_loss, log_probs, target)
    assert vk.cpu().isnan().item()


# ------------------------------------------------------ binary_cross_entropy


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_matches_cpu(reduction, weighted):
    x = torch.rand(4, 5, generator=torch.Generator().manual_seed(1)) * 0.98 + 0.01
    x[0, 0], x[0, 1] = 0.0, 1.0  # the clamped logs
    t = (torch.rand(4, 5, generator=torch.Generator().manual_seed(2)) > 0.5).float()
    w = torch.rand(5, generator=torch.Generator().manual_seed(3)) if weighted else None
    xd = x.to("vkml").requires_grad_()
    x.requires_grad_()
    f = torch.nn.functional.binary_cross_entropy
    loss_c = f(x, t, weight=w, reduction=reduction)
    loss_d = f(xd, t.to("vkml"), weight=None if w is None else w.to("vkml"), reduction=reduction)
    torch.testing.assert_close(loss_d.cpu(), loss_c.detach(), atol=1e-5, rtol=1e-5)
    loss_c.sum().backward()
    loss_d.sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_float64_nll_loss_runs_on_the_device(reduction):
    """float64 nll_loss and cross_entropy are composed of float64 kernels
    (nll_loss_float64.cpp): class weights, ignored targets, a sample without a batch dim,
    the 2-d form; a target out of range raises the CPU's IndexError at the next read."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    x = make((5, 7), torch.float64)
    y = torch.tensor([0, 6, 3, -100, 2])
    w = make((7,), torch.float64, low=0.5, high=2)
    image, pixels = make((2, 7, 3, 4), torch.float64), torch.randint(0, 7, (2, 3, 4))
    pixels[0, 1, 2] = -100
    torch_vkml.reset_fallback_counts()
    for fn, args in (
        (lambda t, y: F.cross_entropy(t, y, ignore_index=-100, reduction=reduction), (x, y)),
        (lambda t, y, w: F.nll_loss(t.log_softmax(1), y, w, reduction=reduction), (x, y, w)),
        (lambda t, y: F.cross_entropy(t, y, reduction=reduction), (x[0], y[2])),
        (lambda t, y, w: F.cross_entropy(t, y, w, reduction=reduction), (image, pixels, w)),
    ):
        # the scores get gradients (nll_loss has none for its class weights)
        leaves = [a.requires_grad_() if a.is_floating_point() and a is not w else a for a in args]
        assert_grads_close_to_cpu(fn, *leaves, atol=1e-12, rtol=1e-12)
    assert torch_vkml.fallback_counts() == {}
    loss = F.cross_entropy(x.to(VKML), torch.tensor([0, 7, 1, 1, 1], device=VKML))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        loss.item()
    assert F.cross_entropy(x.to(VKML), y.clamp(0).to(VKML)).item() > 0  # usable after


def test_nll_loss_weight_of_another_shape_raises_as_on_the_cpu():
    """A (1, C) weight: the CPU asks for a 1-d weight of C; vkml took it (found by
    PyTorch's test_nn.py)."""
    for device in ("cpu", "vkml"):
        x = torch.randn(10, 3, device=device)
        t = torch.randint(0, 3, (10,), device=device)
        for weight in (torch.ones(4, device=device), torch.ones(1, 3, device=device)):
            with pytest.raises(RuntimeError, match="for all 3 classes or no classes"):
                torch.nn.functional.nll_loss(x, t, weight=weight)
