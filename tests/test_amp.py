"""Automatic mixed precision on vkml: torch.autocast with CUDA's cast policy, and
torch.amp.GradScaler with its two ops native on the device.

Before: autocast on vkml cast nothing (a matmul under bf16 autocast gave float32), and
a GradScaler step ran _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_
on the CPU fallback.

Covers every case of torch_openreg's tests/test_autocast.py (PyTorch's reference backend).
"""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same, make
from torch.testing._internal.autocast_test_lists import AutocastTestLists
from torch.utils._python_dispatch import TorchDispatchMode

import torch_vkml

VKML = "vkml"
LOW = (torch.float16, torch.bfloat16)

# CUDA-only kernels in PyTorch's lists (cuDNN): no vkml counterpart to test.
CUDA_ONLY = {"cudnn_convolution", "cudnn_convolution_transpose"}


@pytest.fixture(scope="module")
def lists():
    torch.manual_seed(0)
    return AutocastTestLists(torch.device(VKML))


def cases(name):
    # The lists are built on the device inside the tests; the CPU copy gives each case
    # an id at collection time. cuDNN's kernels are left out: they are CUDA's alone.
    entries = getattr(_cpu_lists, name)
    return [
        pytest.param(name, i, id=f"{name}-{i}-{e[0]}")
        for i, e in enumerate(entries)
        if e[0] not in CUDA_ONLY
    ]


# Built once on the CPU (cheap), to name the cases at collection time.
_cpu_lists = AutocastTestLists(torch.device("cpu"))


