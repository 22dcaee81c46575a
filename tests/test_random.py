"""Random numbers on vkml (ops_random.cpp): rand, randn, randint and the in-place
distributions, normal() with tensor parameters, multinomial and bernoulli: statistics over
100k / 200k draws (tolerances ~5 standard errors), dtypes, shapes, seeding and bad
arguments."""

import math

import pytest
import torch
from conftest import VKML, dtype_id

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
