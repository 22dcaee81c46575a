"""Strided nested tensors (torch.nested.nested_tensor's default layout) on vkml, against
the same program on the CPU: ATen's device-generic nested kernels registered for
NestedTensorPrivateUse1 (csrc/aten/composite/nested.cpp), running vkml's own ops on the
buffer. The jagged layout is a Python subclass over ordinary tensors and is covered with
the transformer tests."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import VKML, make

# A strided nested tensor warns that the API is a prototype; the CPU warns the same.
pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")

SHAPES = [(2, 5), (4, 5), (3, 5)]
ATOL = dict(atol=1e-5, rtol=1e-5)


def components(shapes=SHAPES, requires_grad=False):
    return [make(s).requires_grad_(requires_grad) for s in shapes]


def nested(parts, device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.nested.nested_tensor([p.detach().to(device) for p in parts])


def assert_nested_close(actual, expected, **tol):
    assert actual.is_nested and actual.device.type == VKML
    got, want = actual.unbind(), expected.unbind()
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g.cpu(), w, **(tol or ATOL))


def both(fn, *parts_lists):
    """fn on nested tensors made of the same components, on the CPU and on vkml."""
    cpu = fn(*[nested(p, "cpu") for p in parts_lists])
    vk = fn(*[nested(p, VKML) for p in parts_lists])
    return vk, cpu


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a + b,
        lambda a, b: a * b,
        lambda a, b: a - b,
        lambda a, b: a / (b.abs() + 1),
        lambda a, b: a.masked_fill(b > 0, -1.0),
        lambda a, b: a.mul(2.5).add_(b),
    ],
    ids=["add", "mul", "sub", "div", "masked_fill", "inplace"],
)
def test_binary(fn, no_fallback):
    vk, cpu = both(fn, components(), components())
    assert_nested_close(vk, cpu)


def layer_norm(x):
    weight = torch.linspace(0.5, 1.5, 5, device=x.device)
    return F.layer_norm(x, (5,), weight, weight - 1)  # nested layer_norm takes both


@pytest.mark.parametrize(
    "fn",
    [
        torch.relu,
        F.gelu,
        F.silu,
        torch.tanh,
        torch.neg,
        torch.abs,
        torch.sin,
        torch.cos,
        lambda x: x.abs().sqrt(),
        lambda x: torch.softmax(x, -1),
        layer_norm,
        lambda x: x.transpose(1, 2).contiguous(),
        lambda x: x.unsqueeze(1).squeeze(1),
        lambda x: x.clone().zero_() + 1,
    ],
    ids=[
        "relu", "gelu", "silu", "tanh", "neg", "abs", "sin", "cos", "sqrt", "softmax",
        "layer_norm", "transpose", "unsqueeze_squeeze", "zero_",
    ],
)  # fmt: skip
def test_unary(fn, no_fallback):
    vk, cpu = both(fn, components())
    assert_nested_close(vk, cpu)


def test_linear_matmul_bmm(no_fallback):
    w, b = make((7, 5)), make((7,))
    vk, cpu = both(lambda x: F.linear(x, w.to(x.device), b.to(x.device)), components())
    assert_nested_close(vk, cpu, atol=1e-4, rtol=1e-4)
    right = components([(5, 3), (5, 6), (5, 2)])
    vk, cpu = both(torch.matmul, components(), right)
    assert_nested_close(vk, cpu, atol=1e-4, rtol=1e-4)
    vk, cpu = both(torch.bmm, components(), right)
    assert_nested_close(vk, cpu, atol=1e-4, rtol=1e-4)


def test_structure_and_padding(no_fallback):
    parts = components()
    vk = nested(parts, VKML)
    assert vk.is_nested and vk.device.type == VKML
    assert vk.size(0) == 3 and vk.dim() == 3
    for got, want in zip(vk.unbind(), parts, strict=True):
        assert torch.equal(got.cpu(), want)
    padded = torch.nested.to_padded_tensor(vk, -2.0)
    want = torch.nested.to_padded_tensor(nested(parts, "cpu"), -2.0)
    torch.testing.assert_close(padded.cpu(), want, atol=0, rtol=0)
    # chunk, split, narrow and select go through the nested metadata
    torch.testing.assert_close(vk[1].cpu(), parts[1], atol=0, rtol=0)
    for got, want in zip(vk.chunk(5, -1), nested(parts, "cpu").chunk(5, -1), strict=True):
        assert_nested_close(got, want)
    back = vk.to("cpu")
    assert back.is_nested and back.device.type == "cpu"
    assert torch.equal(torch.nested.to_padded_tensor(back, 0.0), torch.nested.to_padded_tensor(
        nested(parts, "cpu"), 0.0))  # fmt: skip


def test_dropout_statistics(no_fallback):
    x = nested([torch.ones(400, 5), torch.ones(600, 5)], VKML)
    y = F.dropout(x, 0.25, training=True)
    values = torch.cat([t.flatten() for t in y.unbind()]).cpu()
    kept = values != 0
    assert torch.allclose(values[kept], torch.full_like(values[kept], 1 / 0.75))
    assert abs(kept.float().mean().item() - 0.75) < 0.03


def test_training_step_matches_cpu(no_fallback):
    """linear -> gelu -> layer_norm -> linear over a nested batch, backward into shared
    weights, as a model over variable-length sequences does."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(5, 8), torch.nn.GELU(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 3)
    )
    parts = components()
    results = {}
    for device in ("cpu", VKML):
        m = model.to(device)
        m.zero_grad()
        x = nested(parts, device)
        out = m(x)
        loss = torch.cat([t.pow(2).sum().view(1) for t in out.unbind()]).sum()
        loss.backward()
        results[device] = (loss.item(), [p.grad.to("cpu", copy=True) for p in m.parameters()])
        model = model.cpu()
    assert results[VKML][0] == pytest.approx(results["cpu"][0], rel=1e-5)
    for g, w in zip(results[VKML][1], results["cpu"][1], strict=True):
        torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4)


