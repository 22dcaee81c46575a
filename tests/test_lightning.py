"""PyTorch Lightning's Trainer on vkml (torch_vkml.lightning) against the same Trainer on
the CPU, from the same weights and batches: float32 and mixed precision on one device,
DDP over two logical devices."""

import os
import subprocess
import sys
import textwrap

import lightning_fabric
import pytest
import pytorch_lightning as pl
import torch
from conftest import describe, on_two_devices
from pytorch_lightning.utilities.exceptions import MisconfigurationException
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

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

    def forward(self, x):
        logits = self.net(x)
        if self.training:  # inside autocast (Fabric casts its wrapper's output back)
            self.logits.add((logits.device.type, logits.dtype))
        return logits

    def training_step(self, batch, _):
        x, y = batch
        logits = self(x)
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


def _fabric_fit(precision="32-true", **fabric_kwargs):
    """Two epochs of Fabric's own loop; the step losses, the logits' (device, dtype)
    pairs and the final weights."""
    fabric = lightning_fabric.Fabric(precision=precision, **fabric_kwargs)
    torch.manual_seed(1)
    model = Classifier("sgd")
    optimizer = model.configure_optimizers()
    model, optimizer = fabric.setup(model, optimizer)
    loader = fabric.setup_dataloaders(DataLoader(_data(), batch_size=16))
    losses = []
    for _ in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            out = model(x)  # the wrapper's forward autocasts
            loss = torch.nn.functional.cross_entropy(out, y)
            fabric.backward(loss)
            optimizer.step()
            losses.append(loss.item())
    weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return fabric, losses, model.logits, weights


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed", "16-mixed"])
def test_fabric_trains_as_on_the_cpu(precision):
    fabric, losses, logits, weights = _fabric_fit(
        precision, accelerator="vkml", strategy="single_vkml"
    )
    # The CPU has no float16 autocast in Lightning (it switches to bfloat16): float32's.
    cpu_precision = "32-true" if precision == "16-mixed" else precision
    _, cpu_losses, _, cpu_weights = _fabric_fit(cpu_precision, accelerator="cpu")
    dtype = {"32-true": torch.float32, "bf16-mixed": torch.bfloat16}.get(precision, torch.float16)
    assert logits == {("vkml", dtype)}
    assert isinstance(fabric.accelerator, torch_vkml.lightning.FabricVkmlAccelerator)
    if precision != "32-true":
        assert fabric.strategy.precision.device == "vkml"
    atol = 1e-5 if precision == "32-true" else 5e-3
    torch.testing.assert_close(losses, cpu_losses, atol=atol, rtol=0)
    for name, w in cpu_weights.items():
        torch.testing.assert_close(weights[name], w, atol=atol, rtol=0, msg=name)


def test_checkpoint_resume_continues_the_run(tmp_path):
    """A float16 AMP run saved after two epochs (weights, AdamW state and GradScaler state
    on vkml) and resumed for two more takes the steps of a run that never stopped."""
    from pytorch_lightning.callbacks import ModelCheckpoint

    def fit(epochs, **kwargs):
        torch.manual_seed(1)
        model = Classifier("adamw")
        trainer = pl.Trainer(
            max_epochs=epochs,
            accelerator="vkml",
            strategy="single_vkml",
            precision="16-mixed",
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            enable_checkpointing="callbacks" in kwargs,
            callbacks=kwargs.pop("callbacks", None),
        )
        trainer.fit(model, DataLoader(_data(), batch_size=16), **kwargs)
        return model, trainer

    saver = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    fit(2, callbacks=[saver])
    resumed, trainer = fit(4, ckpt_path=saver.last_model_path)
    straight, _ = fit(4)
    assert trainer.global_step == 16 and len(resumed.losses) == 8
    torch.testing.assert_close(resumed.losses, straight.losses[8:], atol=1e-6, rtol=0)
    for a, b in zip(resumed.parameters(), straight.parameters(), strict=True):
        torch.testing.assert_close(a.detach().cpu(), b.detach().cpu(), atol=1e-6, rtol=0)


def test_accelerator_without_the_vkml_strategy_raises_with_the_fix():
    """Lightning gives an accelerator it does not know a CPU strategy; that must be an
    error naming the fix, not training on the CPU."""
    with pytest.raises(MisconfigurationException, match="strategy='single_vkml'"):
        _fit(accelerator="vkml")


