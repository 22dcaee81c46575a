"""torch.nn's inference fast path on vkml (composite/transformer.cpp):
nn.MultiheadAttention and nn.TransformerEncoderLayer in eval mode under no_grad call the
fused ops _native_multi_head_attention and _transformer_encoder_layer_fwd, and
nn.TransformerEncoder packs a padded batch into a nested tensor around its layers. Each
runs natively and matches the CPU's fast path on the same weights, every output position
included (the nested path returns zeros past each sequence's length, as on the CPU).
Before, every layer ran on the CPU fallback and the nested path raised NotImplementedError.

Tolerance: float32 products of length <= 64 in another order, 1e-5."""

import copy
import warnings

import pytest
import torch
from conftest import VKML
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = dict(atol=1e-5, rtol=1e-5)
E, HEADS, B, T = 16, 4, 3, 7


class OpNames(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__.split(".")[0])
        return func(*args, **(kwargs or {}))


def _pair(make):
    torch.manual_seed(0)
    cpu = make().eval()
    return cpu, copy.deepcopy(cpu).to(VKML)


def _run(module, *args, **kwargs):
    """module(*args) under no_grad with the arguments moved to its device; the op names."""
    device = next(module.parameters()).device
    copies = {}  # one copy per tensor: the fast path needs query, key and value to be one

    def move(a):
        if not isinstance(a, torch.Tensor):
            return a
        return copies.setdefault(id(a), a.to(device))

    moved = [move(a) for a in args]
    kw = {k: move(v) for k, v in kwargs.items()}
    names = OpNames()
    with torch.no_grad(), names, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the nested-tensor prototype warning
        out = module(*moved, **kw)
    return out, names.names


def _close(got, want):
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=True):
            _close(g, w)
        return
    if want is None:
        assert got is None
        return
    assert got.device.type == VKML and not got.is_nested
    torch.testing.assert_close(got.cpu(), want, **TOL, equal_nan=True)


def _batch():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(B, T, E, generator=g)
    padding = torch.zeros(B, T, dtype=torch.bool)
    padding[1, 4:] = True
    padding[2, 6:] = True
    return x, padding


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("masks", ["none", "padding", "causal", "both"])
def test_multi_head_attention_fast_path(need_weights, average, masks):
    cpu, vk = _pair(lambda: nn.MultiheadAttention(E, HEADS, batch_first=True))
    x, padding = _batch()
    kw = dict(need_weights=need_weights, average_attn_weights=average)
    if masks in ("padding", "both"):
        kw["key_padding_mask"] = padding
    if masks in ("causal", "both"):
        kw["attn_mask"] = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    want, cpu_ops = _run(cpu, x, x, x, **kw)
    got, ops = _run(vk, x, x, x, **kw)
    assert "_native_multi_head_attention" in cpu_ops and "_native_multi_head_attention" in ops
    _close(got, want)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masks", ["none", "padding", "causal"])
def test_encoder_layer_fast_path(norm_first, activation, masks):
    cpu, vk = _pair(
        lambda: nn.TransformerEncoderLayer(
            E, HEADS, 32, batch_first=True, activation=activation, norm_first=norm_first
        )
    )
    x, padding = _batch()
    kw = {}
    if masks == "padding":
        kw["src_key_padding_mask"] = padding
    if masks == "causal":
        kw["src_mask"] = nn.Transformer.generate_square_subsequent_mask(T)
    want, cpu_ops = _run(cpu, x, **kw)
    got, ops = _run(vk, x, **kw)
    assert "_transformer_encoder_layer_fwd" in cpu_ops and "_transformer_encoder_layer_fwd" in ops
    _close(got, want)


def test_encoder_packs_padded_batches_as_nested_tensors():
    """The default nn.TransformerEncoder (enable_nested_tensor=True) with a padding mask:
    nested in, nested through each layer, padded out with zeros past each length."""
    cpu, vk = _pair(
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, 32, batch_first=True), 2)
    )
    x, padding = _batch()
    want, cpu_ops = _run(cpu, x, src_key_padding_mask=padding)
    got, ops = _run(vk, x, src_key_padding_mask=padding)
    for names in (cpu_ops, ops):
        assert "_nested_tensor_from_mask" in names and "to_padded_tensor" in names
    _close(got, want)
    assert bool((got[1, 4:] == 0).all()) and bool((got[2, 6:] == 0).all())


def test_nested_tensor_conversions():
    x, padding = _batch()
    valid = padding.logical_not()
    for device in ("cpu", VKML):
        assert torch._nested_tensor_from_mask_left_aligned(x.to(device), valid.to(device))
        ragged = valid.clone()
        ragged[0, 2] = False  # a hole: not left-aligned
        assert not torch._nested_tensor_from_mask_left_aligned(x.to(device), ragged.to(device))
        with pytest.raises(RuntimeError, match="left-aligned|left aligned"):
            torch._nested_tensor_from_mask(x.to(device), ragged.to(device), mask_check=True)
    nested = torch._nested_tensor_from_mask(x.to(VKML), valid.to(VKML))
    want = torch._nested_tensor_from_mask(x, valid)
    assert nested.is_nested and nested.device.type == VKML
    padded = torch.nested.to_padded_tensor(nested, 0.0)
    torch.testing.assert_close(
        padded.cpu(), torch.nested.to_padded_tensor(want, 0.0), atol=0, rtol=0
    )
    padded = torch.nested.to_padded_tensor(nested, -1.0, (B, T + 2, E))
    _close(padded, torch.nested.to_padded_tensor(want, -1.0, (B, T + 2, E)))


def test_half_precision_inference_runs_natively():
    """A float16 encoder on vkml follows the float32 CPU model (fp16 rounding)."""
    cpu, vk = _pair(
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, 32, batch_first=True), 2)
    )
    vk = vk.half()
    x, padding = _batch()
    want, _ = _run(cpu, x, src_key_padding_mask=padding)
    got, ops = _run(vk, x.half(), src_key_padding_mask=padding)
    assert "_transformer_encoder_layer_fwd" in ops and got.dtype == torch.float16
    torch.testing.assert_close(got.float().cpu(), want, atol=2e-2, rtol=2e-2)
