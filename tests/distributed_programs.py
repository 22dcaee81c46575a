"""Training programs that test_distributed_programs.py runs under torchrun (not a test module).

    torchrun --nproc_per_node=N tests/distributed_programs.py OUT_DIR SCENARIO[,SCENARIO...]

Each rank uses the vkml device LOCAL_RANK names and the process group's default backend for
it (vkml_gloo), trains the model tests' models on its shard of each global batch, and
compares with one process training the same model on the whole batch (run by every rank on
its own device): the loss of every step (the mean of the ranks' losses) and the final
weights. It writes OUT_DIR/rank<R>.json: "ok" or the traceback per scenario.

Scenarios: ddp_cnn (the digits CNN with nn.SyncBatchNorm), ddp_lm (the Transformer LM with
AdamW and gradient clipping), fsdp_lm (the LM under FSDP2's fully_shard), dcp (FSDP2
checkpoint with torch.distributed.checkpoint, resumed into a fresh model and optimizer).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).parent / "models"))

import torch_vkml  # noqa: E402

# Summation order differs between one process and the ranks' all_reduce.
TOL = dict(atol=2e-5, rtol=2e-4)


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def _close(a: torch.Tensor, b: torch.Tensor, what: str, tol=TOL) -> None:
    a, b = a.detach().cpu(), b.detach().cpu()
    if not torch.allclose(a, b, **tol):
        raise AssertionError(f"{what}: max difference {(a - b).abs().max().item():.3g}")


def _global_loss(loss: torch.Tensor) -> float:
    t = loss.detach().clone()
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    return t.item()


def _shard(t: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    n = t.shape[0] // world
    return t[rank * n : (rank + 1) * n]


def _cnn_data():
    from model_utils import digits

    x, y = digits(256)
    x = x.reshape(-1, 1, 8, 8)
    return [(x[i : i + 64], y[i : i + 64]) for i in range(0, 256, 64)]


def _cnn():
    from test_model_cnn import DigitsCNN

    torch.manual_seed(0)
    model = DigitsCNN()
    model.dropout.p = 0.0  # the masks cannot match between one process and the ranks
    return model


def ddp_cnn(rank: int, world: int, dev: torch.device) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    batches = _cnn_data()
    ref = _cnn().to(dev)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(_cnn()).to(dev), device_ids=[dev.index])
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step, (x, y) in enumerate(batches):
        ref_opt.zero_grad()
        ref_loss = F.cross_entropy(ref(x.to(dev)), y.to(dev))
        ref_loss.backward()
        ref_opt.step()
        opt.zero_grad()
        loss = F.cross_entropy(
            model(_shard(x, rank, world).to(dev)), _shard(y, rank, world).to(dev)
        )
        loss.backward()
        opt.step()
        _close(torch.tensor(_global_loss(loss)), ref_loss.cpu(), f"ddp_cnn loss, step {step}")
    for (name, p), q in zip(
        model.module.state_dict().items(), ref.state_dict().values(), strict=True
    ):
        _close(p, q, f"ddp_cnn {name}")


def _lm():
    from test_model_transformer import TinyLM

    torch.manual_seed(0)
    return TinyLM()


def _lm_data():
    from test_model_transformer import _batches

    return _batches()


def _lm_loss(model, idx, target):
    from test_model_transformer import _loss

    return _loss(model, idx, target)


def _lm_step(model, opt, idx, target):
    opt.zero_grad()
    loss = _lm_loss(model, idx, target)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss


def _lm_reference(dev: torch.device, steps: int):
    ref = _lm().to(dev)
    opt = torch.optim.AdamW(ref.parameters(), lr=3e-3)
    losses = [_lm_step(ref, opt, i.to(dev), t.to(dev)).item() for i, t in _lm_data()[:steps]]
    return ref, losses


def ddp_lm(rank: int, world: int, dev: torch.device) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    ref, ref_losses = _lm_reference(dev, 3)
    model = DDP(_lm().to(dev), device_ids=[dev.index])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step, (idx, target) in enumerate(_lm_data()):
        loss = _lm_step(
            model, opt, _shard(idx, rank, world).to(dev), _shard(target, rank, world).to(dev)
        )
        _close(
            torch.tensor(_global_loss(loss)), torch.tensor(ref_losses[step]), f"ddp_lm loss {step}"
        )
    for (name, p), q in zip(model.module.named_parameters(), ref.parameters(), strict=True):
        _close(p, q, f"ddp_lm {name}")


def _fsdp_lm(dev: torch.device):
    from torch.distributed.fsdp import fully_shard

    model = _lm().to(dev)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    return model, torch.optim.AdamW(model.parameters(), lr=3e-3)


def _full(model) -> dict[str, torch.Tensor]:
    return {k: v.full_tensor() for k, v in model.state_dict().items()}


def fsdp_lm(rank: int, world: int, dev: torch.device) -> None:
    ref, ref_losses = _lm_reference(dev, 3)
    model, opt = _fsdp_lm(dev)
    for step, (idx, target) in enumerate(_lm_data()):
        loss = _lm_step(
            model, opt, _shard(idx, rank, world).to(dev), _shard(target, rank, world).to(dev)
        )
        _close(
            torch.tensor(_global_loss(loss)), torch.tensor(ref_losses[step]), f"fsdp_lm loss {step}"
        )
    full = _full(model)
    for name, q in ref.state_dict().items():
        _close(full[name], q, f"fsdp_lm {name}")


def dcp(rank: int, world: int, dev: torch.device) -> None:
    import torch.distributed.checkpoint as dcp_api
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    batches = _lm_data()
    model, opt = _fsdp_lm(dev)

    def step(m, o, b):
        idx, target = b
        _lm_step(m, o, _shard(idx, rank, world).to(dev), _shard(target, rank, world).to(dev))

    for b in batches[:2]:
        step(model, opt, b)
    # One folder for all ranks: rank 0 makes it and tells the others.
    folder = [tempfile.mkdtemp(prefix="vkml_dcp_") if rank == 0 else None]
    dist.broadcast_object_list(folder, src=0)
    model_sd, optim_sd = get_state_dict(model, opt)
    dcp_api.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=folder[0])
    step(model, opt, batches[2])
    expected = _full(model)

    torch.manual_seed(123)  # the resumed model starts from other weights
    fresh, fresh_opt = _fsdp_lm(dev)
    for p in fresh.parameters():
        p.data.add_(1.0)
    model_sd, optim_sd = get_state_dict(fresh, fresh_opt)
    state = {"model": model_sd, "optim": optim_sd}
    dcp_api.load(state, checkpoint_id=folder[0])
    set_state_dict(
        fresh, fresh_opt, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )
    step(fresh, fresh_opt, batches[2])
    got = _full(fresh)
    for name, v in expected.items():
        _close(got[name], v, f"dcp resumed {name}", tol=dict(atol=1e-6, rtol=1e-6))
    _check(got[name].device.type == "vkml", f"resumed weights on {got[name].device}")


SCENARIOS = {"ddp_cnn": ddp_cnn, "ddp_lm": ddp_lm, "fsdp_lm": fsdp_lm, "dcp": dcp}


def main(out_dir: str, names: list[str]) -> None:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.accelerator.set_device_index(int(os.environ["LOCAL_RANK"]))
    dev = torch.device("vkml", torch.accelerator.current_device_index())
    dist.init_process_group()  # the accelerator's default backend: vkml_gloo
    results: dict[str, str] = {
        "backend": dist.get_backend(),
        "world": str(world),
    }
    for name in names:
        torch_vkml.reset_fallback_counts()
        try:
            SCENARIOS[name](rank, world, dev)
            fallbacks = torch_vkml.fallback_counts()
            _check(not fallbacks, f"CPU fallbacks: {fallbacks}")
            results[name] = "ok"
        except Exception:
            results[name] = traceback.format_exc()
        dist.barrier()
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(","))
