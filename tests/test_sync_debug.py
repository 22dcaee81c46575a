"""torch_vkml.set_sync_debug_mode, as torch.cuda.set_sync_debug_mode: the ops that make
the host wait for the device warn or raise; explicit waits do not; and the ops that do
not wait on CUDA (a training step among them) do not wait on vkml either."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import VKML

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

MESSAGE = "called a synchronizing vkml operation"


@pytest.fixture
def sync_mode():
    """Sets a mode for one test and restores the default after it, raised or not."""
    yield torch_vkml.set_sync_debug_mode
    torch_vkml.set_sync_debug_mode("default")


def test_modes_by_name_and_number(sync_mode):
    for name, number in (("warn", 1), ("error", 2), ("default", 0)):
        sync_mode(name)
        assert torch_vkml.get_sync_debug_mode() == number
        sync_mode(number)
        assert torch_vkml.get_sync_debug_mode() == number
    with pytest.raises(RuntimeError, match="expected one of"):
        sync_mode("loud")
    with pytest.raises(RuntimeError, match="invalid value"):
        sync_mode(3)
    assert torch_vkml.get_sync_debug_mode() == 0


@pytest.mark.parametrize(
    "read",
    [
        lambda t: t.sum().item(),
        lambda t: t.cpu(),
        lambda t: t.tolist(),
        lambda t: t.nonzero(),
        lambda t: t[t > 1],
        lambda t: bool((t > 0).all()),
        lambda t: torch.empty(6).copy_(t, non_blocking=True),  # pageable: a blocking copy
    ],
    ids=["item", "cpu", "tolist", "nonzero", "mask_index", "bool", "to_pageable"],
)
def test_warn_mode_reports_read_backs(sync_mode, read):
    t = torch.arange(6.0, device=VKML)
    sync_mode("warn")
    with pytest.warns(UserWarning, match=MESSAGE):
        read(t)


def test_explicit_waits_and_device_work_are_not_reported(sync_mode):
    t = torch.arange(6.0, device=VKML)
    pinned = torch.empty(6, pin_memory=True)
    sync_mode("warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        u = (t * 2).softmax(0).cumsum(0)
        pinned.copy_(u, non_blocking=True)  # into pinned memory: no wait
        event = torch.Event(device=VKML)
        event.record()
        event.synchronize()
        torch_vkml.current_stream().synchronize()
        torch_vkml.synchronize()
        torch.accelerator.synchronize()
    sync_mode("default")
    assert torch.allclose(pinned, (torch.arange(6.0) * 2).softmax(0).cumsum(0))


def test_error_mode_raises_instead_of_waiting(sync_mode):
    t = torch.arange(6.0, device=VKML) + 1
    sync_mode("error")
    with pytest.raises(RuntimeError, match=MESSAGE):
        t.sum().item()
    with pytest.raises(RuntimeError, match=MESSAGE):
        t.cpu()
    sync_mode("default")
    assert t.sum().item() == 21.0


def test_error_mode_names_an_op_that_runs_on_the_cpu(sync_mode):
    """The CPU fallback copies its vkml arguments to the host: under "error" it raises
    before, naming the op, rather than at a bare read-back; nothing runs or is counted."""
    x = torch.rand(4, dtype=torch.float64, device=VKML) * 0.5 + 0.25
    sync_mode("error")
    with pytest.raises(RuntimeError, match=MESSAGE + ": aten::special_ndtri"):
        torch.special.ndtri(x)  # float64 ndtri takes the CPU route
    sync_mode("default")
    assert torch_vkml.fallback_counts() == {}


# Ops that CUDA runs without a host wait (their checks of device values made by the
# kernels): none may wait on vkml. Each runs under "error" mode.
def _no_wait_ops():
    d = VKML
    x = torch.randn(6, 5, device=d)
    idx = torch.tensor([0, 2, 5, 1], device=d)
    target = torch.tensor([1, -100, 3, 4, 0, 2], device=d)
    eye = torch.eye(3, device=d) * 2
    coo = x.relu().to_sparse().coalesce()
    return {
        "index_select": lambda: x.index_select(0, idx),
        "advanced_index": lambda: x[idx],
        "index_put_accumulate": lambda: torch.zeros(6, device=d).index_put_(
            (idx,), torch.ones(4, device=d), accumulate=True
        ),
        "index_add_": lambda: torch.zeros(6, 5, device=d).index_add_(0, idx, x[:4]),
        "scatter_reduce": lambda: torch.zeros(6, device=d).scatter_reduce(0, idx, x[:4, 0], "amax"),
        "take_put": lambda: torch.zeros(30, device=d).put_(idx, torch.take(x, idx)),
        "masked_scatter": lambda: torch.zeros(6, 5, device=d).masked_scatter(x > 0, x),
        "embedding_bag": lambda: F.embedding_bag(idx, x, torch.tensor([0, 2], device=d)),
        "repeat_interleave_output_size": lambda: torch.repeat_interleave(
            x[:4], idx, dim=0, output_size=8
        ),
        "tril_triu_indices": lambda: (
            torch.tril_indices(5, 4, device=d),
            torch.triu_indices(5, 4, 1, device=d),
        ),
        "cross_entropy_ignore_index": lambda: F.cross_entropy(x, target, label_smoothing=0.1),
        "nll_multi_margin": lambda: (
            F.nll_loss(x.log_softmax(1), target),
            F.multi_margin_loss(x, target.clamp(min=0)),
        ),
        "ctc_int_lengths": lambda: F.ctc_loss(
            torch.randn(12, 2, 6, device=d).log_softmax(-1),
            torch.randint(1, 6, (2, 5), device=d),
            [12, 10],
            [5, 3],
        ),
        "random": lambda: (
            torch.multinomial(x.softmax(1), 2),
            torch.randperm(10, device=d),
            torch.bernoulli(x.sigmoid()),
            F.dropout(x, 0.5),
        ),
        "sort_topk_median": lambda: (x.sort(1), x.topk(2, 1), x.median(1), x.kthvalue(2, 1)),
        "search_histc": lambda: (
            torch.searchsorted(torch.arange(5.0, device=d), x),
            torch.histc(x, 10, -1, 1),
            torch.isin(idx, idx[:2]),
            F.one_hot(idx, 6),
        ),
        "pool_indices": lambda: F.max_unpool2d(
            *F.max_pool2d(x.view(1, 1, 6, 5), 2, return_indices=True), 2, output_size=(6, 5)
        ),
        "linalg_ex": lambda: (
            torch.linalg.cholesky_ex(eye),
            torch.linalg.inv_ex(eye),
            torch.linalg.solve_ex(eye, x[:3, 0]),
            torch.linalg.det(eye),
            torch.linalg.qr(x),
        ),
        "sparse_softmax": lambda: (torch.sparse.softmax(coo, 1), torch.sparse.log_softmax(coo, 0)),
        "clip_grad_norm": lambda: torch.nn.utils.clip_grad_norm_(
            [torch.nn.Parameter(x.clone())], 1.0
        ),
    }


@pytest.mark.parametrize("name", list(_no_wait_ops()))
def test_ops_without_a_host_wait_on_cuda_do_not_wait(sync_mode, name):
    op = _no_wait_ops()[name]
    sync_mode("error")
    op()
    sync_mode("default")
    torch_vkml.synchronize()


@pytest.mark.parametrize("fused", [False, True], ids=["foreach", "fused"])
def test_a_training_step_does_not_wait(sync_mode, fused):
    """Embedding, convolution with batch norm, attention, a cross entropy with ignored
    targets, gradient clipping and AdamW: nothing in the step reads the device."""
    torch.manual_seed(0)
    emb = torch.nn.Embedding(50, 16)
    conv = torch.nn.Sequential(torch.nn.Conv1d(16, 16, 3, padding=1), torch.nn.BatchNorm1d(16))
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
    head = torch.nn.Linear(16, 50)
    model = torch.nn.ModuleList([emb, conv, layer, head]).to(VKML)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused, foreach=not fused)
    tokens = torch.randint(0, 50, (4, 12), device=VKML)
    targets = tokens.roll(-1, 1).masked_fill(tokens % 7 == 0, -100)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(12, device=VKML)

    def step():
        opt.zero_grad(set_to_none=True)
        h = conv(emb(tokens).transpose(1, 2)).transpose(1, 2)
        logits = head(layer(h, src_mask=mask, is_causal=True))
        loss = F.cross_entropy(logits.reshape(-1, 50), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    first = step().item()  # optimizer state and kernels made outside the checked step
    sync_mode("error")
    loss = step()
    sync_mode("default")
    assert 0 < loss.item() < first + 1
