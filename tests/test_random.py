"""Random numbers on vkml (ops_random.cpp): rand, randn, randint and the in-place
distributions, normal() with tensor parameters, multinomial and bernoulli: statistics over
100k / 200k draws (tolerances ~5 standard errors), dtypes, shapes, seeding and bad
arguments."""

import math

import pytest
import torch
from conftest import VKML, describe, dtype_id, run_python

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

N = 100_000  # sample size for the rand / randn / randint checks
N_DRAWS = 200_000  # sample size for the distributions


# ------------------------------------------ rand, randn, normal_, randint


def _stats(t):
    t = t.cpu().double()
    return t.mean().item(), t.std().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
def test_rand(dtype):
    t = torch.rand(N, dtype=dtype, device=VKML)
    assert t.is_vkml and t.dtype == dtype and t.shape == (N,)
    values = t.cpu()
    assert values.min().item() >= 0.0
    assert values.max().item() < 1.0
    mean, std = _stats(t)
    assert abs(mean - 0.5) < 0.01
    assert abs(std - 1 / math.sqrt(12)) < 0.01
    if dtype == torch.float32:
        # no repeating streams across threads/workgroups
        assert values.unique().numel() > 0.99 * N


def test_rand_shapes():
    assert torch.rand(2, 3, device=VKML).shape == (2, 3)
    assert torch.rand((), device=VKML).shape == ()
    assert torch.rand(0, 3, device=VKML).shape == (0, 3)
    assert torch.randn(4, 1, 2, device=VKML).shape == (4, 1, 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
def test_randn(dtype):
    t = torch.randn(N, dtype=dtype, device=VKML)
    assert t.is_vkml and t.dtype == dtype and t.shape == (N,)
    values = t.cpu().double()
    assert torch.isfinite(values).all()
    mean, std = _stats(t)
    assert abs(mean) < 0.02
    assert abs(std - 1.0) < 0.02
    # roughly normal tails: about 4.55% beyond two standard deviations
    assert abs((values.abs() > 2).double().mean().item() - 0.0455) < 0.005
    if dtype == torch.float32:
        assert values.unique().numel() > 0.99 * N


def test_successive_draws_differ():
    a = torch.rand(1000, device=VKML).cpu()
    b = torch.rand(1000, device=VKML).cpu()
    assert not torch.equal(a, b)
    c = torch.randn(1000, device=VKML).cpu()
    d = torch.randn(1000, device=VKML).cpu()
    assert not torch.equal(c, d)


def test_normal_():
    t = torch.empty(N, device=VKML)
    out = t.normal_(2.0, 3.0)
    assert out is t
    mean, std = _stats(t)
    assert abs(mean - 2.0) < 0.06
    assert abs(std - 3.0) < 0.06


def test_normal_noncontiguous():
    base = torch.zeros(400, 500, device=VKML)
    view = base.t()[::2]
    view.normal_()
    values = base.cpu()
    touched = values.t()[::2]
    assert (values.t()[1::2] == 0).all(), "wrote outside the view"
    mean, std = _stats(touched)
    assert abs(mean) < 0.03 and abs(std - 1.0) < 0.03


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=dtype_id)
def test_uniform_(dtype):
    t = torch.empty(N, dtype=dtype, device=VKML)
    out = t.uniform_(-2.0, 5.0)
    assert out is t
    values = t.cpu()
    assert values.min().item() >= -2.0
    assert values.max().item() < 5.0
    mean, std = _stats(t)
    assert abs(mean - 1.5) < 0.05
    assert abs(std - 7 / math.sqrt(12)) < 0.05


def test_randint_range_and_dtype():
    t = torch.randint(-5, 7, (N,), device=VKML)
    assert t.is_vkml and t.dtype == torch.int64 and t.shape == (N,)
    values = t.cpu()
    assert values.min().item() == -5
    assert values.max().item() == 6
    counts = torch.bincount(values + 5)
    assert counts.numel() == 12
    expected = N / 12
    assert ((counts - expected).abs() < 0.1 * expected).all(), counts


def test_randint_forms():
    t = torch.randint(10, (1000,), device=VKML)
    assert t.dtype == torch.int64
    assert 0 <= t.cpu().min().item() and t.cpu().max().item() < 10
    t32 = torch.randint(0, 3, (2, 500), dtype=torch.int32, device=VKML)
    assert t32.dtype == torch.int32 and t32.shape == (2, 500)
    assert set(t32.cpu().unique().tolist()) == {0, 1, 2}


