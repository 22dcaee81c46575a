"""Quantization-aware training (torch.ao.quantization, eager mode) of the digits CNN: a
fused Conv-BN-ReLU block and a Linear head under PyTorch's default QAT qconfigs (fused
moving-average observers with per-channel symmetric weights, the non-fused FakeQuantize,
and LSQ's learnable qparams), with the usual schedule (observers frozen, then batch-norm
statistics). vkml trains like the CPU from the same weights and batches with zero
fallbacks, and the model converted to int8 afterwards (on the CPU, where quantized
kernels live) matches the CPU-trained one.
"""

import copy
import warnings

import pytest
import torch
import torch.ao.nn.intrinsic.qat as nniqat
import torch.ao.quantization as tq
from model_utils import VKML, assert_no_fallback, digits
from torch import nn
from torch.ao.quantization._learnable_fake_quantize import _LearnableFakeQuantize
from torch.ao.quantization.observer import MovingAverageMinMaxObserver
from torch.nn import functional as F

import torch_vkml


class QuantDigits(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.pool = nn.AvgPool2d(2)
        self.head = nn.Linear(8 * 4 * 4, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.pool(self.relu(self.bn(self.conv(self.quant(x)))))
        return self.dequant(self.head(x.flatten(1)))


def _lsq_qconfig():
    def learnable(**kw):
        return _LearnableFakeQuantize.with_args(
            observer=MovingAverageMinMaxObserver, scale=0.1, zero_point=0.0, **kw
        )

    return tq.QConfig(
        activation=learnable(quant_min=0, quant_max=255, use_grad_scaling=True),
        weight=learnable(
            quant_min=-128,
            quant_max=127,
            dtype=torch.qint8,
            qscheme=torch.per_tensor_symmetric,
            use_grad_scaling=True,
        ),
    )


QCONFIGS = {
    "x86": lambda: tq.get_default_qat_qconfig("x86"),  # fused observers, per-channel weights
    "default": lambda: tq.default_qat_qconfig,  # FakeQuantize + MinMax observers
    "lsq": _lsq_qconfig,
}


def _prepared(qconfig):
    torch.manual_seed(0)
    model = QuantDigits().train()
    model.qconfig = qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation notices
        model = tq.fuse_modules_qat(model, [["conv", "bn", "relu"]])
        return tq.prepare_qat(model)


def _train(model, device, batches, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(steps):
        if step == steps - 3:
            model.apply(tq.disable_observer)  # the usual QAT schedule: freeze the ranges,
        if step == steps - 2:
            model.apply(nniqat.freeze_bn_stats)  # then the batch-norm statistics
        x, y = batches[step % len(batches)]
        opt.zero_grad()
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses).cpu()


@pytest.mark.parametrize("qconfig", sorted(QCONFIGS))
def test_qat_trains_and_converts_like_cpu(qconfig):
    x, y = digits(256)
    x = x.reshape(-1, 1, 8, 8)
    batches = [(x[i : i + 64], y[i : i + 64]) for i in range(0, 256, 64)]
    cpu = _prepared(QCONFIGS[qconfig]())
    vk = copy.deepcopy(cpu).to(VKML)
    cpu_losses = _train(cpu, "cpu", batches, 8)
    torch_vkml.reset_fallback_counts()
    vk_losses = _train(vk, VKML, batches, 8)
    assert_no_fallback()
    # LSQ's scale gradients are sums over whole tensors, in another order than the CPU's;
    # the fixed-grid qconfigs agree to float32 rounding.
    torch.testing.assert_close(vk_losses, cpu_losses, atol=2e-4, rtol=1e-4)
    assert cpu_losses[-1] < cpu_losses[0], cpu_losses
    # Observer state: running ranges and scales close, zero points and flags exact.
    cpu_state = cpu.state_dict()
    for name, value in vk.state_dict().items():
        assert value.device.type == VKML, name
        exact = not value.is_floating_point()
        torch.testing.assert_close(
            value.cpu(),
            cpu_state[name],
            atol=0 if exact else 1e-4,
            rtol=0 if exact else 1e-4,
            msg=lambda m, n=name: f"{n}: {m}",
        )
    # Converted to int8 on the CPU, the two models agree.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        int8 = [tq.convert(m.cpu().eval()) for m in (cpu, vk)]
    with torch.no_grad():
        out_cpu, out_vk = (m(x) for m in int8)
    agree = (out_cpu.argmax(1) == out_vk.argmax(1)).float().mean().item()
    assert agree >= 0.98, agree


def test_fused_qat_step_never_waits():
    """With the fused observers (the x86 and fbgemm qconfigs) a QAT step reads nothing
    back: flags, ranges and qparams stay on the device. (FakeQuantize and LSQ's modules
    test their flags in Python, which waits on any device, CUDA included.)"""
    x, y = digits(128)
    x, y = x.reshape(-1, 1, 8, 8).to(VKML), y.to(VKML)
    model = _prepared(QCONFIGS["x86"]()).to(VKML)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    syncs = []
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        syncs.append(torch_vkml.memory_stats()["num_syncs"])
    assert syncs[1] == syncs[2] == syncs[0], syncs