def _cast(v, dtype):
    if isinstance(v, torch.Tensor) and v.is_floating_point():
        return v.to(dtype)
    if isinstance(v, (list, tuple)):
        return type(v)(_cast(x, dtype) for x in v)
    return v


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _widest(args):
    dts = [a.dtype for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
    return torch.float32 if torch.float32 in dts else dts[0]


def _run(fn, args, kwargs, low, expected):
    """fn under autocast gives `expected` and the same values as fn outside autocast on
    inputs cast to `expected` (what CUDA's autocast tests check)."""
    with torch.autocast(VKML, dtype=low):
        out = fn(*args, **kwargs)
    got = _first(out)
    assert got.dtype == expected, (got.dtype, expected)
    control = _first(fn(*_cast(args, expected), **_cast(kwargs, expected)))
    torch.testing.assert_close(got, control, rtol=0, atol=0, equal_nan=True)


def _entry(lists, name, i):
    entry = getattr(lists, name)[i]
    op, args = entry[0], entry[1]
    kwargs = entry[2] if len(entry) > 2 and isinstance(entry[2], dict) else {}
    if op == "einsum":  # ("einsum", equation, 2-D matrices): the equation wants 4-D
        g = torch.Generator().manual_seed(0)
        four_d = tuple(torch.randn(2, 3, 4, 5, generator=g).to(VKML) for _ in range(2))
        return (lambda *a: torch.einsum(args, *a)), four_d, {}
    if op == "conv_transpose3d":
        # The cast policy does not depend on sizes, and at the lists' 8^5 input and kernel
        # this one product ran 17 s on lavapipe (100 s of the suite): a batch of 2 and 4^3.
        args = tuple(a[: 2 if j == 0 else None, :, :4, :4, :4] for j, a in enumerate(args))
    return op, args, kwargs


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("name,i", cases("torch_fp16") + cases("linalg_fp16") + cases("nn_fp16"))
def test_lower_precision_list(lists, name, i, low):
    op, args, kwargs = _entry(lists, name, i)
    module = {"linalg_fp16": torch._C._linalg, "nn_fp16": torch._C._nn}.get(name, torch)
    fn = op if callable(op) else getattr(module, op)
    _run(fn, args, kwargs, low, low)


@pytest.mark.parametrize("name,i", cases("torch_fp32") + cases("nn_fp32"))
def test_fp32_list(lists, name, i):
    op, args, kwargs = _entry(lists, name, i)
    module = torch._C._nn if name == "nn_fp32" else torch
    _run(getattr(module, op), args, kwargs, torch.float16, torch.float32)


@pytest.mark.parametrize("name,i", cases("torch_need_autocast_promote"))
def test_promote_list(lists, name, i):
    op, args, kwargs = _entry(lists, name, i)
    _run(getattr(torch, op), args, kwargs, torch.float16, _widest(args))


@pytest.mark.parametrize("low", LOW)
def test_methods(lists, low):
    op, args = lists.methods_fp16[0]
    _run(lambda a, b: getattr(a, op)(b), args, {}, low, low)
    op, args = lists.methods_fp32[0]
    _run(lambda a, b: getattr(a, op)(b), args, {}, low, torch.float32)


def test_builtin_promotion_still_applies(lists):
    for op, args, expected in lists.torch_expect_builtin_promote:
        with torch.autocast(VKML, dtype=torch.float16):
            out = getattr(torch, op)(*args)
        if isinstance(out, torch.Tensor):
            assert out.dtype == expected, op


def test_binary_cross_entropy_is_refused(lists):
    op, args, module = lists.banned[0]
    with torch.autocast(VKML, dtype=torch.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            getattr(module, op)(*args)


def test_autocast_api():
    assert torch.amp.is_autocast_available(VKML)
    assert torch.get_autocast_dtype(VKML) == torch.float16  # CUDA's default
    a = torch.randn(4, 4, device=VKML)
    with torch.autocast(VKML, dtype=torch.bfloat16):
        assert torch.is_autocast_enabled(VKML)
        assert torch.get_autocast_dtype(VKML) == torch.bfloat16
        assert (a @ a).dtype == torch.bfloat16
        with torch.autocast(VKML, enabled=False):  # nested, disabled
            assert (a @ a).dtype == torch.float32
        with torch.autocast(VKML, dtype=torch.float16):  # nested, another dtype
            assert (a @ a).dtype == torch.float16
        assert (a @ a).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled(VKML)
    assert (a @ a).dtype == torch.float32
    # autocast for vkml leaves CPU tensors alone, as CUDA's does
    c = torch.randn(4, 4)
    with torch.autocast(VKML):
        assert (c @ c).dtype == torch.float32


class CountCasts(TorchDispatchMode):
    """Counts the dtype casts (aten::_to_copy) dispatched inside the block."""

    def __init__(self):
        super().__init__()
        self.casts = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.casts += func is torch.ops.aten._to_copy.default
        return func(*args, **(kwargs or {}))


def test_weight_cast_cache():
    lin = torch.nn.Linear(8, 8).to(VKML)
    x = torch.randn(2, 8, device=VKML)
    assert torch.is_autocast_cache_enabled()
    with torch.autocast(VKML, dtype=torch.float16), CountCasts() as mode:
        y1 = lin(x)
        y2 = lin(x)
    # the input is cast per call; the weight and bias (leaves that need grad) once, as on
    # CUDA: 2 + 2, not 6
    assert mode.casts == 4
    assert y1.dtype == y2.dtype == torch.float16
    torch.testing.assert_close(y1, y2, rtol=0, atol=0)


def test_custom_fwd_bwd():
    class Square(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type=VKML, cast_inputs=torch.float32)
        def forward(ctx, x):
            ctx.save_for_backward(x)
            assert x.dtype == torch.float32  # cast_inputs ran it outside autocast
            return x * x

        @staticmethod
        @torch.amp.custom_bwd(device_type=VKML)
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = torch.randn(5, device=VKML, dtype=torch.float16, requires_grad=True)
    with torch.autocast(VKML, dtype=torch.float16):
        y = Square.apply(x)
    assert y.dtype == torch.float32
    y.sum().backward()
    torch.testing.assert_close(x.grad.cpu(), (2 * x.detach().float()).half().cpu())


# ---- the cases of torch_openreg's test_autocast.py not covered by the lists above ----


LOW_TOL = {torch.float16: dict(atol=1e-2, rtol=1e-2), torch.bfloat16: dict(atol=5e-2, rtol=2e-2)}


def test_an_unsupported_autocast_dtype_warns_and_disables_autocast():
    a = torch.randn(2, 3, device=VKML)
    b = torch.randn(3, 3, device=VKML)
    for dtype in (torch.float32, torch.float64):
        refused = "vkml autocast, but the target dtype is not supported"
        with pytest.warns(UserWarning, match=refused):
            ctx = torch.autocast(VKML, dtype=dtype)
        with ctx:
            assert not torch.is_autocast_enabled(VKML)
            assert (a @ b).dtype == torch.float32  # nothing cast
    assert torch.vkml.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]


def test_set_autocast_dtype_sets_the_default_of_autocast():
    a = torch.randn(2, 3, device=VKML)
    b = torch.randn(3, 3, device=VKML)
    try:
        for dtype in (torch.bfloat16, torch.float16):
            torch.set_autocast_dtype(VKML, dtype)
            assert torch.get_autocast_dtype(VKML) == dtype
            with torch.autocast(VKML):  # no dtype given: the one set
                assert (a @ b).dtype == dtype
    finally:
        torch.set_autocast_dtype(VKML, torch.float16)


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("given", [torch.float16, torch.bfloat16, torch.float32])
def test_fp32_policy_ops_give_float32_for_any_input(low, given):
    x = (torch.rand(8) * 1.8 - 0.9).to(given)
    with torch.autocast(VKML, dtype=low):
        out = torch.asin(x.to(VKML))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), torch.asin(x.float()))