def test_randint_wide_range():
    low, high = -(2**40), 2**40
    values = torch.randint(low, high, (1000,), device=VKML).cpu()
    assert values.min().item() >= low and values.max().item() < high
    # 64-bit randomness, not just 32 bits: some |values| exceed 2**32
    assert (values.abs() > 2**32).any()


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=dtype_id
)
@pytest.mark.parametrize("call", ["random_()", "random_(0, None)"])
def test_random_spans_the_exact_integers_of_a_float_dtype(dtype, call):
    # [0, 2^digits], as on the CPU: random_(0, None) of float16 drew up to 2^24 (inf),
    # and float64 stopped at 2^24 for both calls.
    top = 2 ** {torch.float16: 11, torch.bfloat16: 8, torch.float32: 24, torch.float64: 53}[dtype]
    t = torch.empty(20000, dtype=dtype, device=VKML)
    values = (t.random_() if call == "random_()" else t.random_(0, None)).cpu().double()
    assert values.min() >= 0 and values.max() <= top and values.max() > top / 2
    assert torch.equal(values, values.round())


# ----------------------------------------------------------- seeding


def _draws():
    return [
        torch.rand(1000, device=VKML).cpu(),
        torch.randn(1000, device=VKML).cpu(),
        torch.randint(0, 100, (1000,), device=VKML).cpu(),
        torch.empty(1000, device=VKML).uniform_(-1, 1).cpu(),
        torch.empty(1000, device=VKML).normal_(0, 2).cpu(),
    ]


@pytest.mark.parametrize("seed_fn", [torch.manual_seed, torch_vkml.manual_seed])
def test_seeding_reproducible(seed_fn):
    seed_fn(7)
    first = _draws()
    seed_fn(7)
    second = _draws()
    seed_fn(8)
    other = _draws()
    for a, b, c in zip(first, second, other, strict=True):
        assert torch.equal(a, b)
        assert not torch.equal(a, c)


def test_device_rng_independent_of_cpu_rng():
    torch.manual_seed(3)
    a = torch.rand(100, device=VKML).cpu()
    torch.manual_seed(3)
    torch.rand(100)  # CPU draws must not advance the vkml generator
    b = torch.rand(100, device=VKML).cpu()
    assert torch.equal(a, b)


def test_rng_state_all_round_trips_as_on_cuda():
    """torch.cuda's get_rng_state_all / set_rng_state_all, which checkpointing code calls
    through torch.get_device_module."""
    module = torch.get_device_module(VKML)
    states = module.get_rng_state_all()
    assert len(states) == torch_vkml.device_count()
    assert all(torch.equal(s, module.get_rng_state(i)) for i, s in enumerate(states))
    a = torch.rand(50, device=VKML).cpu()
    module.set_rng_state_all(states)
    assert torch.equal(torch.rand(50, device=VKML).cpu(), a)


# ------------------------------------- distributions, tensor parameters


def draws(fill):
    torch.manual_seed(0)
    return fill(torch.empty(N_DRAWS, device="vkml")).cpu().double()


def test_exponential():
    x = draws(lambda t: t.exponential_(2.0))
    assert x.min() >= 0
    assert x.mean().item() == pytest.approx(0.5, abs=0.01)
    assert x.std().item() == pytest.approx(0.5, abs=0.01)


def test_log_normal():
    x = draws(lambda t: t.log_normal_(0.3, 0.5))
    assert x.min() > 0
    assert x.log().mean().item() == pytest.approx(0.3, abs=0.01)
    assert x.log().std().item() == pytest.approx(0.5, abs=0.01)


