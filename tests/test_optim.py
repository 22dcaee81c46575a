"""Fused optimizer steps (fused=True) against PyTorch's CPU fused kernels, and
the dispatch count that makes them worth having: one launch per dtype per step."""

import pytest
import torch
from conftest import VKML, dtype_id, make

import torch_vkml

# Parameters of awkward sizes: a scalar, one shorter than a block, one spanning
# several 1024-element blocks, and an empty one.
SHAPES = [(), (7,), (33, 65), (0, 4), (3, 5, 2)]


def _params(dtype):
    return [make(s, dtype, low=-1, high=1) for s in SHAPES]


def _run(opt_cls, params, device, steps, **kw):
    ps = [torch.nn.Parameter(p.clone().to(device)) for p in params]
    opt = opt_cls(ps, fused=True, **kw)
    gen = torch.Generator().manual_seed(5)
    for _ in range(steps):
        for p in ps:
            p.grad = torch.randn(p.shape, generator=gen).to(p.dtype).to(device)
        opt.step()
    return [p.detach().cpu() for p in ps], opt


ADAM_CASES = {
    "plain": dict(lr=1e-2),
    "weight_decay": dict(lr=1e-2, weight_decay=0.1),
    "amsgrad_maximize": dict(lr=1e-2, amsgrad=True, maximize=True, betas=(0.8, 0.95)),
}


@pytest.mark.parametrize("case", list(ADAM_CASES))
@pytest.mark.parametrize("opt_cls", [torch.optim.Adam, torch.optim.AdamW], ids=["adam", "adamw"])
def test_fused_adam_matches_cpu(opt_cls, case, no_fallback):
    params = _params(torch.float32)
    want, _ = _run(opt_cls, params, "cpu", 4, **ADAM_CASES[case])
    got, opt = _run(opt_cls, params, VKML, 4, **ADAM_CASES[case])
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    state = opt.state[opt.param_groups[0]["params"][1]]
    assert state["exp_avg"].device.type == VKML
    assert float(state["step"]) == 4.0


def test_fused_adamw_large_list_matches_cpu(no_fallback):
    """256+ blocks of 1024 elements: the kernel reads its table from device memory
    (ops/optim.cpp)."""
    params = [make(s, torch.float32, low=-1, high=1) for s in [(300, 700), (50_001,), (7,)]]
    want, _ = _run(torch.optim.AdamW, params, "cpu", 3, lr=1e-2, weight_decay=0.1)
    got, _ = _run(torch.optim.AdamW, params, VKML, 3, lr=1e-2, weight_decay=0.1)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)


SGD_CASES = {
    "plain": dict(lr=0.1),
    "momentum": dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
    "nesterov_maximize": dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True),
}


ADAGRAD_CASES = {
    "plain": dict(lr=0.1),
    "decay": dict(lr=0.1, lr_decay=0.05, weight_decay=0.01, initial_accumulator_value=0.3),
    "maximize": dict(lr=0.05, eps=1e-3, maximize=True),
}
SGD_AND_ADAGRAD = {
    **{f"sgd_{k}": (torch.optim.SGD, kw) for k, kw in SGD_CASES.items()},
    **{f"adagrad_{k}": (torch.optim.Adagrad, kw) for k, kw in ADAGRAD_CASES.items()},
}


@pytest.mark.parametrize("case", list(SGD_AND_ADAGRAD))
def test_fused_sgd_and_adagrad_match_cpu(case, no_fallback):
    opt_cls, kw = SGD_AND_ADAGRAD[case]
    params = _params(torch.float32)
    want, _ = _run(opt_cls, params, "cpu", 4, **kw)
    got, opt = _run(opt_cls, params, VKML, 4, **kw)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-6)
    for state in opt.state.values():  # momentum buffers and sums stay on the device
        assert all(v.device.type == VKML for v in state.values() if isinstance(v, torch.Tensor))


