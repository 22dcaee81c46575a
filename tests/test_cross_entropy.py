"""F.cross_entropy with class-index targets runs as one fused kernel forward and one
backward (ops_cross_entropy.cpp): values and gradients against the CPU, the shapes
and options it covers, the calls it leaves to ATen's log_softmax + nll_loss, and that
the fused path stores no [n, c] log-probabilities."""

import pytest
import torch
import torch.nn.functional as F
from class_target_cases import LOSS_CASES, C, N, call_loss, class_targets, loss_kwargs
from conftest import VKML, assert_grads_close_to_cpu, assert_same, leaf, make

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


def _targets(shape, classes, ignore=False):
    t = torch.randint(0, classes, shape)
    if ignore and t.numel():
        t.view(-1)[::3] = -100
    return t


def _loss(reduction, smoothing, weighted, classes):
    weight = make((classes,), low=0.2, high=2.0) if weighted else None

    def fn(x, t, *w):
        return F.cross_entropy(
            x, t, weight=w[0] if w else None, reduction=reduction, label_smoothing=smoothing
        )

    return fn, (weight,) if weighted else ()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(7, 10), (3, 2500), (11,), (2, 5, 3, 4), (0, 6)])
def test_matches_cpu(shape, weighted, smoothing, reduction):
    classes = shape[1] if len(shape) > 1 else shape[0]
    target = _targets(shape[:1] + shape[2:] if len(shape) > 1 else (), classes, ignore=True)
    fn, weight = _loss(reduction, smoothing, weighted, classes)
    x = make(shape).requires_grad_()
    assert_grads_close_to_cpu(fn, x, target, *weight, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_half_precision(dtype, reduction):
    # fp32 math on the device; the CPU rounds its log-probabilities to the dtype first.
    fn, weight = _loss(reduction, 0.1, True, 300)
    x = make((6, 300), dtype).requires_grad_()
    weight = tuple(w.to(dtype) for w in weight)
    assert_grads_close_to_cpu(fn, x, _targets((6,), 300, True), *weight, atol=2e-2, rtol=2e-2)


def test_fused_path_keeps_no_log_probabilities():
    n, c = 64, 4096
    x = make((n, c)).to(VKML).requires_grad_()
    t = _targets((n,), c).to(VKML)
    torch_vkml.synchronize()
    before = torch_vkml.memory_stats()
    base = torch_vkml.memory_allocated()
    torch_vkml.reset_peak_memory_stats()
    (g,) = torch.autograd.grad(F.cross_entropy(x, t), x)
    torch_vkml.synchronize()
    after = torch_vkml.memory_stats()
    # forward: rows, reduce; backward: the seed gradient, then one pass writing the
    # gradient. ATen's decomposition runs five and holds two [n, c] tensors at once.
    assert after["num_dispatches"] - before["num_dispatches"] <= 4
    peak = torch_vkml.max_memory_allocated() - base
    assert peak < 1.5 * n * c * 4, f"peak {peak} bytes: more than the gradient"
    ref = torch.softmax(x.detach().cpu(), 1) - F.one_hot(t.cpu(), c)
    assert_same(g, ref / n, atol=1e-6, rtol=1e-5)


def test_non_contiguous_and_views():
    x = make((40, 9))
    t = _targets((9,), 40)
    assert_grads_close_to_cpu(lambda a, b: F.cross_entropy(a.t(), b), x.requires_grad_(), t)
    # (N, C, L) with the class dim in the middle: rows gathered by a movedim copy.
    y = make((3, 6, 5)).requires_grad_()
    assert_grads_close_to_cpu(
        lambda a, b: F.cross_entropy(a, b, reduction="none"), y, _targets((3, 5), 6, True)
    )


def test_special_values_like_cpu():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor(
        [[0.0, -inf, 1.0], [nan, 0.0, 1.0], [inf, 0.0, 1.0], [-inf, -inf, -inf], [30.0, -30.0, 0.0]]
    ).requires_grad_()
    t = torch.tensor([0, 1, 1, 2, 0])
    assert_grads_close_to_cpu(lambda a, b: F.cross_entropy(a, b, reduction="none"), x, t)


def test_all_ignored_mean_is_nan_and_empty_sum_is_zero():
    x = make((4, 5)).requires_grad_()
    t = torch.full((4,), -100)
    assert_grads_close_to_cpu(lambda a, b: F.cross_entropy(a, b), x, t)
    e = make((0, 5)).requires_grad_()
    assert_grads_close_to_cpu(lambda a, b: F.cross_entropy(a, b, reduction="sum"), e, t[:0])


def test_out_of_range_target_raises_at_the_next_read():
    # The CPU raises at once; the kernel notes the target in the device error record
    # and the host raises the CPU's IndexError at its next read (test_device_errors.py).
    # The row's loss is NaN meanwhile, never a silently wrong number.
    x = make((3, 4)).to(VKML)
    t = torch.tensor([0, 9, 1], device=VKML)
    out = F.cross_entropy(x, t, reduction="none")
    with pytest.raises(IndexError, match="Target 9 is out of bounds."):
        out.cpu()
    with pytest.raises(IndexError, match="Target 9 is out of bounds."):
        F.cross_entropy(x, t).cpu()


def test_double_backward():
    x = make((6, 7)).requires_grad_()
    t = torch.tensor([0, 3, -100, 6, 2, 1])
    w = make((7,), low=0.5, high=2.0)

    def grads(dev):
        a = x.detach().to(dev).requires_grad_()
        loss = F.cross_entropy(a, t.to(dev), weight=w.to(dev), label_smoothing=0.2)
        (g,) = torch.autograd.grad(loss, a, create_graph=True)
        g.square().sum().backward()
        return g, a.grad

    for got, want in zip(grads(VKML), grads("cpu"), strict=True):
        assert_same(got, want, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("transform", ["grad", "per_sample_grad", "jacrev", "hessian", "vjp"])
def test_torch_func_transforms(transform):
    # functorch refuses C++ autograd Functions; before, every one of these raised on
    # vkml ("cannot use C++ torch::autograd::Function with functorch transforms").
    from torch.func import grad, hessian, jacrev, vjp, vmap

    x, w, t = make((12, 6)), make((6, 5)), _targets((12,), 5, True)

    def loss(w, x, t):
        return F.cross_entropy(x @ w, t, label_smoothing=0.1)

    def one(w, x, t):
        return loss(w, x.unsqueeze(0), t.unsqueeze(0))

    apply = {
        "grad": lambda *a: grad(loss)(*a),
        "per_sample_grad": lambda *a: vmap(grad(one), in_dims=(None, 0, 0))(*a),
        "jacrev": lambda *a: jacrev(loss)(*a),
        "hessian": lambda *a: hessian(loss)(*a),
        "vjp": lambda w, x, t: vjp(lambda w: loss(w, x, t), w)[1](torch.ones((), device=w.device)),
    }[transform]
    got = apply(w.to(VKML), x.to(VKML), t.to(VKML))
    want = apply(w, x, t)
    for g, e in zip(
        got if isinstance(got, tuple) else (got,),
        want if isinstance(want, tuple) else (want,),
        strict=True,
    ):
        assert_same(g, e, atol=1e-6, rtol=1e-4)
    # Outside a transform, the fused path is back.
    assert loss(w.to(VKML).requires_grad_(), x.to(VKML), t.to(VKML)).grad_fn.name() == (
        "torch::autograd::CppNode<vkml_aten::(anonymous namespace)::FusedCrossEntropy>"
    )


def test_inference_mode():
    x, t = make((5, 8)), _targets((5,), 8, True)
    with torch.inference_mode():
        got = F.cross_entropy(x.to(VKML), t.to(VKML), label_smoothing=0.1)
    assert_same(got, F.cross_entropy(x, t, label_smoothing=0.1), atol=1e-6, rtol=1e-6)


def test_calls_left_to_aten():
    # Probability targets and float64 take the decomposition; its errors stay ATen's.
    x = make((4, 5)).requires_grad_()
    probs = torch.softmax(make((4, 5)), 1)
    assert_grads_close_to_cpu(lambda a, b: F.cross_entropy(a, b, label_smoothing=0.1), x, probs)
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(x.detach().to(VKML), torch.tensor([0, 1], device=VKML))
    with pytest.raises(RuntimeError, match="Long"):
        F.cross_entropy(x.detach().to(VKML), torch.tensor([0, 1, 2, 3], device=VKML).int())
    with pytest.raises(RuntimeError, match="weight"):
        F.cross_entropy(x.detach().to(VKML), _targets((4,), 5).to(VKML), weight=make(3).to(VKML))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_custom_ops_pass_opcheck(reduction, weighted):
    # vkml::cross_entropy_forward and _backward, the fused kernels that torch.compile's
    # graphs call: schema, Meta kernels against the vkml results, AOT tracing with
    # dynamic shapes (torch.library.opcheck); and their values against the CPU's.
    red = ["none", "mean", "sum"].index(reduction)
    x, t = make((6, 5)), _targets((6,), 5, True)
    (w,) = (make((5,), low=0.2, high=2.0),) if weighted else (None,)
    dev = [a.to(VKML) if a is not None else None for a in (x, t, w)]
    args = (*dev, red, -100, 0.1)
    torch.library.opcheck(torch.ops.vkml.cross_entropy_forward.default, args)
    out, lse, total = torch.ops.vkml.cross_entropy_forward(*args)
    g = make(out.shape)
    backward_args = (g.to(VKML), *dev, lse, total, red, -100, 0.1)
    torch.library.opcheck(torch.ops.vkml.cross_entropy_backward.default, backward_args)
    grad = torch.ops.vkml.cross_entropy_backward(*backward_args)
    a = x.clone().requires_grad_()
    expected = F.cross_entropy(a, t, weight=w, reduction=reduction, label_smoothing=0.1)
    expected.backward(g)
    assert_same(out, expected.detach(), atol=1e-6, rtol=1e-5)
    assert_same(lse, torch.logsumexp(x, 1), atol=1e-6, rtol=1e-5)
    assert_same(grad, a.grad, atol=1e-6, rtol=1e-5)


def test_custom_ops_check_their_arguments():
    x, t = make((4, 5)).to(VKML), _targets((4,), 5).to(VKML)
    for device in (VKML, "meta"):
        with pytest.raises(RuntimeError, match="disagree on n"):
            torch.ops.vkml.cross_entropy_forward(x.to(device), t[:3].to(device), None, 1, -100, 0.0)
        with pytest.raises(RuntimeError, match="c elements"):
            w = torch.ones(3, device=device)
            torch.ops.vkml.cross_entropy_forward(x.to(device), t.to(device), w, 1, -100, 0.0)


# ------------------------- the cases of test_loss.py::test_nll_loss, 2-d scores


@pytest.mark.parametrize("reduction, weighted, ignore", LOSS_CASES)
def test_cross_entropy(reduction, weighted, ignore):
    logits = leaf((N, C))
    kwargs = loss_kwargs(reduction, weighted, ignore)
    weight = (kwargs.pop("weight"),) if weighted else ()
    assert_grads_close_to_cpu(
        call_loss(F.cross_entropy, kwargs), logits, class_targets(ignore), *weight
    )


def test_cross_entropy_module_and_unbatched():
    logits = leaf((N, C))
    target = class_targets("none")
    assert_grads_close_to_cpu(lambda x, t: torch.nn.CrossEntropyLoss()(x, t), logits, target)
    assert_grads_close_to_cpu(lambda x, t: F.cross_entropy(x[0], t[0]), logits, target)
    assert_grads_close_to_cpu(
        lambda x, t: F.cross_entropy(x.t().contiguous().t(), t), logits, target
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_every_target_ignored_gives_the_cpus_gradient(dtype):
    """All targets ignored under mean reduction: the loss is 0/0 = NaN and the gradient
    0, as on the CPU (float64's composed backward gave NaN, scaling the ignored rows by
    1/0 before zeroing them; found by test_module_db). A counted class of weight 0 with
    total weight 0 is NaN on both."""
    if dtype == torch.float64 and not torch_vkml.get_device_properties(0).supports_fp64:
        return
    x = leaf((2, 3), dtype)
    target = torch.tensor([1, 1])
    weight = torch.tensor([1.0, 0.0, 2.0], dtype=dtype)
    assert_grads_close_to_cpu(lambda t, y: F.cross_entropy(t, y, ignore_index=1), x, target)
    assert_grads_close_to_cpu(lambda t, y, w: F.cross_entropy(t, y, weight=w), x, target, weight)
