"""Fake quantization (quantization-aware training) against the CPU: the per-tensor and
per-channel cachemask ops, the fused moving-average observer and its qparams, bit for bit."""

import subprocess
import sys

import pytest
import torch
from conftest import VKML, assert_raises_like_cpu, make

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

RANGES = [(0, 255), (-128, 127), (0, 127), (-8, 7)]


def _inputs(shape, dtype=torch.float32):
    # Spread past the grid's ends so that both clamps and the mask's zeros occur, with a NaN.
    x = make(shape, low=-4.0, high=4.0).to(dtype)
    x.view(-1)[0] = float("nan")
    return x


def _exact(actual, expected):
    assert actual.device.type == VKML
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    torch.testing.assert_close(actual.cpu(), expected, atol=0, rtol=0, equal_nan=True)


def _both(fn, *args):
    cpu = fn(*args)
    vk = fn(*[a.to(VKML) if isinstance(a, torch.Tensor) else a for a in args])
    for a, e in zip(vk, cpu, strict=True):
        _exact(a, e)
    return cpu, vk


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("qrange", RANGES)
def test_per_tensor(dtype, qrange):
    qmin, qmax = qrange
    x = _inputs((6, 7, 5), dtype)
    zp = (qmin + qmax) // 3

    def fn(t):
        return torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(t, 0.0371, zp, qmin, qmax)

    _both(fn, x)
    _both(fn, x.transpose(0, 2))  # strided: output and mask keep the input's layout
    _both(fn, x[:, ::2])  # not dense: the CPU's layout for it


def test_per_tensor_channels_last_and_grad():
    x = _inputs((2, 3, 4, 5)).contiguous(memory_format=torch.channels_last)
    _both(lambda t: torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(t, 0.1, 7, 0, 255), x)
    grads = []
    for device in ("cpu", VKML):
        leaf = x.detach().to(device).requires_grad_()
        y = torch.fake_quantize_per_tensor_affine(leaf, 0.1, 7, 0, 255)
        y.backward(torch.arange(y.numel(), dtype=torch.float32).reshape(y.shape).to(device))
        grads.append(leaf.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], atol=0, rtol=0)


@pytest.mark.parametrize("enabled", [0, 1])
def test_tensor_qparams(enabled):
    x = _inputs((33, 17))
    scale = torch.tensor([0.0217])
    zp = torch.tensor([11], dtype=torch.int32)
    on = torch.tensor([enabled], dtype=torch.long)
    _both(
        lambda t, s, z, e: torch._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
            t, s, z, e, -128, 127
        ),
        x,
        scale,
        zp,
        on,
    )
    # The autograd path of FakeQuantize modules: fake_quantize_per_tensor_affine with tensors.
    _both(
        lambda t, s, z: (torch.fake_quantize_per_tensor_affine(t, s, z, -128, 127),), x, scale, zp
    )


@pytest.mark.parametrize("axis", [0, 1, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_per_channel(axis, dtype):
    x = _inputs((4, 5, 3, 6), dtype)
    n = x.shape[axis]
    scale = torch.linspace(0.01, 0.3, n)
    zp = torch.arange(n, dtype=torch.int32) % 5 * 3 - 6

    def fn(t, s, z):
        return torch.ops.aten.fake_quantize_per_channel_affine_cachemask(t, s, z, axis, -8, 7)

    _both(fn, x, scale, zp)
    _both(fn, x.contiguous(memory_format=torch.channels_last), scale, zp)


def test_scales_of_every_magnitude():
    """The kernel multiplies by 1 / scale rounded once, as the CPU does: scales across the
    whole float range (subnormal, powers of two, huge) quantize values bit for bit."""
    gen = torch.Generator().manual_seed(5)
    exponents = torch.empty(4096).uniform_(-38, 35, generator=gen)  # x stays finite
    scale = torch.pow(10.0, exponents).float()
    scale[:64] = torch.pow(2.0, torch.arange(-127, 120, 247 / 64).floor())  # powers of two
    scale[64:68] = torch.tensor([2.0**-127 * 1.5, 2.0**-127 * 1.25, 2.0**-126 * 0.75, 1e-38])
    x = (torch.rand(4096, 9, generator=gen) * 300 - 150) * scale[:, None]
    zp = torch.zeros(4096, dtype=torch.int32)
    _both(
        lambda t, s, z: torch.ops.aten.fake_quantize_per_channel_affine_cachemask(
            t, s, z, 0, -128, 127
        ),
        x,
        scale,
        zp,
    )


def test_non_finite_inputs():
    """NaN lands on quant_min (the CPU's and CUDA's integer conversion of it); infinities
    saturate at the grid's ends, as CUDA's conversion does (x86's CPU gives quant_min for
    them too, an artefact of its conversion). All are outside the mask."""
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0], device=VKML)
    y, mask = torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(x, 0.5, 3, 0, 15)
    assert y.cpu().tolist() == [-1.5, 6.0, -1.5, 1.0]
    assert mask.cpu().tolist() == [False, False, False, True]


