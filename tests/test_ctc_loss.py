"""F.ctc_loss runs natively (ops_ctc_loss.cpp: _ctc_loss and _ctc_loss_backward, both
length overloads): losses and gradients against the CPU for padded and concatenated
targets, lengths as lists and as tensors, each reduction, blank != 0, repeated labels,
impossible alignments (inf, zero_infinity), unbatched input, label sequences longer
than a workgroup, float64, and ATen's argument checks."""

import pytest
import torch
import torch.nn.functional as F
from conftest import _GEN, VKML, assert_grads_close_to_cpu, assert_raises_like_cpu, assert_same

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


def _log_probs(t, n, c, dtype=torch.float32, batch_first=False):
    shape = (n, t, c) if batch_first else (t, n, c)
    x = torch.randn(shape, generator=_GEN, dtype=torch.float64).log_softmax(-1).to(dtype)
    return x.requires_grad_()


def _labels(shape, classes, blank):
    """Random labels in [0, classes) other than blank, with some adjacent repeats."""
    labels = torch.randint(0, classes - 1, shape, generator=_GEN)
    labels[labels >= blank] += 1
    flat = labels.view(-1)
    flat[1::5] = flat[0::5][: flat[1::5].numel()]  # repeated labels need a blank between
    return labels


def _targets(target_lengths, classes, blank, padded):
    if padded:
        return _labels((len(target_lengths), max(target_lengths) + 2), classes, blank)
    return _labels((sum(target_lengths),), classes, blank)


def _ctc(
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
    as_tensors=False,
    transpose=False,
):
    def fn(log_probs, targets):
        il, tl = input_lengths, target_lengths
        if as_tensors:
            il, tl = torch.tensor(il), torch.tensor(tl)
        if transpose:  # batch-first storage, as a model's output often is
            log_probs = log_probs.transpose(0, 1)
        return F.ctc_loss(
            log_probs,
            targets,
            il,
            tl,
            blank=blank,
            reduction=reduction,
            zero_infinity=zero_infinity,
        )

    return fn


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("padded", [True, False], ids=["padded", "concatenated"])
@pytest.mark.parametrize("as_tensors", [False, True], ids=["lists", "tensors"])
def test_matches_cpu(reduction, padded, as_tensors):
    # Samples shorter than T, an empty target, a one-step input.
    input_lengths, target_lengths = [30, 24, 17, 1, 30], [9, 6, 0, 1, 12]
    targets = _targets(target_lengths, 12, 0, padded)
    fn = _ctc(input_lengths, target_lengths, reduction=reduction, as_tensors=as_tensors)
    assert_grads_close_to_cpu(fn, _log_probs(30, 5, 12), targets, atol=1e-4, rtol=1e-4)


def test_strided_log_probs():
    input_lengths, target_lengths = [20, 13, 20], [5, 7, 3]
    targets = _targets(target_lengths, 9, 0, True)
    fn = _ctc(input_lengths, target_lengths, reduction="none", transpose=True)
    assert_grads_close_to_cpu(
        fn, _log_probs(20, 3, 9, batch_first=True), targets, atol=1e-4, rtol=1e-4
    )


@pytest.mark.parametrize("blank", [4, 10])
@pytest.mark.parametrize("padded", [True, False], ids=["padded", "concatenated"])
def test_blank_not_zero(blank, padded):
    input_lengths, target_lengths = [25, 19, 25], [8, 4, 10]
    targets = _targets(target_lengths, 11, blank, padded)
    fn = _ctc(input_lengths, target_lengths, blank=blank, reduction="none")
    assert_grads_close_to_cpu(fn, _log_probs(25, 3, 11), targets, atol=1e-4, rtol=1e-4)