@on_two_devices
def test_single_vkml_trains_on_the_device_devices_names():
    """Lightning gives a single-device strategy nothing of `devices`; devices=[1] must
    still train on vkml:1, and two devices with the single strategy is an error."""
    seen = set()

    class Probe(Classifier):
        def training_step(self, batch, index):
            seen.add(batch[0].device)
            return super().training_step(batch, index)

    trainer = pl.Trainer(
        max_steps=2, accelerator="vkml", strategy="single_vkml", devices=[1], **QUIET
    )
    trainer.fit(Probe("sgd"), DataLoader(_data(), batch_size=16))
    assert seen == {torch.device("vkml", 1)}
    with pytest.raises(MisconfigurationException, match="ddp_vkml"):
        pl.Trainer(accelerator="vkml", strategy="single_vkml", devices=2, **QUIET)


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
    import sys, torch, lightning_fabric, pytorch_lightning as pl, torch_vkml, torch_vkml.lightning
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
    accelerator, strategy, precision, loop = sys.argv[1:5]
    if loop == "trainer":
        trainer = pl.Trainer(max_epochs=2, accelerator=accelerator, devices=2, strategy=strategy,
                             precision=precision, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(model, DataLoader(data, batch_size=16))
        rank = trainer.global_rank
    else:  # Fabric's own loop over the same sampler and steps
        fabric = lightning_fabric.Fabric(accelerator=accelerator, devices=2, strategy=strategy,
                                         precision=precision)
        fabric.launch()
        optimizer = model.configure_optimizers()
        wrapped, optimizer = fabric.setup(model, optimizer)
        loader = fabric.setup_dataloaders(DataLoader(data, batch_size=16))
        for epoch in range(2):
            loader.sampler.set_epoch(epoch)
            for batch in loader:
                optimizer.zero_grad()
                fabric.backward(wrapped.training_step(batch, 0))
                optimizer.step()
        rank = fabric.global_rank
    if rank == 0:
        flat = torch.cat([p.detach().cpu().flatten() for p in model.parameters()])
        print("WEIGHTS", " ".join(repr(v) for v in flat.tolist()))
        print("BACKEND", torch.distributed.get_backend())
        print("FALLBACKS", len(torch_vkml.fallback_counts()))
    """
)


def _ddp(tmp_path, accelerator, strategy, precision, loop="trainer"):
    script = tmp_path / f"ddp_{accelerator}_{precision}_{loop}.py"
    script.write_text(DDP_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), accelerator, strategy, precision, loop],
        # Lightning prints emoji: UTF-8 whatever the locale (ASCII under pytest-xdist here).
        env=dict(os.environ, TORCH_VKML_VISIBLE_DEVICES="0,0", PYTHONIOENCODING="utf-8"),
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, describe(proc)
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    weights = torch.tensor([float(v) for v in lines["WEIGHTS"].split()])
    return weights, lines["BACKEND"], int(lines["FALLBACKS"])


def _one_process_over_the_ranks_batches(shuffle):
    """Weights of one CPU process stepping on the union of both ranks' batches of 16: each
    DDP step averages the two ranks' mean gradients, which is the mean over those 32
    rows. Rank r's rows come from torch's DistributedSampler (seed 0, set_epoch each
    epoch): Lightning's Trainer installs it with shuffling (2.6), Fabric's loop here keeps
    the loader's order (rank r has rows r, r + 2, ...)."""
    data = _data()
    torch.manual_seed(1)
    model = Classifier("sgd")
    optimizer = model.configure_optimizers()
    samplers = [DistributedSampler(data, 2, rank, shuffle=shuffle, seed=0) for rank in (0, 1)]
    for epoch in range(2):
        rows = []
        for sampler in samplers:
            sampler.set_epoch(epoch)
            rows.append(torch.tensor(list(sampler)).split(16))
        for step_rows in zip(*rows, strict=True):
            x, y = data[torch.cat(step_rows)]
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_ddp_on_two_devices_trains_as_one_process_over_the_ranks_batches(tmp_path):
    """Two ranks on two logical vkml devices, over vkml's c10d backend, with Lightning's
    Trainer and with Fabric's DDP (its own wrapper code) in a hand-written loop, end with
    the weights of one CPU process over the same rows per step."""
    for loop, shuffle in (("trainer", True), ("fabric", False)):
        weights, backend, fallbacks = _ddp(tmp_path, "vkml", "ddp_vkml", "32-true", loop)
        assert backend.startswith("vkml") and fallbacks == 0, loop
        torch.testing.assert_close(
            weights,
            _one_process_over_the_ranks_batches(shuffle),
            atol=1e-5,
            rtol=0,
            msg=lambda m, loop=loop: f"{loop}: {m}",
        )
