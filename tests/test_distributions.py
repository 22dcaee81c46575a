"""In-place distributions and normal() with tensor parameters on vkml: statistics over
200k draws (tolerances ~5 standard errors), dtypes, shapes, seeding and bad arguments."""

import math

import pytest
import torch

pytestmark = pytest.mark.usefixtures("no_fallback")

N = 200_000


def draws(fill):
    torch.manual_seed(0)
    return fill(torch.empty(N, device="vkml")).cpu().double()


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
    x = torch.empty(N, dtype=dtype, device="vkml").geometric_(0.25).cpu().double()
    assert x.min().item() == 1 and torch.equal(x, x.round())
    assert x.mean().item() == pytest.approx(4.0, abs=0.05)  # 1 / p
    assert x.var().item() == pytest.approx(12.0, rel=0.05)  # (1 - p) / p^2


def test_normal_with_tensor_parameters():
    torch.manual_seed(0)
    mean = torch.full((4, N // 4), 5.0, device="vkml")
    std = torch.full((N // 4,), 2.0, device="vkml")
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
