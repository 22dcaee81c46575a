"""torch.save / torch.load of vkml tensors, module state_dicts and optimizer state,
with map_location to and from the device, so training can checkpoint and resume."""

import io

import pytest
import torch

pytestmark = pytest.mark.usefixtures("no_fallback")


def roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kw)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_tensor_roundtrip_stays_on_device(dtype):
    x = (torch.arange(12).reshape(3, 4) % 3).to(dtype)
    d = x.to("vkml")
    back = roundtrip({"t": d, "view": d[:, 1:3]})
    assert back["t"].device.type == "vkml"
    assert torch.equal(back["t"].cpu(), x)
    assert torch.equal(back["view"].cpu(), x[:, 1:3])


def test_map_location_both_ways():
    x = torch.randn(5, 6)
    on_cpu = roundtrip(x.to("vkml"), map_location="cpu")
    assert on_cpu.device.type == "cpu" and torch.equal(on_cpu, x)
    on_dev = roundtrip(x, map_location="vkml")
    assert on_dev.device.type == "vkml" and torch.equal(on_dev.cpu(), x)
    on_dev2 = roundtrip(x, map_location=torch.device("vkml", 0))
    assert on_dev2.device == torch.device("vkml", 0)


def test_checkpoint_resume_matches_uninterrupted_run():
    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

    g = torch.Generator().manual_seed(5)
    xs = [torch.randn(6, 4, generator=g).to("vkml") for _ in range(6)]

    def step(model, opt, x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss.item()

    ref = make().to("vkml")
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    ref_losses = [step(ref, ref_opt, x) for x in xs]

    model = make().to("vkml")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = [step(model, opt, x) for x in xs[:3]]
    ckpt = roundtrip({"model": model.state_dict(), "opt": opt.state_dict()}, map_location="cpu")
    assert all(t.device.type == "cpu" for t in ckpt["model"].values())

    resumed = make().to("vkml")
    resumed.load_state_dict(ckpt["model"])
    resumed_opt = torch.optim.AdamW(resumed.parameters(), lr=1e-2)
    resumed_opt.load_state_dict(ckpt["opt"])
    losses += [step(resumed, resumed_opt, x) for x in xs[3:]]
    assert losses == pytest.approx(ref_losses, rel=1e-5, abs=1e-7)
    for p, q in zip(ref.parameters(), resumed.parameters(), strict=True):
        torch.testing.assert_close(q.cpu(), p.cpu(), atol=1e-6, rtol=1e-6)