def test_ops_on_no_list_run_in_their_inputs_dtype():
    f32 = torch.randn(2, 3, device=VKML)
    f16 = torch.randn(2, 3, device=VKML, dtype=torch.float16)
    with torch.autocast(VKML, dtype=torch.float16), CountCasts() as mode:
        same32 = torch.add(f32, f32)
        same16 = f16 * f16
        mixed = f16 + f32  # ordinary type promotion, not autocast
    assert mode.casts == 0
    assert same32.dtype == torch.float32 and same16.dtype == torch.float16
    assert mixed.dtype == torch.float32
    torch.testing.assert_close(same32.cpu(), 2 * f32.cpu(), rtol=0, atol=0)


def test_dot_promotes_as_on_cuda():
    """dot is on CUDA's promote list (openreg once put it on its fp32 list): two float16
    inputs stay float16, a float32 one makes it float32."""
    h = torch.randn(4, device=VKML, dtype=torch.float16)
    f = torch.randn(4, device=VKML)
    with torch.autocast(VKML, dtype=torch.float16):
        assert torch.dot(h, h).dtype == torch.float16
        assert torch.dot(h, f).dtype == torch.float32


@pytest.mark.parametrize("low", LOW)
def test_mm_of_inputs_already_low_or_mixed(low):
    g = torch.Generator().manual_seed(1)
    x32, y32 = torch.randn(2, 3, generator=g), torch.randn(3, 3, generator=g)
    x, y = x32.to(VKML), y32.to(low).to(VKML)
    with torch.autocast(VKML, dtype=low), CountCasts() as mode:
        already = torch.mm(x.to(low), y)
        casts_of_the_explicit_to = mode.casts
        mixed = torch.mm(x, y)
    assert casts_of_the_explicit_to == 1  # autocast cast nothing more for the low pair
    assert mode.casts == 2  # only the float32 operand of the mixed pair
    assert already.dtype == mixed.dtype == low
    want = torch.mm(x32.to(low), y32.to(low)).float()
    torch.testing.assert_close(mixed.cpu().float(), want, **LOW_TOL[low])


@pytest.mark.parametrize("low", LOW)
def test_ops_chained_under_autocast(low):
    x = torch.randn(2, 3, device=VKML)
    y = torch.randn(3, 3, device=VKML)
    z = torch.rand(2, device=VKML) - 0.5
    with torch.autocast(VKML, dtype=low):
        first = torch.mm(x, y)
        angle = torch.asin(z)
        second = torch.mm(first, y)  # a low result into a listed op with a float32 one
        summed = first.sum()  # a float32-policy reduction of a low tensor
    assert (first.dtype, angle.dtype, second.dtype) == (low, torch.float32, low)
    assert summed.dtype == torch.float32
    ref = (x.cpu().to(low) @ y.cpu().to(low)).to(low) @ y.cpu().to(low)
    torch.testing.assert_close(second.cpu().float(), ref.float(), **LOW_TOL[low])


