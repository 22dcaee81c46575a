"""Forked and spawned processes, as PyTorch's own devices have them: a child forked after
vkml was initialised raises a clear RuntimeError on its first vkml use (nothing hangs),
torch.manual_seed skips the device there, the parent keeps working, DataLoader workers
run beside a vkml model, and spawned processes use vkml themselves."""

import multiprocessing
import os

import pytest
import torch
from conftest import VKML

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


def _forked(conn):
    """Runs in a forked child; reports what it saw through a pipe, then exits at once."""
    report = {"bad_fork": torch_vkml._is_in_bad_fork()}
    torch.manual_seed(1)  # skips the device, as torch.cuda does in a bad fork
    try:
        torch.ones(2, device=VKML)
        report["error"] = None
    except RuntimeError as e:
        report["error"] = str(e)
    report["count"] = torch_vkml.device_count()
    conn.send(report)
    conn.close()


def test_a_forked_child_raises_and_the_parent_keeps_working():
    x = torch.arange(4.0, device=VKML) * 2  # vkml initialised in the parent
    ctx = multiprocessing.get_context("fork")
    parent_end, child_end = ctx.Pipe()
    p = ctx.Process(target=_forked, args=(child_end,))
    p.start()
    assert parent_end.poll(60), "the forked child hung"
    report = parent_end.recv()
    p.join(60)
    assert p.exitcode == 0
    assert report["bad_fork"] is True
    assert report["error"] is not None and "forked subprocess" in report["error"]
    assert "spawn" in report["error"]
    assert report["count"] == torch_vkml.device_count()
    assert not torch_vkml._is_in_bad_fork()
    assert (x + 1).cpu().tolist() == [1.0, 3.0, 5.0, 7.0]


def test_a_child_that_exits_normally_with_vkml_tensors_does_not_hang():
    keep = torch.randn(1000, device=VKML)  # noqa: F841  (inherited by the child)
    pid = os.fork()
    if pid == 0:  # child: drops its copies of the parent's tensors and exits
        code = 0
        try:
            del keep
            import gc

            gc.collect()
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


class _Squares(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return torch.tensor([float(i)]), torch.tensor(i * i)


def test_dataloader_workers_beside_a_vkml_model():
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1).to(VKML)
    loader = torch.utils.data.DataLoader(
        _Squares(), batch_size=4, num_workers=2, multiprocessing_context="fork"
    )
    seen = []
    for x, y in loader:
        out = model(x.to(VKML))
        seen.extend(y.tolist())
        assert out.shape == (4, 1)
    assert sorted(seen) == [i * i for i in range(16)]


def _spawned(queue):
    import torch

    import torch_vkml  # noqa: F401

    x = torch.arange(5.0, device="vkml")
    queue.put(((x * x).sum().item(), torch_vkml._is_in_bad_fork()))


def test_a_spawned_process_uses_vkml():
    torch.ones(1, device=VKML)  # initialised here too: spawn does not inherit it
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(target=_spawned, args=(queue,))
    p.start()
    total, bad_fork = queue.get(timeout=120)
    p.join(60)
    assert p.exitcode == 0
    assert total == 30.0 and bad_fork is False


def _echo_doubled(inbox, outbox):
    import torch

    x, w = inbox.get(timeout=60)
    assert x.device.type == "vkml" and isinstance(w, torch.nn.Parameter) and w.requires_grad
    outbox.put((x * 2, w.detach() + 1))


def test_vkml_tensors_travel_through_queues_as_copies():
    """torch.multiprocessing pickled vkml tensors by sharing CPU memory they do not have:
    the queue's feeder thread raised and the receiver waited forever. They travel as
    copies now, rebuilt on the receiver's vkml device (Parameters and requires_grad
    kept); a non-leaf tensor that requires grad is refused, as for any device."""
    ctx = multiprocessing.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_echo_doubled, args=(inbox, outbox))
    p.start()
    x = torch.arange(6.0, device=VKML).view(2, 3)
    w = torch.nn.Parameter(torch.ones(3, device=VKML))
    inbox.put((x, w))
    doubled, bumped = outbox.get(timeout=120)
    p.join(60)
    assert p.exitcode == 0
    assert doubled.device.type == VKML and torch.equal(doubled.cpu(), x.cpu() * 2)
    assert torch.equal(bumped.cpu(), torch.full((3,), 2.0))
    from multiprocessing.reduction import ForkingPickler

    with pytest.raises(RuntimeError, match="non-leaf tensor which requires_grad"):
        ForkingPickler.dumps(w * 2)
