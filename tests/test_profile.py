"""torch_vkml.profile: per-kernel device time of a block, by the device's clock."""

import pytest
import torch
from conftest import VKML

import torch_vkml


def test_profile_names_counts_and_times_each_kernel(no_fallback):
    a = torch.randn(48, 40, device=VKML)
    b = torch.randn(40, 24, device=VKML)
    torch_vkml.synchronize()
    with torch_vkml.profile() as prof:
        c = a @ b
        d = (c + 1.0) * 2.0
        d.add_(c)
        e = d.cpu()
    expected = ((a.cpu() @ b.cpu()) + 1.0) * 2.0 + a.cpu() @ b.cpu()
    # Serialising the kernels must not change what they compute.
    torch.testing.assert_close(e, expected, atol=1e-4, rtol=1e-4)
    by_name = {k.name: k for k in prof.kernels}
    gemm = [k for k in prof.kernels if k.name.startswith("gemm_f32[")]
    assert len(gemm) == 1 and gemm[0].calls == 1 and gemm[0].workgroups >= 1, by_name
    elementwise = [k for k in prof.kernels if k.name.startswith("elementwise_f32")]
    assert sum(k.calls for k in elementwise) == 3, by_name
    # Elementwise kernels carry their op's name (op_codes.h, named at build time).
    ops = {k.name.rsplit(" ", 1)[-1] for k in elementwise}
    assert {"add", "mul"} <= ops, by_name
    assert all(k.total_ms > 0 and k.max_ms <= k.total_ms + 1e-9 for k in prof.kernels)
    totals = [k.total_ms for k in prof.kernels]
    assert totals == sorted(totals, reverse=True)
    assert prof.total_ms == pytest.approx(sum(totals))
    table = prof.table(top=1)
    assert table.splitlines()[1].startswith(prof.kernels[0].name[:48])
    assert "more)" in table and table.splitlines()[-1].startswith("total")


def test_copies_are_timed_and_profiling_restarts(no_fallback):
    # An odd number of bytes: a transfer command on every device (whole words run as a
    # kernel on GPUs, DeviceInfo::copies_by_kernel).
    x = torch.randint(0, 200, (1001,), dtype=torch.uint8).to(VKML)
    with torch_vkml.profile() as first:
        y = x.clone()
    assert [k.name for k in first.kernels] == ["copy"]
    assert first.kernels[0].calls == 1 and first.kernels[0].workgroups == 0
    with torch_vkml.profile() as second:
        pass
    assert second.kernels == []
    torch.testing.assert_close(y.cpu(), x.cpu())


def test_work_after_the_block_is_not_counted(no_fallback):
    x = torch.randn(64, device=VKML)
    with torch_vkml.profile() as prof:
        x.mul_(2.0)
    x.mul_(3.0)
    torch_vkml.synchronize()
    assert sum(k.calls for k in prof.kernels) == 1


def test_stop_without_start_is_a_clear_error():
    with pytest.raises(ValueError, match="profiler was not started"):
        torch_vkml._C._profile_stop()