def test_fused_adagrad_grad_scale_found_inf_and_half(no_fallback):
    """GradScaler's unscale in the kernel (the grads are stored unscaled), found_inf
    skipping the step, a tensor lr, and float16 parameters."""
    p_cpu, g_cpu = make((40,)), make((40,))
    results = {}
    for dev in ("cpu", VKML):
        p = p_cpu.clone().to(dev)
        g = g_cpu.clone().to(dev)
        total = torch.full_like(p, 0.1)
        step = torch.tensor(3.0, device=dev)
        kw = dict(lr_decay=0.01, weight_decay=0.01, eps=1e-10, maximize=False)
        torch._fused_adagrad_(
            [p], [g], [total], [step], lr=torch.tensor(0.05, device=dev),
            grad_scale=torch.tensor(4.0, device=dev), found_inf=torch.tensor(0.0, device=dev),
            **kw,
        )  # fmt: skip
        skipped = p.clone()
        torch._fused_adagrad_(
            [skipped], [g.clone()], [total.clone()], [step], lr=0.05,
            found_inf=torch.tensor(1.0, device=dev), **kw,
        )  # fmt: skip
        results[dev] = [t.cpu() for t in (p, g, total, skipped)]
    for got, want in zip(results[VKML], results["cpu"], strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(results[VKML][3], results[VKML][0])
    half = _params(torch.float16)
    want, _ = _run(torch.optim.Adagrad, half, "cpu", 3, lr=0.05)
    got, _ = _run(torch.optim.Adagrad, half, VKML, 3, lr=0.05)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == torch.float16
        torch.testing.assert_close(g, w, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=dtype_id)
def test_fused_adamw_half_precision(dtype, no_fallback):
    params = _params(dtype)
    want, _ = _run(torch.optim.AdamW, params, "cpu", 3, lr=1e-2, weight_decay=0.1)
    got, _ = _run(torch.optim.AdamW, params, VKML, 3, lr=1e-2, weight_decay=0.1)
    tol = 1e-2 if dtype == torch.float16 else 2e-2
    for g, w in zip(got, want, strict=True):
        assert g.dtype == dtype
        torch.testing.assert_close(g, w, atol=tol, rtol=tol)


def test_one_dispatch_per_dtype_group(no_fallback):
    ps = [torch.nn.Parameter(make((50, 50)).to(VKML)) for _ in range(6)]
    ps.append(torch.nn.Parameter(make((9,), torch.float16).to(VKML)))
    opt = torch.optim.AdamW(ps, lr=1e-3, fused=True)
    for p in ps:
        p.grad = torch.ones_like(p)
    opt.step()  # creates the state
    torch_vkml.synchronize()
    before = torch_vkml.memory_stats()["num_dispatches"]
    opt.step()
    after = torch_vkml.memory_stats()["num_dispatches"]
    # the step-count increments (one _foreach_add_ per dtype group, per tensor) plus
    # one fused kernel per dtype: far below the ~10 kernels per tensor of foreach
    assert after - before <= len(ps) + 2


def test_grad_scale_found_inf_and_tensor_lr(no_fallback):
    p_cpu = make((40,))
    g_cpu = make((40,))
    results = {}
    for dev in ("cpu", VKML):
        p = p_cpu.clone().to(dev)
        g = g_cpu.clone().to(dev)
        m, v = torch.zeros_like(p), torch.zeros_like(p)
        step = torch.tensor(1.0, device=dev)
        scale = torch.tensor(4.0, device=dev)
        no_inf = torch.tensor(0.0, device=dev)
        lr = torch.tensor(0.05, device=dev)
        torch._fused_adamw_(
            [p], [g], [m], [v], [], [step], lr=lr, beta1=0.9, beta2=0.99,
            weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False,
            grad_scale=scale, found_inf=no_inf,
        )  # fmt: skip
        skipped = p.clone()
        torch._fused_adamw_(
            [skipped], [g.clone()], [m.clone()], [v.clone()], [], [step], lr=0.05, beta1=0.9,
            beta2=0.99, weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False,
            grad_scale=scale, found_inf=torch.tensor(1.0, device=dev),
        )  # fmt: skip
        results[dev] = [t.cpu() for t in (p, g, m, v, skipped)]
    for got, want in zip(results[VKML], results["cpu"], strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    # the grads were unscaled in place, and found_inf skipped the second step
    torch.testing.assert_close(results[VKML][1], g_cpu / 4)
    torch.testing.assert_close(results[VKML][4], results[VKML][0])


def test_bad_lists_raise_and_device_stays_usable():
    p = torch.zeros(4, device=VKML)
    g = torch.zeros(5, device=VKML)
    step = torch.tensor(1.0, device=VKML)
    with pytest.raises(RuntimeError, match="shape"):
        torch._fused_adam_(
            [p], [g], [torch.zeros_like(p)], [torch.zeros_like(p)], [], [step], lr=0.1,
            beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False,
        )  # fmt: skip
    with pytest.raises(RuntimeError, match="one tensor per parameter"):
        torch._fused_adam_(
            [p], [p.clone()], [], [], [], [], lr=0.1, beta1=0.9, beta2=0.99,
            weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False,
        )  # fmt: skip
    with pytest.raises(RuntimeError, match="state_steps"):
        torch._fused_adam_(
            [p], [p.clone()], [torch.zeros_like(p)], [torch.zeros_like(p)], [],
            [torch.tensor(1, device=VKML)], lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0,
            eps=1e-8, amsgrad=False, maximize=False,
        )  # fmt: skip
    assert (p + 1).sum().item() == 4


def test_channels_last_params_keep_their_layout(no_fallback):
    w = make((4, 3, 3, 3)).contiguous(memory_format=torch.channels_last)
    # Reference: the CPU's per-tensor Adam (its fused kernel assumes the grad has the
    # param's layout, so it is no reference for this case).
    ps_cpu = [torch.nn.Parameter(w.clone())]
    opt_cpu = torch.optim.Adam(ps_cpu, lr=1e-2, foreach=False)
    gen = torch.Generator().manual_seed(5)
    for _ in range(2):
        ps_cpu[0].grad = torch.randn(w.shape, generator=gen)
        opt_cpu.step()
    ps = [torch.nn.Parameter(w.clone().to(VKML))]
    assert ps[0].is_contiguous(memory_format=torch.channels_last)
    opt = torch.optim.Adam(ps, lr=1e-2, fused=True)
    gen = torch.Generator().manual_seed(5)
    for _ in range(2):
        ps[0].grad = torch.randn(w.shape, generator=gen).to(VKML)  # contiguous: other layout
        opt.step()
    torch.testing.assert_close(ps[0].detach().cpu(), ps_cpu[0].detach(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"foreach": True}, {"fused": True}], ids=str)
def test_float64_physics_informed_training(kw, no_fallback):
    """A physics-informed network in float64 (tanh MLP, a PDE residual through
    create_graph gradients, sin and exp of the inputs, Adam) trains as on the CPU to
    float64 precision, natively throughout: the fused step too (the kernel's f64
    variant, in double)."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")

    def run(dev):
        torch.manual_seed(0)
        m = (
            torch.nn.Sequential(
                torch.nn.Linear(2, 32),
                torch.nn.Tanh(),
                torch.nn.Linear(32, 32),
                torch.nn.Tanh(),
                torch.nn.Linear(32, 1),
            )
            .double()
            .to(dev)
        )
        opt = torch.optim.Adam(m.parameters(), lr=1e-3, **kw)
        gen = torch.Generator().manual_seed(1)
        x = torch.rand(64, 2, dtype=torch.float64, generator=gen).to(dev).requires_grad_()
        losses = []
        for _ in range(5):
            u = m(x)
            du = torch.autograd.grad(u.sum(), x, create_graph=True)[0]
            res = du[:, 0] + du[:, 1] - torch.sin(torch.pi * x[:, 0]) * torch.exp(-x[:, 1])
            loss = res.square().mean() + u.square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().cpu() for p in m.parameters()]

    torch_vkml.reset_fallback_counts()
    got, got_params = run(VKML)
    counts = torch_vkml.fallback_counts()
    want, want_params = run("cpu")
    torch.testing.assert_close(got, want, rtol=1e-12, atol=0)
    for g, w in zip(got_params, want_params, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-11, atol=1e-13)
    assert counts == {}, counts


FUSED_FLOAT64 = {
    "adam_amsgrad": (torch.optim.Adam, dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
    "adamw_maximize": (torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1, maximize=True)),
    "adam_tensor_lr": (torch.optim.Adam, dict(lr=torch.tensor(3e-3, dtype=torch.float64))),
    "sgd_nesterov": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    "sgd_dampening": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.3)),
    "adagrad": (torch.optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
}


@pytest.mark.parametrize("case", list(FUSED_FLOAT64))
def test_fused_float64_steps_match_cpu(case, no_fallback):
    """float64 parameters take the kernel's f64 variant (double arithmetic, double
    hyperparameters, a float64 learning-rate tensor): within 1e-13 of the CPU's fused
    step, where they took the counted CPU route."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        return
    opt_cls, kw = FUSED_FLOAT64[case]
    params = _params(torch.float64)
    want, _ = _run(opt_cls, params, "cpu", 4, **kw)
    if isinstance(kw.get("lr"), torch.Tensor):  # the kernel reads it on the device
        kw = dict(kw, lr=kw["lr"].to(VKML))
    got, _ = _run(opt_cls, params, VKML, 4, **kw)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-13, rtol=1e-13)
