"""torch.use_deterministic_algorithms on vkml, and scatters that run element by element.

Kernels that add floats with compare-and-swap sum in the order threads arrive, as CUDA's
atomics do. Under deterministic mode vkml does what CUDA does: a deterministic path where
it has one (index and scatter ops walk the elements in the CPU's order; the backward of
padding and nearest upsampling feeds index_add), otherwise the alert CUDA's kernel
raises (or warns, with ``warn_only=True``). Before, every such kernel ran as usual,
silently giving a non-reproducible result where the user had asked for one.

The element-by-element walk (also taken by float64 scatters and int64 max/min/prod
reductions) runs in one invocation; lavapipe (Mesa 22.3) ends loops past 65535
iterations silently, and a float64 index_add of 200000 elements was wrong by hundreds.
The walk is now split into dispatches below that limit.
"""

import pytest
import torch
import torch.nn.functional as F
from conftest import VKML, assert_close_to_cpu, make

N = 200_000  # elements: past lavapipe's loop iteration limit in one invocation


@pytest.fixture
def deterministic():
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(False)


def _long_scatter_inputs(dtype):
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 100, (N,), generator=g)
    src = torch.rand(N, generator=g, dtype=torch.float64).to(dtype)
    return idx, src


def test_long_float64_and_int64_scatters_are_exact():
    idx, src = _long_scatter_inputs(torch.float64)
    zeros = torch.zeros(100, dtype=torch.float64)
    assert_close_to_cpu(lambda z, i, s: z.index_add(0, i, s), zeros, idx, src, atol=0, rtol=0)
    ints = (src * 2000 - 1000).long()
    assert_close_to_cpu(
        lambda z, i, s: z.scatter_reduce(0, i, s, "amax", include_self=False),
        torch.zeros(100, dtype=torch.long),
        idx,
        ints,
    )


@pytest.mark.usefixtures("deterministic")
def test_deterministic_scatters_follow_the_cpus_order():
    idx, src = _long_scatter_inputs(torch.float32)
    zeros = torch.zeros(100)
    assert_close_to_cpu(lambda z, i, s: z.index_add(0, i, s), zeros, idx, src, atol=0, rtol=0)
    # Copies to one index from several sources: the CPU's last one lands.
    assert_close_to_cpu(lambda z, i, s: z.scatter(0, i, s), zeros, idx, src, atol=0, rtol=0)

    def put(z, i, s):
        z = z.clone()
        z[i] = s
        return z

    assert_close_to_cpu(put, zeros, idx, src, atol=0, rtol=0)


def _backward(fn, x):
    xv = x.detach().to(VKML).requires_grad_()
    fn(xv).square().sum().backward()
    return xv.grad


@pytest.mark.usefixtures("deterministic")
@pytest.mark.parametrize(
    "name, fn",
    [
        ("upsample_nearest2d", lambda t: F.interpolate(t, scale_factor=2.5)),
        ("reflection_pad2d", lambda t: F.pad(t, (3, 2, 2, 3), mode="reflect")),
        ("replication_pad2d", lambda t: F.pad(t, (2, 2, 1, 4), mode="replicate")),
        ("interpolate_bilinear", lambda t: F.interpolate(t, scale_factor=2, mode="bilinear")),
    ],
)
def test_deterministic_backward_of_gathers_is_native_and_exact(name, fn, no_fallback):
    x = make((2, 3, 5, 6))
    xc = x.clone().requires_grad_()
    fn(xc).square().sum().backward()
    torch.testing.assert_close(_backward(fn, x).cpu(), xc.grad, atol=1e-5, rtol=1e-5)


# F.interpolate takes a decomposition of its own in deterministic mode for linear modes
# (its backward is index_put with accumulate: the walk above); these kernels are reached
# by their ops, and by F.interpolate's bicubic and antialiased modes, as CUDA's.
ALERTS = [
    (
        "grid_sampler_2d_backward",
        lambda t: F.grid_sample(t, torch.zeros(2, 3, 3, 2, device=t.device), align_corners=False),
    ),
    (
        "upsample_bilinear2d_backward",
        lambda t: torch.ops.aten.upsample_bilinear2d(t, [10, 12], False),
    ),
    (
        "upsample_bicubic2d_backward",
        lambda t: torch.ops.aten.upsample_bicubic2d(t, [10, 12], False),
    ),
    (
        "upsample_linear1d_backward",
        lambda t: torch.ops.aten.upsample_linear1d(t.flatten(2), [60], False),
    ),
]


@pytest.mark.parametrize("name, fn", ALERTS, ids=[a[0] for a in ALERTS])
def test_nondeterministic_kernels_alert_as_cuda(name, fn):
    x = make((2, 3, 5, 6))
    _backward(fn, x)  # runs when deterministic mode is off
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match=f"{name} on vkml does not have a deterministic"):
            _backward(fn, x)
    finally:
        torch.use_deterministic_algorithms(False)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with pytest.warns(UserWarning, match=f"{name} on vkml does not have a deterministic"):
            _backward(fn, x)
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.usefixtures("deterministic")
def test_weighted_bincount_alerts_and_counts_stay_native():
    x = torch.tensor([0, 1, 1, 3], device=VKML)
    with pytest.raises(RuntimeError, match="_bincount on vkml does not have a deterministic"):
        torch.bincount(x, weights=torch.ones(4, device=VKML))
    assert torch.bincount(x).tolist() == [1, 2, 0, 1]  # integer counts: exact in any order
