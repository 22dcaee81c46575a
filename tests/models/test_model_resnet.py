"""ResNet-18 (defined here): forward + backward of a 2x3x64x64 batch matches the CPU."""

import torch
from model_utils import VKML, assert_no_fallback, twin_models
from torch import nn
from torch.nn import functional as F

import torch_vkml

# 18 layers of float32 convolutions and batch norms: the loss agrees to ~1e-5 relative;
# gradients are compared relative to their largest magnitude (atol = 1e-3 * max |g|,
# rtol 1e-3): deep in the net, small entries carry large relative rounding differences.
LOSS_TOL = dict(atol=1e-4, rtol=1e-4)
GRAD_RTOL = 1e-3


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


GRADS = [
    "conv1.weight",
    "bn1.weight",
    "layer1.0.conv1.weight",
    "layer3.0.shortcut.0.weight",
    "layer4.1.conv2.weight",
    "layer4.1.bn2.bias",
    "fc.weight",
    "fc.bias",
]


def test_resnet18_forward_backward_like_cpu():
    cpu_model, vk_model = twin_models(ResNet18)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 64, 64, generator=gen)
    y = torch.tensor([3, 7])
    losses = {}
    for model, device in ((cpu_model, "cpu"), (vk_model, VKML)):
        if device == VKML:
            torch_vkml.reset_fallback_counts()
        model.train()
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        losses[device] = loss.detach().cpu()
    torch.testing.assert_close(losses[VKML], losses["cpu"], **LOSS_TOL)
    vk_params = dict(vk_model.named_parameters())
    for name, p in cpu_model.named_parameters():
        g = vk_params[name].grad
        assert g is not None and g.device.type == VKML, name
        if name in GRADS:
            torch.testing.assert_close(
                g.cpu(),
                p.grad,
                rtol=GRAD_RTOL,
                atol=GRAD_RTOL * p.grad.abs().max().item(),
                msg=lambda m, name=name: f"grad of {name}: {m}",
            )
    # batch statistics went into the running stats the same way
    for (name, b_cpu), b_vk in zip(cpu_model.named_buffers(), vk_model.buffers(), strict=True):
        torch.testing.assert_close(
            b_vk.cpu(), b_cpu, atol=1e-4, rtol=1e-4, msg=lambda m, name=name: f"{name}: {m}"
        )
    assert_no_fallback()


def test_resnet18_training_step_chrome_trace_has_vkml_kernels(tmp_path):
    """torch.profiler over a ResNet-18 training step: the Chrome trace puts vkml's kernels,
    with their device times, on the device's track, each linked to the op that ran it."""
    import json

    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model = ResNet18().to(VKML)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(2, 3, 32, 32).to(VKML)  # every layer still runs (layer4 at 1 x 1)
    y = torch.tensor([3, 7]).to(VKML)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    step()  # pipelines made before the profiled step
    torch_vkml.synchronize()
    torch_vkml.reset_fallback_counts()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        step()
        torch_vkml.synchronize()
    assert_no_fallback()
    path = tmp_path / "resnet18.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    tracks = {
        e["pid"]: str(e["args"]["name"])
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    device = {pid for pid, name in tracks.items() if name.startswith("vkml:0")}
    kernels = [e for e in events if e.get("ph") == "X" and e.get("pid") in device]
    assert len(kernels) > 100, len(kernels)  # 20 convs, 20 norms, their backwards, ...
    assert all(k["dur"] > 0 for k in kernels)
    ops = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op"}
    launched_by = {ops[k["args"]["External id"]] for k in kernels}
    assert {"aten::convolution_overrideable", "aten::native_batch_norm"} <= launched_by, launched_by
    # the ops' device time, as key_averages() sums it for the table
    times = {e.key: e.self_device_time_total for e in prof.key_averages()}
    assert times["aten::convolution_overrideable"] > 0
    busy = sum(k["dur"] for k in kernels)
    assert 0 < torch_vkml.profiler_utilization(prof)["busy_us"] <= busy * 1.01 + 1
