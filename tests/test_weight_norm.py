"""Weight normalization runs natively (composite/weight_norm.cpp: _weight_norm_interface
and its backward from native norms, sums and elementwise ops): outputs and gradients of
nn.utils.weight_norm and nn.utils.parametrizations.weight_norm against the CPU."""

import copy
import warnings

import pytest
import torch
from conftest import _GEN, VKML, assert_grads_close_to_cpu, assert_same
from torch import nn
from torch.nn.utils import parametrizations

pytestmark = pytest.mark.usefixtures("no_fallback")


def _randomize(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=_GEN))
    return module


MODULES = {
    "linear": (lambda: nn.Linear(6, 5), (4, 6)),
    "conv1d": (lambda: nn.Conv1d(4, 6, 5, padding=2, groups=2), (2, 4, 9)),
}


def _legacy_weight_norm(module, dim):
    with warnings.catch_warnings():  # deprecated in favour of the parametrization
        warnings.simplefilter("ignore", FutureWarning)
        return nn.utils.weight_norm(module, dim=dim)


@pytest.mark.parametrize("api", ["legacy", "parametrization"])
@pytest.mark.parametrize("module", list(MODULES))
# dim 0: per output unit; 2: the kernel axis of a conv, as wav2vec2's positional conv;
# -1 / None: one norm for the whole weight (ATen's non-fused composite path).
@pytest.mark.parametrize("dim", [0, 2, None])
def test_forward_and_gradients_match_cpu(api, module, dim):
    make_module, input_shape = MODULES[module]
    if module == "linear" and dim == 2:
        dim = 1  # Linear's last dim
    base = _randomize(make_module())
    wrap = _legacy_weight_norm if api == "legacy" else parametrizations.weight_norm
    cpu = wrap(copy.deepcopy(base), dim=dim)
    vk = wrap(copy.deepcopy(base), dim=dim).to(VKML)
    x = torch.randn(input_shape, generator=_GEN)
    grad = torch.randn(cpu(x).shape, generator=_GEN)
    y_cpu, y_vk = cpu(x), vk(x.to(VKML))
    assert_same(y_vk, y_cpu, atol=1e-5, rtol=1e-5)
    y_cpu.backward(grad)
    y_vk.backward(grad.to(VKML))
    for (name, p_cpu), (_, p_vk) in zip(cpu.named_parameters(), vk.named_parameters(), strict=True):
        assert_same(p_vk.grad, p_cpu.grad, atol=1e-5, rtol=1e-5, where=name)


@pytest.mark.parametrize("dim", [0, 2])
def test_interface_matches_cpu(dim):
    """The aten op itself: w and the norms it saves, and both gradients."""
    v = torch.randn(5, 3, 4, generator=_GEN).requires_grad_()
    g_shape = [1, 1, 1]
    g_shape[dim] = v.shape[dim]
    g = torch.randn(g_shape, generator=_GEN).requires_grad_()

    def fn(v, g):
        w, norms = torch._weight_norm_interface(v, g, dim)
        return w * 1.0 + 0.0 * norms.sum()

    assert_grads_close_to_cpu(fn, v, g, atol=1e-5, rtol=1e-5)
    w_cpu, n_cpu = torch._weight_norm_interface(v.detach(), g.detach(), dim)
    w_vk, n_vk = torch._weight_norm_interface(v.detach().to(VKML), g.detach().to(VKML), dim)
    assert_same((w_vk, n_vk), (w_cpu, n_cpu), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype):
    """float32 math and float32 norms, as ATen keeps them for 16-bit weights."""
    v = torch.randn(6, 8, generator=_GEN).to(dtype)
    g = torch.randn(6, 1, generator=_GEN).to(dtype)
    w_cpu, n_cpu = torch._weight_norm_interface(v, g, 0)
    w_vk, n_vk = torch._weight_norm_interface(v.to(VKML), g.to(VKML), 0)
    assert n_vk.dtype == n_cpu.dtype == torch.float32
    assert_same((w_vk, n_vk), (w_cpu, n_cpu), atol=1e-2, rtol=1e-2)
    grad_w = torch.randn(6, 8, generator=_GEN).to(dtype)
    expected = torch.ops.aten._weight_norm_interface_backward(grad_w, v, g, n_cpu, 0)
    actual = torch.ops.aten._weight_norm_interface_backward(
        grad_w.to(VKML), v.to(VKML), g.to(VKML), n_vk, 0
    )
    assert_same(actual, expected, atol=2e-2, rtol=2e-2)


def test_training_step_of_a_weight_normed_conv():
    """A few SGD steps through a weight-normed conv stay with the CPU's."""
    base = _randomize(nn.Conv1d(3, 4, 3, padding=1))
    models = [parametrizations.weight_norm(copy.deepcopy(base), dim=2).to(d) for d in ("cpu", VKML)]
    x = torch.randn(2, 3, 10, generator=_GEN)
    for model in models:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            model(x.to(next(model.parameters()).device)).square().mean().backward()
            opt.step()
    for (name, p_cpu), (_, p_vk) in zip(
        models[0].named_parameters(), models[1].named_parameters(), strict=True
    ):
        assert_same(p_vk, p_cpu, atol=1e-5, rtol=1e-5, where=name)
