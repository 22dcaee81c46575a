"""NN functional ops, forward and backward, against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import FLOAT_DTYPES, assert_close_to_cpu, assert_grads_close_to_cpu, dtype_id, make

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
def test_softmax_is_numerically_stable(fn):
    inf = float("inf")
    x = torch.tensor([[1000.0, 0.0, -1000.0], [-1000.0, -1000.5, -999.0], [0.0, -inf, 1.0]])
    assert_close_to_cpu(lambda t: fn(t, dim=1), x)
    assert_close_to_cpu(lambda t: fn(t[:2], dim=0), x)


@pytest.mark.parametrize("shape, dim", [((3, 5000), -1), ((5000, 3), 0), ((2, 3000, 2), 1)])
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_long_rows(fn, shape, dim):
    x = _leaf(shape, low=-10, high=10)
    assert_grads_close_to_cpu(lambda t: fn(t, dim=dim), x)


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