def _fused_state(channels, per_row):
    inf = float("inf")
    n = channels if per_row else 1
    return [
        torch.full((n,), inf),  # running_min
        torch.full((n,), -inf),  # running_max
        torch.ones(n),  # scale
        torch.zeros(n, dtype=torch.int32),  # zero_point
    ]


def _run_fused(device, batches, flags, per_row, symmetric, qrange, channels):
    state = [t.to(device) for t in _fused_state(channels, per_row)]
    outs = []
    for x, (observe, quantize) in zip(batches, flags, strict=True):
        out = torch._fused_moving_avg_obs_fq_helper(
            x.to(device),
            torch.tensor([observe], device=device),
            torch.tensor([quantize], device=device),
            *state,
            0.01,
            *qrange,
            0,
            per_row,
            symmetric,
        )
        outs.append([t.clone() for t in (*out, *state)])
    return outs


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("qrange", [(0, 255), (-128, 127)])
def test_fused_observer_steps(per_row, symmetric, qrange):
    """Observer and fake quantization switched on and off over steps, as QAT's schedule
    does; running range, scale, zero point, output and mask after every step."""
    batches = [make((6, 4, 3), low=-2.0 + i, high=1.0 + 0.5 * i) for i in range(5)]
    flags = [(1, 0), (1, 1), (0, 1), (1, 1), (0, 0)]
    cpu = _run_fused("cpu", batches, flags, per_row, symmetric, qrange, 6)
    vk = _run_fused(VKML, batches, flags, per_row, symmetric, qrange, 6)
    for step, (c, v) in enumerate(zip(cpu, vk, strict=True)):
        for name, a, e in zip(("out", "mask", "min", "max", "scale", "zp"), v, c, strict=True):
            try:
                _exact(a, e)
            except AssertionError as err:
                raise AssertionError(f"step {step}, {name}: {err}") from err


def _qparam_sweep(symmetric, qrange):
    """4096 random ranges [a, b] at once, as the rows of a per-row observer's first step."""
    gen = torch.Generator().manual_seed(11)
    mags = torch.pow(10.0, torch.empty(4096, 2).uniform_(-9, 4, generator=gen))
    ends = (torch.randn(4096, 2, generator=gen).sign() * mags).sort(dim=1).values
    ends[:8] = torch.tensor([[-1.0, 2.0], [-0.5, 0.5], [0.0, 0.0], [-3.0, 0.0]] * 2)
    ends[8:16] = torch.tensor([[0.25, 4.0], [-2.0, -1.0], [-1e-30, 1e-30], [-128.0, 127.0]] * 2)
    # Round ends, where zero points fall on ties and the CPU's float scale decides them.
    nice = torch.tensor([-4, -3, -2.5, -2, -1.5, -1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 1, 1.5, 3])
    pairs = torch.cartesian_prod(nice, nice)
    ends[16 : 16 + len(pairs)] = pairs.sort(dim=1).values
    results = []
    for device in ("cpu", VKML):
        state = [t.to(device) for t in _fused_state(4096, True)]
        one = torch.ones(1, dtype=torch.long, device=device)
        torch._fused_moving_avg_obs_fq_helper(
            ends.to(device), one, one, *state, 0.01, *qrange, 0, True, symmetric
        )
        results.append([t.cpu() for t in state[2:]])
    return results


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("qrange", RANGES)
def test_chosen_qparams_match_cpu_bit_for_bit(symmetric, qrange):
    (cpu_scale, cpu_zp), (vk_scale, vk_zp) = _qparam_sweep(symmetric, qrange)
    torch.testing.assert_close(vk_scale, cpu_scale, atol=0, rtol=0)
    torch.testing.assert_close(vk_zp, cpu_zp, atol=0, rtol=0)


NO_FP64_SCRIPT = r"""
import torch, torch_vkml, sys
sys.path.insert(0, "tests")
assert not torch_vkml.get_device_properties().supports_fp64
from test_fake_quantize import _qparam_sweep
worst_ulps, zp_off = 0, 0
for symmetric in (False, True):
    for qrange in ((0, 255), (-128, 127)):
        (cs, cz), (vs, vz) = _qparam_sweep(symmetric, qrange)
        ulps = (vs.view(torch.int32).long() - cs.view(torch.int32).long()).abs().max().item()
        worst_ulps = max(worst_ulps, ulps)
        zp_off = max(zp_off, (vz.long() - cz.long()).abs().max().item())
assert torch_vkml.fallback_counts() == {}, torch_vkml.fallback_counts()
print("ok", worst_ulps, zp_off)
"""