def test_cauchy():
    x = draws(lambda t: t.cauchy_(1.0, 2.0))
    assert x.median().item() == pytest.approx(1.0, abs=0.05)
    # Quartiles of Cauchy(median, sigma) are median -/+ sigma.
    q = torch.quantile(x[:100_000].float(), torch.tensor([0.25, 0.75])).tolist()
    assert q[0] == pytest.approx(-1.0, abs=0.1) and q[1] == pytest.approx(3.0, abs=0.1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_geometric(dtype):
    torch.manual_seed(0)
    x = torch.empty(N_DRAWS, dtype=dtype, device="vkml").geometric_(0.25).cpu().double()
    assert x.min().item() == 1 and torch.equal(x, x.round())
    assert x.mean().item() == pytest.approx(4.0, abs=0.05)  # 1 / p
    assert x.var().item() == pytest.approx(12.0, rel=0.05)  # (1 - p) / p^2


def test_normal_with_tensor_parameters():
    torch.manual_seed(0)
    mean = torch.full((4, N_DRAWS // 4), 5.0, device="vkml")
    std = torch.full((N_DRAWS // 4,), 2.0, device="vkml")
    a = torch.normal(mean, 2.0)
    b = torch.normal(1.0, std)
    c = torch.normal(mean, std)
    assert a.shape == mean.shape and b.shape == std.shape and c.shape == mean.shape
    assert a.is_vkml and c.dtype == torch.float32
    assert a.mean().item() == pytest.approx(5.0, abs=0.03)
    assert b.std().item() == pytest.approx(2.0, abs=0.03)
    assert c.std().item() == pytest.approx(2.0, abs=0.03)


def test_same_seed_same_draws_and_errors():
    first = draws(lambda t: t.exponential_(1.0))
    again = draws(lambda t: t.exponential_(1.0))
    assert torch.equal(first, again)
    t = torch.empty(3, device="vkml")
    for bad in (
        lambda: t.exponential_(0.0),
        lambda: t.cauchy_(0.0, -1.0),
        lambda: t.log_normal_(0.0, 0.0),
        lambda: t.geometric_(1.5),
    ):
        with pytest.raises(RuntimeError):
            bad()
    assert math.isfinite(t.exponential_(1.0).sum().item())


# --------------------------------------------------------------------------
# multinomial, bernoulli with a probability tensor
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_multinomial_with_replacement(dtype):
    torch.manual_seed(0)
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]], dtype=dtype, device="vkml")
    s = torch.multinomial(p, 20000, replacement=True)
    assert s.dtype == torch.int64 and s.shape == (2, 20000) and s.is_vkml
    for row in range(2):
        freq = torch.bincount(s[row].cpu(), minlength=4).double() / 20000
        expected = p[row].cpu().double() / p[row].cpu().double().sum()
        assert torch.allclose(freq, expected, atol=0.02)
        assert freq[p[row].cpu() == 0].sum() == 0  # zero-probability classes never drawn


def test_multinomial_without_replacement():
    torch.manual_seed(0)
    p = torch.tensor([0.05, 0.0, 0.5, 0.2, 0.25], device="vkml")
    s = torch.multinomial(p, 4)
    assert s.shape == (4,) and s.dtype == torch.int64
    assert sorted(s.tolist()) == [0, 2, 3, 4]  # distinct, never the zero class
    firsts = torch.multinomial(p.expand(4000, 5), 1).cpu().flatten()
    freq = torch.bincount(firsts, minlength=5).double() / 4000
    assert torch.allclose(freq, p.cpu().double(), atol=0.03)
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(p, 6)
    with pytest.raises(RuntimeError, match="element < 0"):
        torch.multinomial(torch.tensor([0.5, -0.1], device="vkml"), 1).cpu()  # raised at the read


def test_bernoulli_tensor_p():
    torch.manual_seed(0)
    p = torch.tensor([0.0, 0.25, 0.9, 1.0], device="vkml").expand(20000, 4)
    x = torch.bernoulli(p)
    assert x.dtype == torch.float32 and x.is_vkml
    mean = x.cpu().double().mean(0)
    assert torch.allclose(mean, torch.tensor([0.0, 0.25, 0.9, 1.0], dtype=torch.float64), atol=0.02)
    y = torch.empty(3, 4, dtype=torch.float16, device="vkml").bernoulli_(
        torch.full((4,), 0.5, device="vkml")
    )
    assert set(y.cpu().unique().tolist()) <= {0.0, 1.0}


def test_float64_random_numbers():
    """float64 draws take 53 random bits (uniform) and float64 Box-Muller (normal), as
    the CPU's do; repeatable under a seed; devices without float64 say so."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        with pytest.raises(NotImplementedError, match="float64"):
            torch.rand(4, dtype=torch.float64, device=VKML)
        return
    torch.manual_seed(5)
    u = torch.rand(400000, dtype=torch.float64, device=VKML).cpu()
    torch.manual_seed(5)
    assert torch.equal(torch.rand(400000, dtype=torch.float64, device=VKML).cpu(), u)
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean().item() - 0.5) < 3e-3
    # Finer than float32's 2^-24 grid: 53-bit values.
    assert (u * 2**24 % 1 != 0).float().mean() > 0.99 and bool((u * 2**53 % 1 == 0).all())
    n = torch.randn(400000, dtype=torch.float64, device=VKML).cpu()
    assert abs(n.mean().item()) < 8e-3 and abs(n.std().item() - 1) < 8e-3
    assert abs((n**4).mean().item() - 3) < 0.06  # normal, not merely unit variance
    x = torch.empty(100000, dtype=torch.float64, device=VKML).uniform_(-2.0, 1e-3).cpu()
    assert -2.0 <= x.min() and x.max() < 1e-3 and abs(x.mean().item() + 0.9995) < 0.02
    y = torch.empty(100000, dtype=torch.float64, device=VKML).normal_(3.0, 0.5).cpu()
    assert abs(y.mean().item() - 3) < 0.01 and abs(y.std().item() - 0.5) < 0.01
    r = torch.randint(-3, 7, (1000,), dtype=torch.float64, device=VKML).cpu()
    assert set(r.tolist()) == set(range(-3, 7))
    b = torch.bernoulli(torch.full((20000,), 0.25, dtype=torch.float64, device=VKML)).cpu()
    assert set(b.unique().tolist()) == {0.0, 1.0} and abs(b.mean().item() - 0.25) < 0.02


def test_randn_draws_no_exact_zero():
    """Box-Muller's first uniform lies in (0, 1), never 1: a draw of exactly 0 (one in
    2^24 before) made torch.distributions.LKJCholesky, which divides draws by their
    norm, return NaN rows. Under this seed the old kernel drew one zero."""
    torch.manual_seed(3)
    x = torch.randn(1 << 22, device=VKML)
    assert (x == 0).sum().item() == 0
    assert abs(x.abs().min().item()) > 0


# --------------------------------------------------------------------------
# torch.distributions' samplers: Gamma, Poisson, Binomial, Dirichlet (and Beta), the
# Gamma sample's gradient. Each is checked against the CPU's sampler by the two-sample
# Kolmogorov-Smirnov statistic over N_SAMPLER draws each: under the same law it
# exceeds 1.95 / sqrt(N / 2) with probability 1e-3 (the seeds are fixed, so the test
# is deterministic; the bound says how unlikely a failure of a right sampler is). A
# wrong law shows far above: Gamma(2.5) against Gamma(2.45) gives 0.013.
# --------------------------------------------------------------------------

N_SAMPLER = 100_000
KS_BOUND = 1.95 / math.sqrt(N_SAMPLER / 2)


def _ks(a, b):
    """The two-sample Kolmogorov-Smirnov statistic of two 1-D samples (ties included)."""
    a, b = a.double().sort().values, b.double().sort().values
    points = torch.cat([a, b])
    fa = torch.searchsorted(a, points, right=True).double() / a.numel()
    fb = torch.searchsorted(b, points, right=True).double() / b.numel()
    return (fa - fb).abs().max().item()


def _same_law(sample_vk, sample_cpu):
    assert sample_vk.is_vkml and sample_vk.dtype == sample_cpu.dtype
    got = sample_vk.cpu()
    assert bool(torch.isfinite(got).all())
    stat = _ks(got.flatten(), sample_cpu.flatten())
    assert stat < KS_BOUND, f"KS statistic {stat:.4f} >= {KS_BOUND:.4f}"


@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 2.5, 30.0, 1e4])
def test_standard_gamma_follows_the_cpu(alpha):
    torch.manual_seed(0)
    a = torch.full((N_SAMPLER,), alpha)
    _same_law(torch._standard_gamma(a.to(VKML)), torch._standard_gamma(a))


def test_standard_gamma_edges_and_dtypes():
    """As the CPU: alpha <= 0 or NaN gives the smallest normal float, inf gives inf, and
    no sample is below the smallest normal float; float16 and bfloat16 sample as CUDA
    does (in float32); integers raise as the CPU's kernel does."""
    tiny = torch.finfo(torch.float32).tiny
    edge = torch.tensor([0.0, -1.0, float("nan"), float("inf"), 1e-30, 1e-3])
    got = torch._standard_gamma(edge.to(VKML)).cpu()
    assert got[:3].tolist() == [tiny] * 3 and got[3].item() == math.inf
    assert bool((got[4:] >= tiny).all())
    for dtype in (torch.float16, torch.bfloat16):
        x = torch._standard_gamma(torch.full((20000,), 3.0, dtype=dtype, device=VKML))
        assert x.dtype == dtype and abs(x.cpu().double().mean().item() - 3.0) < 0.05
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch._standard_gamma(torch.ones(2, dtype=torch.int64, device=VKML))


def test_standard_gamma_grad_matches_cpu():
    """d x / d alpha of Gamma samples (the implicit reparameterization gradient that
    Gamma/Beta/Dirichlet.rsample backpropagate). The CPU's own approximation is within
    about 2e-4 of the exact value; the kernel's series and continued fraction (and
    Wilson-Hilferty above alpha = 1e5) within about 4e-4 of the CPU's."""
    torch.manual_seed(0)
    alphas = torch.tensor([0.02, 0.3, 1.0, 1.7, 4.0, 10.0, 55.0, 900.0, 3e4, 2e5, 5e6])
    a = alphas.repeat_interleave(400)
    x = torch._standard_gamma(a.double()).float().clamp_min(1e-30)
    want = torch._standard_gamma_grad(a, x)
    got = torch._standard_gamma_grad(a.to(VKML), x.to(VKML))
    torch.testing.assert_close(got.cpu(), want, rtol=1e-3, atol=1e-30)
    zero = torch._standard_gamma_grad(torch.tensor([0.5], device=VKML), torch.zeros(1, device=VKML))
    assert zero.item() == 0.0  # as the CPU


def test_gamma_rsample_gradient_is_native():
    """torch.distributions.Gamma(...).rsample() backward: the mean's gradient in the
    concentration is 1 / rate."""
    torch.manual_seed(0)
    conc = torch.tensor([0.7, 2.0, 40.0], device=VKML, requires_grad=True)
    rate = torch.tensor([1.0, 2.0, 0.5], device=VKML)
    x = torch.distributions.Gamma(conc, rate).rsample((200_000,))
    x.mean(0).sum().backward()
    torch.testing.assert_close(conc.grad.cpu(), 1 / rate.cpu(), rtol=0.02, atol=0)


@pytest.mark.parametrize("rate", [0.3, 4.0, 9.99, 10.0, 57.0, 1e4, 3e7])
def test_poisson_follows_the_cpu(rate):
    """Products of uniforms below a rate of 10, PTRS from 10 up."""
    torch.manual_seed(0)
    r = torch.full((N_SAMPLER,), rate)
    got = torch.poisson(r.to(VKML))
    assert bool((got.cpu() == got.cpu().round()).all())
    _same_law(got, torch.poisson(r))


def test_poisson_edges():
    assert torch.poisson(torch.zeros(5, device=VKML)).cpu().tolist() == [0.0] * 5
    x = torch.poisson(torch.full((20000,), 3.0, dtype=torch.bfloat16, device=VKML))
    assert x.dtype == torch.bfloat16 and abs(x.cpu().double().mean().item() - 3.0) < 0.06
    bad = torch.tensor([1.0, -0.5], device=VKML)
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        torch.poisson(bad).cpu()  # a device value: raised at the read
    assert torch.poisson(torch.ones(3, device=VKML)).cpu().shape == (3,)  # still usable


@pytest.mark.parametrize(
    "count, prob",
    [(10.0, 0.3), (40.0, 0.2), (100.0, 0.5), (1000.0, 0.93), (7.0, 0.99), (1e6, 0.37)],
)
def test_binomial_follows_the_cpu(count, prob):
    """Geometric waiting times below a mean of 10, BTRS from 10 up, and the mirrored
    draw above p = 1/2."""
    torch.manual_seed(0)
    n, p = torch.full((N_SAMPLER,), count), torch.full((N_SAMPLER,), prob)
    got = torch.binomial(n.to(VKML), p.to(VKML))
    values = got.cpu()
    assert bool((values == values.round()).all()) and 0 <= values.min() and values.max() <= count
    _same_law(got, torch.binomial(n, p))


def test_binomial_edges_broadcast_and_errors():
    count = torch.tensor([5.0, 0.0, 7.0, -1.0, 5.0], device=VKML)
    prob = torch.tensor([0.0, 0.5, 1.0, 0.5, 1.5], device=VKML)
    assert torch.binomial(count, prob).cpu().tolist() == [0.0, 0.0, 7.0, 0.0, 5.0]  # as the CPU
    b = torch.binomial(
        torch.tensor([[20.0], [200.0]], device=VKML), torch.full((3,), 0.5, device=VKML)
    )
    assert b.shape == (2, 3)
    with pytest.raises(ValueError, match="floating-point dtypes for count"):
        torch.binomial(torch.ones(2, dtype=torch.int64, device=VKML), torch.ones(2, device=VKML))
    with pytest.raises(RuntimeError, match="expected Float"):
        torch.binomial(torch.ones(2, device=VKML), torch.ones(2, dtype=torch.float64, device=VKML))


def test_dirichlet_and_beta_follow_the_cpu():
    torch.manual_seed(0)
    conc = torch.tensor([0.4, 1.0, 3.5])
    got = torch._sample_dirichlet(conc.to(VKML).expand(N_SAMPLER, 3).contiguous())
    want = torch._sample_dirichlet(conc.expand(N_SAMPLER, 3).contiguous())
    torch.testing.assert_close(got.sum(-1).cpu(), torch.ones(N_SAMPLER), rtol=0, atol=1e-6)
    for k in range(3):
        _same_law(got[:, k], want[:, k])
    beta = torch.distributions.Beta(torch.tensor(0.5, device=VKML), torch.tensor(2.5, device=VKML))
    _same_law(beta.sample((N_SAMPLER,)), torch.distributions.Beta(0.5, 2.5).sample((N_SAMPLER,)))
    tiny = torch._sample_dirichlet(torch.full((4, 2), 1e-4, device=VKML)).cpu()
    assert bool((tiny >= torch.finfo(torch.float32).tiny).all())  # as the CPU's clamp


def _has_fp64():
    return torch_vkml.get_device_properties(0).supports_fp64


F64_SAMPLES = [
    ("gamma", 1e-3),  # most samples below float32's smallest normal
    ("gamma", 0.5),
    ("gamma", 30.0),
    ("poisson", 4.0),
    ("poisson", 57.0),
    ("poisson", 1e12),  # counts past 2^24
    ("binomial", (40.0, 0.2)),
    ("binomial", (1000.0, 0.93)),
    ("binomial", (1e12, 0.25)),
]


@pytest.mark.parametrize("kind, param", F64_SAMPLES, ids=str)
def test_float64_samplers_follow_the_cpu(kind, param):
    """float64 samples are drawn in double on the device (53-bit uniforms, double
    math), as the CPU's are: the same law as the CPU's float64 sampler, including what
    float32 cannot hold (Gamma(1e-3) samples near 1e-300, counts near 1e12)."""
    if not _has_fp64():
        return  # test_float64_samplers_without_device_float64 covers such devices
    torch.manual_seed(0)

    def draw(device):
        if kind == "binomial":
            n, p = (torch.full((N_SAMPLER,), v, dtype=torch.float64) for v in param)
            return torch.binomial(n.to(device), p.to(device))
        a = torch.full((N_SAMPLER,), param, dtype=torch.float64).to(device)
        return torch._standard_gamma(a) if kind == "gamma" else torch.poisson(a)

    got = draw(VKML)
    if kind != "gamma":
        assert bool((got.cpu() == got.cpu().round()).all())
    _same_law(got, draw("cpu"))


def test_float64_dirichlet_follows_the_cpu():
    if not _has_fp64():
        return
    torch.manual_seed(0)
    conc = torch.tensor([0.4, 1.0, 3.5], dtype=torch.float64)
    got = torch._sample_dirichlet(conc.to(VKML).expand(N_SAMPLER, 3).contiguous())
    want = torch._sample_dirichlet(conc.expand(N_SAMPLER, 3).contiguous())
    ones = torch.ones(N_SAMPLER, dtype=torch.float64)
    torch.testing.assert_close(got.sum(-1).cpu(), ones, rtol=0, atol=1e-15)
    for k in range(3):
        _same_law(got[:, k], want[:, k])
    tiny = torch._sample_dirichlet(torch.full((4, 2), 1e-4, dtype=torch.float64, device=VKML))
    assert bool((tiny.cpu() >= torch.finfo(torch.float64).tiny).all())  # as the CPU's clamp


def _gamma_sample_grad_mp(alpha, x):
    """-(d P(alpha, x) / d alpha) / density(x) by mpmath at 30 digits."""
    import mpmath as mp

    with mp.workdps(30):
        a, x = mp.mpf(alpha), mp.mpf(x)
        d_cdf = mp.diff(lambda s: mp.gammainc(s, 0, x, regularized=True), a)
        return float(-d_cdf / mp.exp((a - 1) * mp.log(x) - x - mp.loggamma(a)))


def _beta_sample_grad_mp(x, alpha, beta):
    """-(d I_x(alpha, beta) / d alpha) / density / (1 - x) by mpmath at 30 digits."""
    import mpmath as mp

    with mp.workdps(30):
        x, a, b = mp.mpf(x), mp.mpf(alpha), mp.mpf(beta)
        d_cdf = mp.diff(lambda s: mp.betainc(s, b, 0, x, regularized=True), a)
        log_density = (a - 1) * mp.log(x) + (b - 1) * mp.log1p(-x) - mp.log(mp.beta(a, b))
        return float(-d_cdf / mp.exp(log_density) / (1 - x))


def test_float64_sample_gradients_are_exact():
    """The float64 reparameterization gradients of Gamma and Beta samples (the series
    and continued fractions carried to double's epsilon) against 30-digit values: within
    1e-13 where the CPU's approximations are off by up to 1e-4 (Gamma) and 7e-4 (Beta)."""
    if not _has_fp64():
        return
    torch.manual_seed(0)
    alphas = [0.02, 0.3, 1.0, 1.7, 4.0, 10.0, 55.0, 900.0, 3e4, 2e5, 1e6]
    a = torch.tensor(alphas, dtype=torch.float64).repeat_interleave(3)
    x = torch._standard_gamma(a)
    got = torch._standard_gamma_grad(a.to(VKML), x.to(VKML)).cpu()
    exact = [_gamma_sample_grad_mp(*ax) for ax in zip(a.tolist(), x.tolist(), strict=True)]
    torch.testing.assert_close(got, torch.tensor(exact, dtype=torch.float64), rtol=1e-13, atol=0)
    # Wilson-Hilferty from 4e6: within ~1e-2 / alpha, as close to the CPU's saddle point.
    big = torch.tensor([4.1e6, 5e7, 1e12], dtype=torch.float64).repeat_interleave(50)
    xb = torch._standard_gamma(big)
    got_big = torch._standard_gamma_grad(big.to(VKML), xb.to(VKML)).cpu()
    torch.testing.assert_close(got_big, torch._standard_gamma_grad(big, xb), rtol=1e-8, atol=0)

    cases = [(0.1, 0.4), (0.5, 2.5), (1.0, 2.0), (3.0, 0.5), (20.0, 20.0), (2.0, 1e3)]
    alpha = torch.tensor([c[0] for c in cases], dtype=torch.float64).repeat_interleave(3)
    beta = torch.tensor([c[1] for c in cases], dtype=torch.float64).repeat_interleave(3)
    xs = torch.distributions.Beta(alpha, beta).sample().clamp(1e-12, 1 - 1e-12)
    got = torch._dirichlet_grad(xs.to(VKML), alpha.to(VKML), (alpha + beta).to(VKML)).cpu()
    exact = [
        _beta_sample_grad_mp(*c)
        for c in zip(xs.tolist(), alpha.tolist(), beta.tolist(), strict=True)
    ]
    torch.testing.assert_close(got, torch.tensor(exact, dtype=torch.float64), rtol=1e-13, atol=0)


def test_float64_samplers_without_device_float64():
    """A device without float64 arithmetic (TORCH_VKML_NO_FP64=1, as many Intel and
    mobile GPUs) has no float64 sampling kernel: the CPU's, counted, on vkml tensors."""
    run = run_python(
        """
        import torch, torch_vkml
        c = torch.full((1000,), 2.0, dtype=torch.float64)
        a, a5, a_4, a2 = (t.to("vkml") for t in (c, c * 5, c / 4, c * 2))  # no math there
        outs = [
            torch._standard_gamma(a),
            torch.poisson(a),
            torch.binomial(a5, a_4),
            torch._sample_dirichlet(a.view(500, 2)),
            torch._standard_gamma_grad(a, a),
            torch._dirichlet_grad(a_4, a, a2),
        ]
        assert all(o.dtype == torch.float64 and o.is_vkml for o in outs)
        assert abs(outs[0].cpu().mean().item() - 2.0) < 0.3
        print(sorted(torch_vkml.fallback_counts()))
        """,
        env={"TORCH_VKML_NO_FP64": "1"},
    )
    assert run.returncode == 0, describe(run)
    counted = set(eval(run.stdout.strip().splitlines()[-1]))
    assert {"aten::_standard_gamma", "aten::poisson", "aten::binomial"} <= counted
    assert {"aten::_dirichlet_grad", "aten::_standard_gamma_grad"} <= counted


def _beta_sample_grad_exact(x, alpha, beta):
    """-(d I_x(alpha, beta) / d alpha) / density / (1 - x) in float64 from SciPy's
    regularized incomplete beta function, by central differences."""
    from scipy import special

    h = 1e-6 * max(alpha, 1.0)
    d_cdf = (special.betainc(alpha + h, beta, x) - special.betainc(alpha - h, beta, x)) / (2 * h)
    log_density = (
        (alpha - 1) * math.log(x) + (beta - 1) * math.log1p(-x) - special.betaln(alpha, beta)
    )
    return -d_cdf / math.exp(log_density) / (1 - x)


def test_dirichlet_grad_matches_the_exact_value():
    """torch._dirichlet_grad (Dirichlet and Beta rsample's backward) against the exact
    derivative: the kernel's continued fraction is within 1e-3 of it everywhere here,
    and within 6e-5 but at (1e4, 3e4). The CPU's approximation is 3e-3 off at
    (2, 1000), so the CPU comparison allows 5e-3."""
    torch.manual_seed(0)
    cases = [(0.1, 0.4), (0.5, 2.5), (1.0, 2.0), (3.0, 0.5), (20.0, 20.0), (2.0, 1e3), (1e4, 3e4)]
    xs, alphas, totals = [], [], []
    for alpha, beta in cases:
        x = torch.distributions.Beta(alpha, beta).sample((40,)).double().clamp(1e-6, 1 - 1e-6)
        xs.append(x.float())
        alphas.append(torch.full((40,), alpha))
        totals.append(torch.full((40,), alpha + beta))
    x, alpha, total = torch.cat(xs), torch.cat(alphas), torch.cat(totals)
    got = torch._dirichlet_grad(x.to(VKML), alpha.to(VKML), total.to(VKML)).cpu()
    exact = torch.tensor(
        [
            _beta_sample_grad_exact(xv, a, t - a)
            for xv, a, t in zip(x.double().tolist(), alpha.tolist(), total.tolist(), strict=True)
        ]
    )
    torch.testing.assert_close(got.double(), exact, rtol=1e-3, atol=0)
    torch.testing.assert_close(got, torch._dirichlet_grad(x, alpha, total), rtol=5e-3, atol=0)
    # x = 1 (a float32 Dirichlet component whose others underflowed) and x = 0, as the CPU
    edge = torch._dirichlet_grad(
        torch.tensor([1.0, 0.0], device=VKML),
        torch.tensor([1.0, 1.0], device=VKML),
        torch.tensor([3.0, 3.0], device=VKML),
    )
    assert edge.cpu().tolist() == pytest.approx([0.75, 0.0], abs=1e-6)


def test_beta_and_dirichlet_rsample_gradients_are_native():
    """Beta(a, b).rsample() backward: d E[x] / d a = b / (a + b)^2."""
    torch.manual_seed(0)
    a = torch.tensor([0.8, 3.0], device=VKML, requires_grad=True)
    b = torch.tensor([2.0, 1.5], device=VKML, requires_grad=True)
    x = torch.distributions.Beta(a, b).rsample((200_000,))
    x.mean(0).sum().backward()
    a_, b_ = a.detach().cpu(), b.detach().cpu()
    torch.testing.assert_close(a.grad.cpu(), b_ / (a_ + b_) ** 2, rtol=0.03, atol=0)
    torch.testing.assert_close(b.grad.cpu(), -a_ / (a_ + b_) ** 2, rtol=0.03, atol=0)


def test_draws_into_an_expanded_tensor_raise_as_on_the_cpu():
    """One draw per element into a tensor whose elements share memory: the CPU raises
    (PyTorch's test_torch.py bernoulli/masked_scatter mem_overlap); vkml wrote."""
    fills = (
        lambda t: t.bernoulli_(0.5),
        lambda t: t.bernoulli_(torch.full((6,), 0.5, device=t.device)),
        lambda t: t.uniform_(),
        lambda t: t.normal_(),
        lambda t: t.masked_scatter_(
            torch.ones(6, dtype=torch.bool, device=t.device), torch.ones(6, device=t.device)
        ),
    )
    for device in ("cpu", "vkml"):
        x = torch.zeros(1, device=device).expand(6)
        for fill in fills:
            with pytest.raises(RuntimeError, match="unsupported operation"):
                fill(x)


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64], ids=str)
def test_randint_of_unsigned_dtypes(dtype):
    # make_tensor draws uint16/32/64 inputs with randint; it raised NotImplementedError.
    t = torch.randint(3, 1000, (4096,), dtype=dtype, device=VKML)
    assert t.dtype == dtype and t.device.type == "vkml"
    v = t.cpu().long()
    assert v.min() >= 3 and v.max() < 1000 and v.unique().numel() > 900
    r = torch.empty(4096, dtype=dtype, device=VKML).random_(5, 9).cpu().long()
    assert set(r.tolist()) == {5, 6, 7, 8}
    with pytest.raises(RuntimeError, match="from is out of bounds for"):
        torch.empty(4, dtype=dtype, device=VKML).random_(-1, 9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.int64], ids=str)
def test_fills_of_many_dims(dtype):
    # The draws fill memory in order; a 14-dim tensor (15 as complex pairs) raised.
    t = torch.empty([1] * 12 + [40, 50], dtype=dtype, device=VKML)
    if dtype.is_floating_point or dtype.is_complex:
        t.uniform_(2, 3)
        v = torch.view_as_real(t.cpu()) if dtype.is_complex else t.cpu()
        assert v.min() >= 2 and v.max() < 3 and v.std() > 0.2
    else:
        t.random_(0, 7)
        assert set(t.cpu().flatten().tolist()) == set(range(7))