def test_backward_through_autocast_gives_float32_grads():
    g = torch.Generator().manual_seed(2)
    x32, y32 = torch.randn(2, 3, generator=g), torch.randn(3, 3, generator=g)
    x = x32.to(VKML).requires_grad_()
    y = y32.to(VKML).requires_grad_()
    with torch.autocast(VKML, dtype=torch.float16):
        out = torch.mm(x, y)
        assert out.dtype == torch.float16 and out.requires_grad
        out.sum().backward()
    assert x.grad.dtype == y.grad.dtype == torch.float32  # the leaves' own dtype
    assert x.grad.device.type == VKML
    ones = torch.ones(2, 3)
    torch.testing.assert_close(x.grad.cpu(), ones @ y32.half().float().t(), atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(
        y.grad.cpu(), x32.half().float().t() @ torch.ones(2, 3), atol=1e-2, rtol=1e-2
    )


# ---- GradScaler ----


def test_unscale_and_inf_check_match_the_cpu():
    grads = [
        torch.randn(7, 3) * 100,
        torch.randn(5).half() * 100,
        torch.randn(4, 4).bfloat16() * 100,
    ]
    for bad in (None, float("inf"), float("nan")):
        cpu = [g.clone() for g in grads]
        if bad is not None:
            cpu[1][2] = bad
        dev = [g.to(VKML) for g in cpu]
        for tensors, device in ((cpu, "cpu"), (dev, VKML)):
            found = torch.zeros(1, device=device)
            torch._amp_foreach_non_finite_check_and_unscale_(
                tensors, found, torch.full((1,), 0.125, device=device)
            )
            if device == "cpu":
                want_found = found.clone()
            else:
                assert found.cpu().item() == want_found.item()
        for c, d in zip(cpu, dev, strict=True):
            torch.testing.assert_close(d.cpu(), c, rtol=0, atol=0, equal_nan=True)


def test_update_scale_matches_the_cpu():
    # a sequence with infs, clean streaks reaching the interval, and a growth that would
    # overflow fp32 (held back)
    for start in (65536.0, 3.0e38):
        cpu_scale, cpu_tracker = torch.full((1,), start), torch.zeros(1, dtype=torch.int32)
        scale, tracker = cpu_scale.to(VKML), cpu_tracker.to(VKML)
        for found in (0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0):
            for s, t, dev in ((cpu_scale, cpu_tracker, "cpu"), (scale, tracker, VKML)):
                torch._amp_update_scale_(
                    s, t, torch.full((1,), float(found), device=dev), 2.0, 0.5, 3
                )
            assert scale.cpu().item() == cpu_scale.item()
            assert tracker.cpu().item() == cpu_tracker.item()


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 16, generator=g)
    y = (x[:, :4].sum(1) > 0).long() + 2 * (x[:, 4:8].sum(1) > 0).long()
    return x, y


def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 4)
    )


def _train(device, amp_dtype, steps, fused=False):
    x, y = _data()
    x, y = x.to(device), y.to(device)
    model = _model().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=fused)
    use_scaler = amp_dtype == torch.float16
    scaler = torch.amp.GradScaler(device, enabled=use_scaler)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast(device, dtype=amp_dtype, enabled=amp_dtype is not None):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.detach())
    return [v.float().item() for v in losses], scaler


@pytest.mark.parametrize("amp_dtype", LOW)
@pytest.mark.parametrize("fused", [False, True])
def test_amp_training_converges_as_on_the_cpu(amp_dtype, fused):
    torch_vkml.reset_fallback_counts()
    losses, scaler = _train(VKML, amp_dtype, 40, fused=fused)
    assert torch_vkml.fallback_counts() == {}
    reference, _ = _train("cpu", None, 40)  # fp32 on the CPU
    assert losses[-1] < 0.5 * losses[0]
    # the same run in 16 bits: close to fp32's path, not equal to it
    assert abs(losses[-1] - reference[-1]) < 0.1 + 0.2 * reference[-1], (losses, reference)
    if amp_dtype == torch.float16:
        assert scaler.get_scale() > 0


