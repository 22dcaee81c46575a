"""Hugging Face's Trainer (transformers + accelerate) on vkml: a GPT-2 from a small config
trains with the CPU's losses and zero fallbacks.

transformers (5.25 and earlier) places the model by its own list of device types, which
has no PrivateUse1 device, while accelerate places batches on torch.accelerator's device
(vkml): without ACCELERATE_TORCH_DEVICE=vkml, which both read, a Trainer run stops at the
first batch with a device mismatch (README, Troubleshooting). The test pins both halves.
accelerate keeps its state in process-wide singletons, reset around each run.
"""

import warnings

import accelerate.state as accelerate_state  # requirements-dev.txt; no skip: a missing one fails
import torch
import transformers
from model_utils import LONG_TESTS, assert_no_fallback

import torch_vkml


def _train(tmp_path, use_cpu):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=32,
        vocab_size=97,
        n_positions=32,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = transformers.GPT2LMHeadModel(cfg)
    g = torch.Generator().manual_seed(1)
    data = [{"input_ids": t, "labels": t} for t in torch.randint(0, 97, (48, 16), generator=g)]
    accelerate_state.AcceleratorState._reset_state(reset_partial_state=True)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=8,
        num_train_epochs=1,
        learning_rate=1e-3,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        use_cpu=use_cpu,
        seed=0,
        max_grad_norm=1.0,
        disable_tqdm=True,
    )
    try:
        trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer.train()
    finally:
        accelerate_state.AcceleratorState._reset_state(reset_partial_state=True)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return next(model.parameters()).device.type, torch.tensor(losses)


def _trainer_trains_on_vkml_like_cpu(tmp_path, monkeypatch):
    monkeypatch.delenv("ACCELERATE_TORCH_DEVICE", raising=False)
    cpu_device, cpu_losses = _train(tmp_path, use_cpu=True)
    monkeypatch.setenv("ACCELERATE_TORCH_DEVICE", "vkml")
    torch_vkml.reset_fallback_counts()
    vk_device, vk_losses = _train(tmp_path, use_cpu=False)
    assert_no_fallback()
    assert (cpu_device, vk_device) == ("cpu", "vkml")
    assert len(cpu_losses) == 6, cpu_losses
    torch.testing.assert_close(vk_losses, cpu_losses, atol=1e-4, rtol=1e-4)


# 12-20 s of make test's 20-minute budget (two Trainer runs): with TORCH_VKML_LONG_TESTS=1,
# defined only then so that make test lists no skip.
if LONG_TESTS:

    def test_trainer_trains_on_vkml_like_cpu(tmp_path, monkeypatch):
        _trainer_trains_on_vkml_like_cpu(tmp_path, monkeypatch)
