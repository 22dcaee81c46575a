"""Module conversion keeps Parameter objects, as on CUDA: `.to("vkml")`, `.vkml()`, `.cpu()`,
`.half()`, `.to_empty()` and `load_state_dict` leave each Parameter the same Python object,
so weight tying, optimizers built before the move, and tensor hooks keep working."""

import pytest
import torch
import torch.nn as nn
from conftest import VKML

pytestmark = pytest.mark.usefixtures("no_fallback")


def tied_model():
    torch.manual_seed(0)
    e = nn.Embedding(10, 4)
    h = nn.Linear(4, 10, bias=False)
    h.weight = e.weight
    return nn.ModuleDict(dict(e=e, h=h))


def loss_of(m, tokens):
    return m["h"](m["e"](tokens)).log_softmax(-1).mean()


@pytest.mark.parametrize(
    "move",
    [lambda m: m.to(VKML), lambda m: m.vkml(), lambda m: m.to(torch.device(VKML, 0))],
    ids=["to", "vkml", "to_device"],
)
def test_tied_weights_stay_tied_and_the_same_object(move):
    m = tied_model()
    w = m["e"].weight
    move(m)
    assert m["e"].weight is w and m["h"].weight is w
    assert w.device.type == VKML and isinstance(w, nn.Parameter) and w.requires_grad
    assert len(list(m.parameters())) == 1


def test_tied_gradients_accumulate_as_on_the_cpu():
    cpu = tied_model()
    dev = tied_model().to(VKML)
    tokens = torch.tensor([1, 2, 3, 2])
    loss_of(cpu, tokens).backward()
    loss_of(dev, tokens.to(VKML)).backward()
    # Both uses (the embedding and the output layer) add into the one gradient.
    assert dev["h"].weight.grad is dev["e"].weight.grad
    torch.testing.assert_close(
        dev["e"].weight.grad.cpu(), cpu["e"].weight.grad, rtol=1e-5, atol=1e-6
    )


def test_an_optimizer_built_before_the_move_updates_the_device_parameters():
    m = tied_model()
    ref = tied_model()
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=0.1)
    m.to(VKML)
    tokens = torch.tensor([4, 5, 6])
    for _ in range(3):
        opt.zero_grad()
        ref_opt.zero_grad()
        loss_of(m, tokens.to(VKML)).backward()
        loss_of(ref, tokens).backward()
        opt.step()
        ref_opt.step()
    torch.testing.assert_close(m["e"].weight.cpu(), ref["e"].weight, rtol=1e-5, atol=1e-6)
    assert opt.param_groups[0]["params"][0] is m["e"].weight


def test_hooks_and_gradients_move_with_the_parameter():
    lin = nn.Linear(3, 2)
    w = lin.weight
    seen, accumulated = [], []
    w.register_hook(lambda g: seen.append(g.device.type))
    w.register_post_accumulate_grad_hook(lambda p: accumulated.append(p.grad.device.type))
    lin(torch.randn(4, 3)).sum().backward()
    grad = w.grad
    lin.to(VKML)
    assert lin.weight is w and w.grad is grad and grad.device.type == VKML
    torch.testing.assert_close(grad.cpu(), grad.cpu())  # readable on the device
    lin(torch.randn(4, 3, device=VKML)).sum().backward()
    assert seen == ["cpu", VKML] and accumulated == ["cpu", VKML]


def test_round_trip_and_dtype_changes_keep_the_objects():
    m = tied_model()
    w = m["e"].weight
    before = w.detach().clone()
    m.to(VKML).half()
    assert m["h"].weight is w and w.dtype == torch.float16 and w.device.type == VKML
    m.bfloat16().float().cpu()
    assert m["h"].weight is w and w.device.type == "cpu" and w.dtype == torch.float32
    # fp32 -> bf16 -> fp32 rounds; the values are still the model's.
    torch.testing.assert_close(w.detach(), before, rtol=1e-2, atol=1e-2)


def test_load_state_dict_and_to_empty_keep_the_objects():
    m = tied_model().to(VKML)
    w = m["e"].weight
    src = tied_model()
    with torch.no_grad():
        src["e"].weight.mul_(2)
    m.load_state_dict(src.state_dict())
    assert m["h"].weight is w
    torch.testing.assert_close(w.cpu(), src["e"].weight.detach())
    lin = nn.Linear(3, 2)
    b = lin.bias
    lin.to_empty(device=VKML)
    assert lin.bias is b and b.device.type == VKML


def test_lstm_flat_weights_follow_the_move():
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 5, batch_first=True)
    ref = nn.LSTM(4, 5, batch_first=True)
    ref.load_state_dict(lstm.state_dict())
    params = list(lstm.parameters())
    lstm.to(VKML)
    assert all(a is b for a, b in zip(params, lstm.parameters(), strict=True))
    x = torch.randn(2, 3, 4)
    out, _ = lstm(x.to(VKML))
    torch.testing.assert_close(out.cpu(), ref(x)[0], rtol=1e-4, atol=1e-5)


def test_pytorch_swap_mode_still_works():
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        m = tied_model()
        w = m["e"].weight
        m.to(VKML)
        assert m["h"].weight is w and w.device.type == VKML
    finally:
        torch.__future__.set_swap_module_params_on_conversion(False)


def test_lazy_modules_moved_before_their_first_forward():
    """A lazy module's UninitializedParameter stays one through .to("vkml") (PyTorch
    replaced it by an empty Parameter, so the first forward raised "in_features ... is not
    equal to in_features from self.weight: 0"); the first forward materializes it on
    vkml, and the model computes as the CPU's from the same weights."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d(), nn.ReLU(), nn.Flatten(), nn.LazyLinear(5)
    )
    model.to(VKML)
    weight = model[0].weight
    assert isinstance(weight, nn.parameter.UninitializedParameter)
    assert weight.device.type == VKML
    x = torch.randn(2, 3, 6, 6)
    y = model(x.to(VKML))
    assert model[0].weight is weight and type(weight) is nn.Parameter
    assert all(p.device.type == VKML and p.numel() > 0 for p in model.parameters())
    assert model[1].running_mean.device.type == VKML
    cpu = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 5)
    )
    state = {k: v.cpu() for k, v in model.state_dict().items()}
    cpu.load_state_dict(state)
    y.sum().backward()
    torch.testing.assert_close(y.detach().cpu(), cpu(x).detach(), rtol=1e-4, atol=1e-5)
    back = nn.LazyLinear(3).to(VKML).cpu()  # and back, still lazy
    assert isinstance(back.weight, nn.parameter.UninitializedParameter)
    assert back(torch.randn(2, 7)).shape == (2, 3)