def test_scaler_skips_a_step_with_inf_and_backs_off():
    model = _model().to(VKML)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(VKML, init_scale=1024.0)
    x, y = _data()
    with torch.autocast(VKML, dtype=torch.float16):
        loss = F.cross_entropy(model(x.to(VKML)), y.to(VKML))
    scaler.scale(loss).backward()
    next(model.parameters()).grad[0, 0] = float("inf")
    before = [p.detach().cpu().clone() for p in model.parameters()]
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 512.0
    for b, p in zip(before, model.parameters(), strict=True):
        assert torch.equal(b, p.detach().cpu())


def test_scaled_fused_step_waits_for_nothing():
    model = _model().to(VKML)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    scaler = torch.amp.GradScaler(VKML)
    x, y = (t.to(VKML) for t in _data())
    for step in range(3):
        syncs = torch_vkml.memory_stats()["num_syncs"]
        opt.zero_grad()
        with torch.autocast(VKML, dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if step:  # the first step's lazy initialisation may read the device
            assert torch_vkml.memory_stats()["num_syncs"] == syncs


NO_FP64_SCRIPT = r"""
import torch, torch_vkml
import torch.nn.functional as F
assert not torch_vkml.get_device_properties().supports_fp64
# float64 tensors are stored, filled and converted without float64 arithmetic; math raises.
ones = torch.ones(2, device="vkml", dtype=torch.float64)
try:
    ones * 3
    raise SystemExit("float64 was not hidden")
except NotImplementedError as e:
    assert "float64" in str(e), e
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
model = model.to("vkml")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("vkml", init_scale=2.0**10)
x = torch.randn(64, 16).to("vkml")
y = (x[:, 0] > 0).long().to("vkml")
torch_vkml.reset_fallback_counts()
losses = []
for step in range(30):
    opt.zero_grad()
    with torch.autocast("vkml", dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)  # explicit, as before gradient clipping
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    losses.append(loss.item())
assert torch_vkml.fallback_counts() == {}, torch_vkml.fallback_counts()
assert losses[-1] < 0.5 * losses[0], losses
messages = torch_vkml.validation_messages()  # read once: reading takes them
assert messages == [], messages
print("ok", scaler.get_scale())
"""


def test_grad_scaler_on_a_device_without_float64():
    """GradScaler.unscale_ computes 1/scale in float64; with float64 hidden from the runtime
    (TORCH_VKML_NO_FP64=1, as on many Intel and mobile GPUs) it must still train."""
    import os
    import subprocess
    import sys

    # The suite's validation setting (on in `make test`; off where no layer is installed).
    env = dict(os.environ, TORCH_VKML_NO_FP64="1")
    run = subprocess.run(
        [sys.executable, "-c", NO_FP64_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("ok")


@pytest.mark.parametrize("low", LOW)
def test_cross_entropy_under_autocast_is_float32_as_on_cuda(low):
    """CUDA's cross_entropy decomposes into log_softmax and nll_loss, both float32 under
    autocast; vkml's fused kernel must give the same float32 loss on 16-bit logits, and
    a GradScaler's 65536 x that loss must backpropagate finite 16-bit gradients (in 16
    bits throughout, the scaled gradient overflows and every first step is skipped)."""
    logits = make((4, 10), low=-3, high=3).to(low)
    target = torch.tensor([0, 3, 5, 9])
    results = {}
    for device in ("cpu", VKML):
        x = logits.clone().to(device).requires_grad_()
        with torch.autocast(device, dtype=low):
            loss = F.cross_entropy(x, target.to(device), label_smoothing=0.1)
        (loss * 65536.0).backward()
        assert loss.dtype == torch.float32, device
        assert x.grad.dtype == low and torch.isfinite(x.grad).all(), device
        results[device] = loss, x.grad
    assert_same(results[VKML][0], results["cpu"][0], atol=1e-5, rtol=1e-5, where="loss")
    assert_same(results[VKML][1], results["cpu"][1], where="grad")
    # and in inference mode (the fused kernel's PrivateUse1 registration)
    with torch.inference_mode(), torch.autocast(VKML, dtype=low):
        assert F.cross_entropy(logits.to(VKML), target.to(VKML)).dtype == torch.float32
