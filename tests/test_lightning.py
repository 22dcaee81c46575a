"""PyTorch Lightning's Trainer on vkml (torch_vkml.lightning) against the same Trainer on
the CPU, from the same weights and batches: float32 and mixed precision on one device,
DDP over two logical devices."""

import os
import subprocess
import sys
import textwrap

import pytest
import pytorch_lightning as pl
import torch
from conftest import describe
from pytorch_lightning.utilities.exceptions import MisconfigurationException
from torch.utils.data import DataLoader, TensorDataset

import torch_vkml
import torch_vkml.lightning

pytestmark = pytest.mark.usefixtures("no_fallback")

QUIET = dict(
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)


class Classifier(pl.LightningModule):
    """Records each step's loss and the device and dtype of its logits."""

    def __init__(self, optimizer):
        super().__init__()
        self.optimizer = optimizer
        self.net = torch.nn.Sequential(
            torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3)
        )
        self.losses, self.logits = [], set()

    def training_step(self, batch, _):
        x, y = batch
        logits = self.net(x)
        self.logits.add((logits.device.type, logits.dtype))
        loss = torch.nn.functional.cross_entropy(logits, y)
        self.losses.append(loss.item())
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        if self.optimizer == "sgd":
            return torch.optim.SGD(self.parameters(), lr=0.1)
        return torch.optim.AdamW(self.parameters(), lr=1e-2)


def _data():
    g = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(64, 8, generator=g), torch.randint(0, 3, (64,), generator=g))


def _fit(optimizer="adamw", **trainer_kwargs):
    torch.manual_seed(1)
    model = Classifier(optimizer)
    trainer = pl.Trainer(max_epochs=2, **QUIET, **trainer_kwargs)
    data = _data()
    trainer.fit(model, DataLoader(data, batch_size=16), DataLoader(data, batch_size=32))
    weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return model, trainer, weights


def _assert_same_training(vk, cpu, atol):
    (vk_model, vk_trainer, vk_weights), (cpu_model, cpu_trainer, cpu_weights) = vk, cpu
    assert len(vk_model.losses) == len(cpu_model.losses) == 8
    torch.testing.assert_close(vk_model.losses, cpu_model.losses, atol=atol, rtol=0)
    for name, w in cpu_weights.items():
        torch.testing.assert_close(vk_weights[name], w, atol=atol, rtol=0, msg=name)
    torch.testing.assert_close(
        vk_trainer.callback_metrics["val_loss"].cpu(),
        cpu_trainer.callback_metrics["val_loss"],
        atol=atol,
        rtol=0,
    )


def test_float32_trains_as_on_the_cpu():
    vk = _fit(accelerator="vkml", strategy="single_vkml")
    cpu = _fit(accelerator="cpu")
    assert vk[0].logits == {("vkml", torch.float32)}
    assert isinstance(vk[1].accelerator, torch_vkml.lightning.VkmlAccelerator)
    _assert_same_training(vk, cpu, atol=1e-5)


def test_bf16_mixed_autocasts_on_vkml_as_on_the_cpu():
    vk = _fit(accelerator="vkml", strategy="single_vkml", precision="bf16-mixed")
    cpu = _fit(accelerator="cpu", precision="bf16-mixed")
    assert vk[0].logits == {("vkml", torch.bfloat16)}
    assert vk[1].precision_plugin.device == "vkml"
    # bfloat16 products: the CPU's and vkml's roundings of the accumulations differ.
    _assert_same_training(vk, cpu, atol=5e-3)


def test_fp16_mixed_autocasts_and_scales_on_vkml():
    """Lightning makes its float16 plugin for CUDA; the vkml strategy remakes it with a
    vkml GradScaler, so the logits are float16 and training follows float32's (with SGD:
    Adam would turn float16's rounding of tiny gradients into whole steps)."""
    vk = _fit("sgd", accelerator="vkml", strategy="single_vkml", precision="16-mixed")
    fp32 = _fit("sgd", accelerator="cpu")
    plugin = vk[1].precision_plugin
    assert vk[0].logits == {("vkml", torch.float16)}
    assert plugin.device == "vkml" and plugin.scaler is not None
    assert plugin.scaler.is_enabled() and plugin.scaler.get_scale() > 1
    _assert_same_training(vk, fp32, atol=5e-3)


def test_accelerator_without_the_vkml_strategy_raises_with_the_fix():
    """Lightning gives an accelerator it does not know a CPU strategy; that must be an
    error naming the fix, not training on the CPU."""
    with pytest.raises(MisconfigurationException, match="strategy='single_vkml'"):
        _fit(accelerator="vkml")


def test_devices_argument():
    parse = torch_vkml.lightning.VkmlAccelerator.parse_devices
    count = torch_vkml.device_count()
    assert parse(1) == [0] and parse("1") == [0] and parse(-1) == list(range(count))
    assert parse([0]) == [0] and parse("0,") == [0]
    with pytest.raises(ValueError, match="vkml device"):
        parse([count])
    with pytest.raises(ValueError, match=f"devices={count + 1}"):
        parse(count + 1)


DDP_SCRIPT = textwrap.dedent(
    """
    import sys, torch, pytorch_lightning as pl, torch_vkml, torch_vkml.lightning
    from torch.utils.data import DataLoader, TensorDataset

    class Net(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))

        def training_step(self, batch, _):
            return torch.nn.functional.cross_entropy(self.net(batch[0]), batch[1])

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(64, 8, generator=g), torch.randint(0, 3, (64,), generator=g))
    torch.manual_seed(1)
    model = Net()
    accelerator, strategy, precision = sys.argv[1:4]
    trainer = pl.Trainer(max_epochs=2, accelerator=accelerator, devices=2, strategy=strategy,
                         precision=precision, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, DataLoader(data, batch_size=16))
    if trainer.global_rank == 0:
        flat = torch.cat([p.detach().cpu().flatten() for p in model.parameters()])
        print("WEIGHTS", " ".join(repr(v) for v in flat.tolist()))
        print("BACKEND", torch.distributed.get_backend())
        print("FALLBACKS", len(torch_vkml.fallback_counts()))
    """
)


def _ddp(tmp_path, accelerator, strategy, precision):
    script = tmp_path / f"ddp_{accelerator}_{precision}.py"
    script.write_text(DDP_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), accelerator, strategy, precision],
        env=dict(os.environ, TORCH_VKML_VISIBLE_DEVICES="0,0"),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, describe(proc)
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    weights = torch.tensor([float(v) for v in lines["WEIGHTS"].split()])
    return weights, lines["BACKEND"], int(lines["FALLBACKS"])


def test_ddp_on_two_devices_trains_as_ddp_on_the_cpu(tmp_path):
    """Two ranks on two logical vkml devices, over vkml's c10d backend, end with the
    weights of Lightning's DDP on the CPU over Gloo (same sampler, same batches)."""
    vk, vk_backend, vk_fallbacks = _ddp(tmp_path, "vkml", "ddp_vkml", "32-true")
    cpu, cpu_backend, _ = _ddp(tmp_path, "cpu", "ddp", "32-true")
    assert cpu_backend == "gloo" and vk_backend.startswith("vkml")
    assert vk_fallbacks == 0
    torch.testing.assert_close(vk, cpu, atol=1e-5, rtol=0)