def test_qparams_on_a_device_without_float64():
    """Without float64 (many Intel and mobile GPUs) the qparams are chosen in float: scales
    within an ulp of the CPU's, zero points within one step."""
    import os

    env = dict(os.environ, TORCH_VKML_NO_FP64="1")
    run = subprocess.run(
        [sys.executable, "-c", NO_FP64_SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    _, ulps, zp_off = run.stdout.split()
    assert int(ulps) <= 1 and int(zp_off) <= 1, run.stdout


def test_bad_input_raises_like_cpu():
    x = make((4, 3))
    s, z = torch.full((3,), 0.1), torch.zeros(3, dtype=torch.int32)
    ptac = torch.ops.aten.fake_quantize_per_tensor_affine_cachemask
    pcac = torch.ops.aten.fake_quantize_per_channel_affine_cachemask
    assert_raises_like_cpu(lambda t: ptac(t, 0.1, 300, 0, 255), x)  # zero point outside
    assert_raises_like_cpu(lambda t: ptac(t, 0.1, 0, 10, 5), x)  # quant_min > quant_max
    assert_raises_like_cpu(lambda t, a, b: pcac(t, a, b, 1, 0, 255), x, s.double(), z)
    assert_raises_like_cpu(lambda t, a, b: pcac(t, a, b, 1, 0, 255), x, s, z.long())
    assert_raises_like_cpu(lambda t, a, b: pcac(t, a, b, 0, 0, 255), x, s, z)  # 4 rows
    assert_raises_like_cpu(lambda t, a, b: pcac(t, a, b, 2, 0, 255), x, s, z)  # no axis 2
    # A zero point outside the range on the device: raised at the next read, as on the CPU.
    bad = torch.tensor([0, 300, 0], dtype=torch.int32)
    assert_raises_like_cpu(lambda t, a, b: pcac(t, a, b, 1, 0, 255), x, s, bad)
    # The device is usable afterwards.
    y, mask = pcac(x.to(VKML), s.to(VKML), z.to(VKML), 1, 0, 255)
    _exact(y, pcac(x, s, z, 1, 0, 255)[0])


def test_messages_match_cpu():
    x = make((4, 3))
    for fn in (
        lambda t: torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(t, 0.1, 0, 10, 5),
        lambda t: torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(t, 0.1, 300, 0, 255),
    ):
        with pytest.raises(RuntimeError) as cpu:
            fn(x)
        with pytest.raises(RuntimeError) as vk:
            fn(x.to(VKML))
        assert str(vk.value).splitlines()[0] == str(cpu.value).splitlines()[0]
    torch_vkml.synchronize()


@pytest.mark.parametrize("per_channel", [False, True])
def test_learnable_qparams_grads(per_channel):
    """LSQ (_LearnableFakeQuantize): the forward with rounded zero points, and gradients of
    input, scale and zero point as the CPU's."""
    x = make((5, 4, 3), low=-3.0, high=3.0)
    if per_channel:
        scale, zp = torch.tensor([0.05, 0.11, 0.02, 0.3]), torch.tensor([2.6, -3.7, 0.5, 1.49])

        def fn(t, s, z):
            return torch._fake_quantize_learnable_per_channel_affine(t, s, z, 1, -8, 7, 0.5)
    else:
        scale, zp = torch.tensor([0.07]), torch.tensor([-2.5])

        def fn(t, s, z):
            return torch._fake_quantize_learnable_per_tensor_affine(t, s, z, -8, 7, 0.5)

    results = []
    for device in ("cpu", VKML):
        args = [a.detach().to(device).requires_grad_() for a in (x, scale, zp)]
        y = fn(*args)
        y.backward(torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(device))
        results.append([y.detach().cpu()] + [a.grad.cpu() for a in args])
    (cy, *cgrads), (vy, *vgrads) = results
    torch.testing.assert_close(vy, cy, atol=0, rtol=0)
    torch.testing.assert_close(vgrads[0], cgrads[0], atol=0, rtol=0)  # input: grad * mask
    for v, c in zip(vgrads[1:], cgrads[1:], strict=True):  # sums in another order
        torch.testing.assert_close(v, c, atol=1e-5, rtol=1e-5)