def test_all_repeats():
    """A target of one label repeated needs a blank between each pair: 2S - 1 steps."""
    targets = torch.tensor([[3, 3, 3, 3], [2, 2, 5, 5]])
    fn = _ctc([7, 9], [4, 4], reduction="none")
    assert_grads_close_to_cpu(fn, _log_probs(9, 2, 6), targets, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_impossible_alignment(zero_infinity, reduction):
    """Targets longer than the input allows: an infinite loss (NaN gradients, as on the
    CPU), or zero loss and zero gradient with zero_infinity."""
    input_lengths, target_lengths = [4, 10, 3], [6, 3, 2]
    targets = torch.tensor([[1, 2, 1, 2, 1, 2], [1, 1, 2, 0, 0, 0], [2, 2, 0, 0, 0, 0]])
    fn = _ctc(input_lengths, target_lengths, reduction=reduction, zero_infinity=zero_infinity)
    assert_grads_close_to_cpu(fn, _log_probs(10, 3, 4), targets, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("as_tensors", [False, True], ids=["lists", "tensors"])
def test_unbatched(as_tensors):
    def fn(log_probs, targets):
        il, tl = (torch.tensor(15), torch.tensor(5)) if as_tensors else ([15], [5])
        return F.ctc_loss(log_probs, targets, il, tl, reduction="sum")

    targets = _labels((5,), 7, 0)
    x = torch.randn(18, 7, generator=_GEN).log_softmax(-1).requires_grad_()
    assert_grads_close_to_cpu(fn, x, targets, atol=1e-4, rtol=1e-4)


def test_long_label_sequences():
    """2 S + 1 = 301 positions: more than a workgroup's 256 threads, each thread loops.
    Losses near 1000 leave float32 about 5e-4 of absolute error in the gradient, on the
    CPU as here (both against float64)."""
    input_lengths, target_lengths = [320, 300], [150, 120]
    targets = _targets(target_lengths, 30, 0, True)
    fn = _ctc(input_lengths, target_lengths, reduction="none")
    assert_grads_close_to_cpu(fn, _log_probs(320, 2, 30), targets, atol=2e-3, rtol=1e-4)


def test_float64():
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.skip("device has no shaderFloat64")
    input_lengths, target_lengths = [40, 33, 12], [12, 9, 5]
    targets = _targets(target_lengths, 8, 0, False)
    fn = _ctc(input_lengths, target_lengths, reduction="none")  # float64 sums: not native
    x = _log_probs(40, 3, 8, torch.float64)
    assert_grads_close_to_cpu(fn, x, targets, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("overload", ["list", "tensor"])
@pytest.mark.parametrize("target_dtype", [torch.int64, torch.int32])
def test_private_ops_match_cpu(overload, target_dtype):
    """torch._ctc_loss itself: the loss, and log_alpha where the CPU defines it (its
    steps and positions past a sample's lengths are left unwritten there)."""
    input_lengths, target_lengths = [12, 7], [4, 3]
    targets = _targets(target_lengths, 6, 0, True).to(target_dtype)
    x = _log_probs(12, 2, 6).detach()
    il, tl = input_lengths, target_lengths
    if overload == "tensor":
        il, tl = torch.tensor(il), torch.tensor(tl)

    def to(v, device):
        return v.to(device) if isinstance(v, torch.Tensor) else v

    nll_c, alpha_c = torch._ctc_loss(x, targets, il, tl, 0, False)
    nll_v, alpha_v = torch._ctc_loss(
        x.to(VKML), targets.to(VKML), to(il, VKML), to(tl, VKML), 0, False
    )
    assert_same(nll_v, nll_c, atol=1e-5, rtol=1e-5)
    assert alpha_v.shape == alpha_c.shape
    for b, (i, t) in enumerate(zip(input_lengths, target_lengths, strict=True)):
        assert_same(alpha_v[b, :i, : 2 * t + 1], alpha_c[b, :i, : 2 * t + 1], atol=1e-5, rtol=1e-5)
    grad = torch.rand(2, generator=_GEN)
    g_c = torch.ops.aten._ctc_loss_backward(grad, x, targets, il, tl, nll_c, alpha_c, 0, False)
    g_v = torch.ops.aten._ctc_loss_backward(
        grad.to(VKML),
        x.to(VKML),
        targets.to(VKML),
        to(il, VKML),
        to(tl, VKML),
        nll_v,
        alpha_v,
        0,
        False,
    )
    assert_same(g_v, g_c, atol=1e-5, rtol=1e-5)


def test_list_lengths_need_no_sync():
    """With lengths as lists, forward and backward wait for nothing on the device."""
    x = _log_probs(16, 2, 5).detach().to(VKML).requires_grad_()
    targets = _targets([4, 6], 5, 0, True).to(VKML)
    torch_vkml.synchronize()
    syncs = torch_vkml.memory_stats()["num_syncs"]
    F.ctc_loss(x, targets, [16, 12], [4, 6], reduction="sum").backward()
    assert torch_vkml.memory_stats()["num_syncs"] == syncs


@pytest.mark.parametrize(
    "case",
    [
        ([13, 10], [3, 3], 0),  # an input length past T
        ([10, -1], [3, 3], 0),  # a negative input length
        ([10, 10], [3, -3], 0),  # a negative target length
        ([10, 10], [3, 9], 0),  # a target length past the padded targets
        ([10], [3], 0),  # too few lengths
        ([10, 10], [3, 3], 5),  # blank out of range
    ],
)
def test_errors_like_cpu(case):
    input_lengths, target_lengths, blank = case

    def fn(log_probs, targets):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=blank)

    assert_raises_like_cpu(fn, _log_probs(12, 2, 5).detach(), torch.ones(2, 4, dtype=torch.long))


def test_half_is_rejected_like_cpu():
    def fn(log_probs, targets):
        return F.ctc_loss(log_probs, targets, [5], [2])

    assert_raises_like_cpu(
        fn, _log_probs(5, 1, 4, torch.float16).detach(), torch.ones(1, 2, dtype=torch.long)
    )
