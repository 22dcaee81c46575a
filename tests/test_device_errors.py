"""Checks that depend on tensor values run on the device: a bad value (a class target out
of range, an integer division by zero, ...) is noted by the kernel and raised, with the
exception type and words of PyTorch's CPU, at the next point where the host reads the
device (item(), a copy to the CPU, synchronize()). The op itself never waits for the GPU,
and the device stays usable after the error."""

import pytest
import torch
import torch.nn.functional as F
from conftest import VKML, check_raises_later, cpu_error, host_syncs

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


LOGITS = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
LOGITS_ND = torch.randn(2, 3, 2, 2, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("bad", [3, 7, -2])
def test_cross_entropy_target_out_of_range(reduction, bad):
    target = torch.tensor([0, bad, 2, 1])
    check_raises_later(lambda x, t: F.cross_entropy(x, t, reduction=reduction), LOGITS, target)


@pytest.mark.parametrize(
    "kwargs",
    [dict(ignore_index=1), dict(weight=torch.tensor([1.0, 2.0, 0.5])), dict(label_smoothing=0.1)],
    ids=["ignore_index", "weight", "label_smoothing"],
)
def test_cross_entropy_target_out_of_range_with_options(kwargs):
    target = torch.tensor([0, 1, 5, 1])

    def fn(x, t, w=None):
        kw = dict(kwargs)
        if w is not None:
            kw["weight"] = w
        return F.cross_entropy(x, t, **kw)

    args = [LOGITS, target] + ([kwargs["weight"]] if "weight" in kwargs else [])
    check_raises_later(fn, *args)


def test_ignore_index_outside_the_classes_is_not_an_error():
    target = torch.tensor([0, -100, 2, -100])
    got = F.cross_entropy(LOGITS.to(VKML), target.to(VKML))
    torch.testing.assert_close(got.cpu(), F.cross_entropy(LOGITS, target), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_nll_loss_targets_out_of_range(reduction):
    logp = LOGITS.log_softmax(1)
    check_raises_later(
        lambda x, t: F.nll_loss(x, t, reduction=reduction), logp, torch.tensor([0, 1, 3, 1])
    )
    target_nd = torch.tensor([[[0, 1], [2, 9]], [[1, 1], [0, 0]]])
    check_raises_later(
        lambda x, t: F.nll_loss(x, t, reduction=reduction), LOGITS_ND.log_softmax(1), target_nd
    )
    check_raises_later(
        lambda x, t: F.cross_entropy(x, t, reduction=reduction), LOGITS_ND, target_nd
    )


def test_margin_loss_targets_out_of_range():
    check_raises_later(F.multi_margin_loss, LOGITS, torch.tensor([0, 1, 3, 2]))
    check_raises_later(F.multi_margin_loss, LOGITS, torch.tensor([0, -1, 2, 2]))
    check_raises_later(
        F.multilabel_margin_loss,
        LOGITS,
        torch.tensor([[0, 3, -1], [1, -1, 0], [2, 1, 0], [0, -1, 1]]),
    )
    check_raises_later(
        F.multilabel_margin_loss,
        LOGITS,
        torch.tensor([[0, -2, -1], [1, -1, 0], [2, 1, 0], [0, 1, 2]]),
    )


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a // b,
        lambda a, b: torch.remainder(a, b),
        lambda a, b: torch.fmod(a, b),
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
    ],
    ids=["floordiv", "remainder", "fmod", "div_trunc", "div_floor"],
)
def test_integer_division_by_zero(op, dtype):
    a = torch.tensor([7, 8, 9], dtype=dtype)
    b = torch.tensor([2, 0, 3], dtype=dtype)
    check_raises_later(op, a, b)
    # A divisor given by value is checked on the host, at once, as on the CPU.
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(a.to(VKML), 0)
    wraps_to_zero = 256 if dtype == torch.uint8 else 2**32  # as the dtype stores it
    if dtype != torch.int64:
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            op(a, wraps_to_zero)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            op(a.to(VKML), wraps_to_zero)
    # Nonzero divisors: the CPU's results.
    good = torch.tensor([2, 5, 3], dtype=dtype)
    assert op(a.to(VKML), good.to(VKML)).cpu().tolist() == op(a, good).tolist()


