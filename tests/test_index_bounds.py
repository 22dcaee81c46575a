"""Index bounds checks without host syncs: the values of an index tensor uploaded from
the host, or made where their range is known (fills, arange, randint, argmax, sort,
gathers and cat of such tensors, integer arithmetic, clamps and remainders of known or
bounded values), are known without reading them back, and stay trusted only
until something could have changed them. A check that trusts stale
bounds would let an out-of-range index through silently, so every way of changing the
index below must still raise. Indices of unknown range are checked by a kernel on the
device, which notes an offending index; it is raised at the next read of the device (as
CUDA raises its device-side asserts), so the raising blocks below read the result."""

import pytest
import torch
import torch.nn.functional as F
from conftest import VKML

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

ROWS = 10


def syncs():
    return torch_vkml.memory_stats()["num_syncs"]


def unknown_range(values):
    """int64 device values whose range the host does not know (converted from float)."""
    return torch.tensor(values, dtype=torch.float32).to(VKML).long()


def gathers_without_sync(index_dev, index_cpu):
    """Embedding and index_select with a device index: right, and no host wait."""
    w = torch.randn(ROWS, 3)
    w_dev = w.to(VKML)
    torch_vkml.synchronize()
    before = syncs()
    emb = F.embedding(index_dev, w_dev)
    sel = w_dev.index_select(0, index_dev.flatten())
    assert syncs() == before, "the bounds check read the index back"
    torch.testing.assert_close(emb.cpu(), F.embedding(index_cpu, w), rtol=0, atol=0)
    torch.testing.assert_close(sel.cpu(), w.index_select(0, index_cpu.flatten()), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_uploaded_indices_and_their_slices_need_no_read_back(dtype):
    idx = torch.tensor([[1, 4, 2], [3, 9, 0]], dtype=dtype)
    d = idx.to(VKML)
    gathers_without_sync(d, idx)
    gathers_without_sync(d[1:, 1:], idx[1:, 1:])
    gathers_without_sync(d.t(), idx.t())


def test_arange_and_randint_indices_need_no_read_back():
    gathers_without_sync(torch.arange(ROWS, device=VKML), torch.arange(ROWS))
    gathers_without_sync(
        torch.arange(ROWS - 1, -1, -3, device=VKML), torch.arange(ROWS - 1, -1, -3)
    )
    r = torch.randint(0, ROWS, (4, 5), device=VKML)
    gathers_without_sync(r, r.cpu())
    r32 = torch.randint(2, ROWS, (7,), device=VKML, dtype=torch.int32)
    gathers_without_sync(r32, r32.cpu())


def test_negative_indices_where_allowed():
    x = torch.randn(4, 5)
    idx = torch.tensor([-20, 3, -1, 19])
    d = idx.to(VKML)
    x_dev = x.to(VKML)
    torch_vkml.synchronize()
    before = syncs()
    out = x_dev.take(d)
    assert syncs() == before
    torch.testing.assert_close(out.cpu(), x.take(idx), rtol=0, atol=0)
    with pytest.raises(IndexError, match="out of range: tried to access index -21"):
        x_dev.take(torch.tensor([0, -21]).to(VKML)).cpu()


def test_known_out_of_range_values_still_raise_with_the_offending_index():
    w = torch.randn(ROWS, 3).to(VKML)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(torch.arange(ROWS + 1, device=VKML), w).cpu()
    # Known bounds are those of the whole upload; a slice within range is checked exactly.
    d = torch.tensor([0, 5, 12]).to(VKML)
    torch.testing.assert_close(F.embedding(d[:2], w).cpu(), F.embedding(d[:2].cpu(), w.cpu()))
    message = "index 12 is out of bounds for dimension 0 with size 10"
    with pytest.raises(RuntimeError, match=message):
        w.cpu().gather(0, d.cpu().view(3, 1).expand(3, 3))
    with pytest.raises(RuntimeError, match=message):
        w.gather(0, d.view(3, 1).expand(3, 3)).cpu()


# Each changes the uploaded index [1, 4, 2, 3, 4, 0] so that some value reaches 10 or more.
CHANGES = {
    "add_": lambda i: i.add_(10),
    "fill_element": lambda i: i[2].fill_(10),
    "copy_from_device": lambda i: i.copy_(torch.full_like(i, 10)),
    "copy_from_host": lambda i: i.copy_(torch.full(i.shape, 10)),
    "through_data": lambda i: i.data.mul_(10),
    "index_fill_": lambda i: i.index_fill_(0, torch.tensor([1], device=i.device), 10),
    "scatter_": lambda i: i.scatter_(0, torch.tensor([5], device=i.device), 11),
    "cumsum_": lambda i: i.cumsum_(0),
    "sort_values_out": lambda i: torch.sort(i * 3, out=(i, torch.empty_like(i))),
    "foreach": lambda i: torch._foreach_add_([i, i[:1]], 10),
    "as_int32": lambda i: i.view(torch.int32)[4:6].fill_(10),
    "setitem": lambda i: i.__setitem__(slice(0, 2), 10),
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_changed_indices_are_checked_again(change):
    idx = torch.tensor([1, 4, 2, 3, 4, 0])
    w = torch.randn(ROWS, 3)
    d, w_dev = idx.to(VKML), w.to(VKML)
    F.embedding(d, w_dev)  # in range: trusted
    CHANGES[change](idx)
    CHANGES[change](d)
    assert d.cpu().tolist() == idx.tolist()
    assert idx.max() >= ROWS
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(idx, w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(d, w_dev).cpu()
    # The device stays usable.
    assert F.embedding(d.clamp(0, ROWS - 1), w_dev).cpu().shape == (6, 3)


def test_memory_reused_by_another_tensor_is_checked():
    w = torch.randn(ROWS, 3).to(VKML)
    d = torch.tensor([1, 2, 3, 4]).to(VKML)
    F.embedding(d, w)
    del d
    e = torch.empty(4, dtype=torch.int64, device=VKML).fill_(ROWS)  # may take d's bytes
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(e, w).cpu()


def test_positions_computed_on_the_device_need_no_read_back():
    x = torch.randn(6, ROWS)
    d = x.to(VKML)
    gathers_without_sync(d.argmax(1), x.argmax(1))
    gathers_without_sync(d.argmin(0), x.argmin(0))
    gathers_without_sync(d[:1].argmax().reshape(1), x[:1].argmax().reshape(1))
    gathers_without_sync(d.sort(1).indices, x.sort(1).indices)
    gathers_without_sync(d.topk(3, 1).indices, x.topk(3, 1).indices)
    perm = torch.randperm(ROWS, device=VKML)
    gathers_without_sync(perm, perm.cpu())
    assert sorted(perm.cpu().tolist()) == list(range(ROWS))


def test_unrelated_work_keeps_the_bounds():
    """Kernels that declare the memory they write leave other ranges known."""
    idx = torch.tensor([[1, 4, 2], [3, 9, 0]])
    d = idx.to(VKML)
    x = torch.randn(4, 70, device=VKML)
    x.cumsum(1)
    x.cumsum(0)
    x.sort(1)
    x.tril()
    torch.repeat_interleave(torch.tensor([1, 2, 3], device=VKML))
    F.interpolate(x.view(1, 1, 4, 70), scale_factor=2, mode="bilinear")
    F.interpolate(x.view(1, 4, 70), scale_factor=1.5, mode="linear")
    torch.linspace(0, 1, 10, device=VKML)
    torch.histc(x, 5)
    torch.bucketize(x, torch.tensor([0.0, 1.0], device=VKML))
    F.pad(x, (1, 1), mode="reflect")
    F.unfold(x.view(1, 1, 4, 70), 2)
    F.grid_sample(x.view(1, 1, 4, 70), torch.zeros(1, 2, 2, 2, device=VKML), align_corners=False)
    F.multi_margin_loss(x, torch.tensor([0, 1, 2, 3], device=VKML))
    gathers_without_sync(d, idx)


def test_indices_gathered_or_joined_from_known_values_need_no_read_back():
    """Batches cut from a token dataset kept on the device: slices stacked, or rows
    picked by index, hold values of the dataset."""
    tokens = torch.randint(0, ROWS, (200,))
    data = tokens.to(VKML)
    starts = [3, 50, 120]
    x = torch.stack([data[s : s + 8] for s in starts])
    gathers_without_sync(x, torch.stack([tokens[s : s + 8] for s in starts]))
    rows = torch.tensor([7, 1, 7]).to(VKML)
    table = tokens.view(20, 10)
    d_table = data.view(20, 10)
    gathers_without_sync(d_table[rows], table[rows.cpu()])
    gathers_without_sync(d_table.index_select(0, rows), table.index_select(0, rows.cpu()))
    pick = torch.tensor([[0, 9], [5, 5]]).to(VKML)
    gathers_without_sync(d_table[:2].gather(1, pick), table[:2].gather(1, pick.cpu()))
    gathers_without_sync(data.take(pick), tokens.take(pick.cpu()))
    # One input of unknown range makes the joined range unknown: checked exactly.
    unknown = unknown_range([ROWS] * 8)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(torch.cat([data[:8], unknown]), torch.randn(ROWS, 3).to(VKML)).cpu()


def test_indices_computed_on_the_device_keep_a_range():
    """Positions plus an offset, a wrap-around shift, a clamp, a remainder, a mask or a
    where: the host works out their range from their inputs' (or the op bounds it)."""
    pos, cpos = torch.arange(6, device=VKML), torch.arange(6)
    gathers_without_sync(pos + 3, cpos + 3)
    gathers_without_sync((pos + 7) % ROWS, (cpos + 7) % ROWS)
    gathers_without_sync((pos * 3 + 1) // 2, (cpos * 3 + 1) // 2)
    # Ranges, not values: pos - pos is known only as [-5, 5], and a slice has the
    # range of its whole tensor.
    a, b = torch.arange(2, device=VKML), torch.arange(2, 4, device=VKML)
    gathers_without_sync(torch.add(a, b, alpha=2), torch.add(a.cpu(), b.cpu(), alpha=2))
    gathers_without_sync(torch.sub(b + 6, a, alpha=3), torch.sub(b.cpu() + 6, a.cpu(), alpha=3))
    pos32 = torch.arange(6, device=VKML, dtype=torch.int32)
    gathers_without_sync(pos32 + 4, torch.arange(6, dtype=torch.int32) + 4)
    # Indices of unknown range, bounded by the op itself.
    noisy = unknown_range([3, -40, 25, 7, 12, -1, 0, 9])
    cnoisy = noisy.cpu()
    gathers_without_sync(noisy.clamp(0, ROWS - 1), cnoisy.clamp(0, ROWS - 1))
    gathers_without_sync(noisy.remainder(ROWS), cnoisy.remainder(ROWS))
    gathers_without_sync(noisy % ROWS, cnoisy % ROWS)
    gathers_without_sync(noisy & 7, cnoisy & 7)
    gathers_without_sync(torch.clamp(noisy, min=pos[:1], max=pos[5:] + 2), cnoisy.clamp(0, 7))
    nine, zero = torch.arange(9, 10, device=VKML), torch.arange(1, device=VKML)
    gathers_without_sync(torch.where(noisy > 0, nine, zero), (cnoisy > 0) * 9)
    inplace = noisy.clone()
    inplace.clamp_(0, ROWS - 1)
    gathers_without_sync(inplace, cnoisy.clamp(0, ROWS - 1))
    inplace.sub_(1).clamp_min_(0)  # [0, 9] - 1, then bounded below: [0, 8]
    gathers_without_sync(inplace, (cnoisy.clamp(0, ROWS - 1) - 1).clamp_min(0))
    # Filled values (full, zeros, a padding index) are one known value.
    gathers_without_sync(torch.full((3,), 4, device=VKML), torch.full((3,), 4))
    gathers_without_sync(torch.zeros(2, 3, dtype=torch.long, device=VKML), torch.zeros(2, 3).long())
    pad = torch.full_like(noisy, ROWS - 1)
    gathers_without_sync(
        torch.where(noisy > 0, noisy % ROWS, pad), torch.where(cnoisy > 0, cnoisy % ROWS, ROWS - 1)
    )


def test_computed_indices_out_of_range_or_unbounded_are_checked_exactly():
    w = torch.randn(ROWS, 3).to(VKML)
    pos = torch.arange(6, device=VKML)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(pos + 5, w).cpu()  # [5, 10]: the exact check finds the 10
    assert F.embedding(pos[:4] + 5, w).shape == (4, 3)  # in range: fine
    noisy = unknown_range([3, -40, 25, 7])
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(noisy.clamp_min(0), w).cpu()  # unbounded above: checked exactly
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(noisy.abs() + ROWS, w).cpu()
    # 2^62 * 4 + 1 wraps to 1, on the CPU too: no range is claimed, the check reads it.
    big = torch.tensor([2**62]).to(VKML)
    got = F.embedding(big * 4 + 1, w)
    torch.testing.assert_close(got.cpu(), w.cpu()[1:2], rtol=0, atol=0)
    idx32 = torch.tensor([70000], dtype=torch.int32).to(VKML)
    wrapped = idx32 * idx32  # wraps at 32 bits, as on the CPU: no range claimed
    assert wrapped.cpu().item() == (torch.tensor([70000], dtype=torch.int32) ** 2).item()
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(wrapped, w).cpu()


def test_unknown_indices_are_checked_on_the_device_without_a_wait():
    w = torch.randn(ROWS, 3)
    w_dev = w.to(VKML)
    good, bad = unknown_range([1, 9, 0]), unknown_range([1, ROWS, 0])
    torch_vkml.synchronize()
    before = syncs()
    out = F.embedding(good, w_dev)
    wrong = F.embedding(bad, w_dev)
    gathered = w_dev.gather(0, bad.view(3, 1).expand(3, 3))
    assert syncs() == before, "an index check waited for the GPU"
    # The first offending op is the one raised, at the read, with the CPU's words.
    with pytest.raises(IndexError, match="index out of range in self"):
        wrong.cpu()
    # Raised once: the device and the next reads are fine.
    torch.testing.assert_close(out.cpu(), F.embedding(good.cpu(), w), rtol=0, atol=0)
    assert gathered.shape == (3, 3)
    with pytest.raises(
        RuntimeError, match="index 10 is out of bounds for dimension 0 with size 10"
    ):
        w_dev.gather(0, bad.view(3, 1).expand(3, 3)).sum().item()
    with pytest.raises(IndexError, match="index 10 is out of bounds for dimension 0 with size 10"):
        w_dev[bad]
        torch_vkml.synchronize()
