"""Hugging Face's Trainer (transformers + accelerate) on vkml: a GPT-2 from a small config
trains with the CPU's losses and zero fallbacks, in a fresh interpreter (accelerate's
state is a process-wide singleton).

transformers (5.25 and earlier) places the model by its own list of device types, which
has no PrivateUse1 device, while accelerate places batches on torch.accelerator's device
(vkml): without ACCELERATE_TORCH_DEVICE=vkml, which both read, a Trainer run stops at the
first batch with a device mismatch (README, Troubleshooting). The test pins both halves.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conftest import run_python  # noqa: E402

SCRIPT = r"""
import os, warnings
warnings.filterwarnings("ignore")
import torch, torch_vkml
from accelerate.state import AcceleratorState
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


def train(use_cpu):
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=97, n_positions=32,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(cfg)
    g = torch.Generator().manual_seed(1)
    data = [{"input_ids": t, "labels": t} for t in torch.randint(0, 97, (48, 16), generator=g)]
    args = TrainingArguments(
        output_dir=os.environ["OUT_DIR"], per_device_train_batch_size=8, num_train_epochs=1,
        learning_rate=1e-3, logging_steps=1, report_to=[], save_strategy="no",
        use_cpu=use_cpu, seed=0, max_grad_norm=1.0)
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    device = next(model.parameters()).device.type
    return device, [h["loss"] for h in trainer.state.log_history if "loss" in h]


cpu_device, cpu_losses = train(use_cpu=True)
AcceleratorState._reset_state(reset_partial_state=True)
os.environ["ACCELERATE_TORCH_DEVICE"] = "vkml"
torch_vkml.reset_fallback_counts()
vk_device, vk_losses = train(use_cpu=False)
assert (cpu_device, vk_device) == ("cpu", "vkml"), (cpu_device, vk_device)
assert torch_vkml.fallback_counts() == {}, torch_vkml.fallback_counts()
assert len(vk_losses) == len(cpu_losses) == 6, (cpu_losses, vk_losses)
torch.testing.assert_close(torch.tensor(vk_losses), torch.tensor(cpu_losses), atol=1e-4, rtol=1e-4)
print("ok", cpu_losses, vk_losses)
"""


def test_trainer_trains_on_vkml_like_cpu(tmp_path):
    proc = run_python(
        SCRIPT,
        env={"OUT_DIR": str(tmp_path), "WANDB_DISABLED": "true"},
        unset=("ACCELERATE_TORCH_DEVICE",),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert any(line.startswith("ok ") for line in proc.stdout.splitlines()), proc.stdout