@pytest.mark.parametrize(
    "values,classes",
    [([1, 5], 3), ([0, -1], 3), ([-1, 7], 3), ([2, -3], -1)],
    ids=["too_large", "negative", "both", "negative_inferred"],
)
def test_one_hot_classes(values, classes):
    x = torch.tensor(values)
    if classes == -1:
        # Inferring the classes reads the maximum: the negative class is raised there.
        kind, message = cpu_error(F.one_hot, x, classes)
        with pytest.raises(kind, match=message):
            F.one_hot(x.to(VKML), classes)
        return
    check_raises_later(F.one_hot, x, classes)


@pytest.mark.parametrize("values", [[1, 2], [-1, 2]], ids=["positive", "negative"])
@pytest.mark.parametrize("classes", [0, -3])
def test_one_hot_without_classes_raises_at_once(values, classes):
    # No class fits: raised by the call itself, a negative value first, as on the CPU.
    x = torch.tensor(values)
    kind, message = cpu_error(F.one_hot, x, classes)
    with pytest.raises(kind) as info:
        F.one_hot(x.to(VKML), classes)
    assert str(info.value).splitlines()[0] == message
    torch_vkml.synchronize()  # nothing left pending


def test_one_hot_in_range_needs_no_wait():
    x = torch.tensor([[0, 2], [1, 1]])
    d = x.to(VKML)
    torch_vkml.synchronize()
    before = host_syncs()
    got = F.one_hot(d, 4)
    assert host_syncs() == before
    assert torch.equal(got.cpu(), F.one_hot(x, 4))
    assert torch.equal(F.one_hot(d).cpu(), F.one_hot(x))


@pytest.mark.parametrize(
    "offsets", [[1, 2], [0, 5], [0, 1, 9]], ids=["first_not_zero", "last_past_end", "last"]
)
def test_embedding_bag_offsets(offsets):
    weight = torch.randn(5, 2)
    indices = torch.tensor([1, 2, 3])
    check_raises_later(
        lambda i, w, o: F.embedding_bag(i, w, o), indices, weight, torch.tensor(offsets)
    )


@pytest.mark.parametrize(
    "probs",
    [[0.5, -1.0], [0.5, float("nan")], [float("inf"), 1.0], [[0.0, 0.0], [1.0, 1.0]]],
    ids=["negative", "nan", "inf", "zero_sum"],
)
def test_multinomial_probabilities(probs):
    check_raises_later(lambda p: torch.multinomial(p, 1), torch.tensor(probs))


def test_histc_and_bincount_raise_as_on_the_cpu():
    # Both need the data's range on the host anyway (the CPU reads it too).
    for fn, x in [
        (torch.histc, torch.tensor([1.0, float("inf")])),
        (torch.bincount, torch.tensor([1, -1])),
    ]:
        kind, message = cpu_error(fn, x)
        with pytest.raises(kind) as info:
            fn(x.to(VKML))
        assert str(info.value).splitlines()[0] == message


def test_the_first_error_is_raised_by_synchronize_and_item():
    bad = torch.tensor([0, 4]).to(VKML)
    F.cross_entropy(LOGITS[:2].to(VKML), bad)
    torch.tensor([1]).to(VKML) // torch.tensor([0]).to(VKML)  # a second error, not kept
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        torch_vkml.synchronize()
    torch_vkml.synchronize()  # cleared
    loss = F.cross_entropy(LOGITS[:2].to(VKML), bad)
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        loss.item()
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F.cross_entropy(LOGITS[:2].to(VKML), bad)
        torch.accelerator.synchronize()