def test_bad_input_raises_like_cpu():
    a = nested(components(), VKML)
    b = nested(components([(2, 5), (4, 5)]), VKML)
    with pytest.raises(RuntimeError):
        a + b  # different numbers of components
    with pytest.raises(RuntimeError):
        torch.bmm(a, nested(components([(4, 3), (5, 6), (5, 2)]), VKML))  # 2x5 @ 4x3


def test_padding_to_a_given_size_and_back(no_fallback):
    """Found by PyTorch's test_nestedtensor.py on vkml: output_size larger in any dim."""
    parts = components([(2, 3), (4, 5), (1, 2)])
    want = torch.nested.to_padded_tensor(nested(parts, "cpu"), -1.0, (3, 5, 6))
    got = torch.nested.to_padded_tensor(nested(parts, VKML), -1.0, (3, 5, 6))
    torch.testing.assert_close(got.cpu(), want, atol=0, rtol=0)
    # and back: the rows of a padded batch as a nested tensor of the example's sizes
    sizes = torch.tensor([[2, 3], [4, 5], [1, 2]])
    back = torch._nested_from_padded(got, sizes)
    for g, w in zip(back.unbind(), parts, strict=True):
        torch.testing.assert_close(g.cpu(), w, atol=0, rtol=0)


def test_gradients_through_the_buffer(no_fallback):
    """as_nested_tensor -> values() (a view of the buffer): gradients reach each part."""
    parts = [make(s, torch.float64).requires_grad_() for s in [(1, 2, 4), (2, 2, 4), (3, 2, 4)]]
    weights = make((6 * 8,), torch.float64)
    grads = {}
    for device in ("cpu", VKML):
        leaves = [p.detach().to(device).requires_grad_() for p in parts]
        nt = torch.nested.as_nested_tensor(leaves)
        (nt.values() * weights.to(device)).sum().backward()
        grads[device] = [leaf.grad.cpu() for leaf in leaves]
    for g, w in zip(grads[VKML], grads["cpu"], strict=True):
        torch.testing.assert_close(g, w, atol=0, rtol=0)
