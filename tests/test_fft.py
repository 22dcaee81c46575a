"""torch.fft, torch.stft and torch.istft on vkml, through VkFFT.

Every torch.fft function reduces to ATen's _fft_c2c / _fft_r2c / _fft_c2r, which run
natively (csrc/aten/ops_fft.cpp); each result and gradient is compared with the same
call on the CPU (pocketfft), relative to the result's largest magnitude: 2e-5 in
float32 (an FFT's rounding error grows with log n), 1e-10 in float64. Every test also
asserts that nothing ran on the CPU fallback.
"""

import pytest
import torch
from conftest import VKML

import torch_vkml

pytestmark = pytest.mark.skipif(
    not torch_vkml._C._fft_available(), reason="built without VkFFT (libvkfft-dev)"
)

F32_TOL = 2e-5
F64_TOL = 1e-10


def _signal(shape, dtype=torch.complex64, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        real = torch.float64 if dtype == torch.complex128 else torch.float32
        return torch.complex(
            torch.randn(shape, generator=g, dtype=real), torch.randn(shape, generator=g, dtype=real)
        )
    return torch.randn(shape, generator=g, dtype=dtype)


def _same(got, ref, tol=None):
    assert got.device.type == "vkml"
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.shape)
    if tol is None:
        tol = F64_TOL if ref.dtype in (torch.float64, torch.complex128) else F32_TOL
    scale = max(ref.abs().max().item(), 1e-30)
    err = (got.cpu() - ref).abs().max().item() / scale
    assert err <= tol, f"max error {err:.2e} of the largest magnitude (tolerance {tol:.0e})"


def _check(fn, x, tol=None):
    _same(fn(x.to(VKML)), fn(x), tol)


@pytest.fixture(autouse=True)
def _no_fallback():
    torch_vkml.reset_fallback_counts()
    yield
    assert torch_vkml.fallback_counts() == {}, torch_vkml.fallback_counts()


NORMS = [None, "forward", "ortho"]
C2C = [torch.fft.fft, torch.fft.ifft]
R2C = [torch.fft.rfft, torch.fft.ihfft]
C2R = [torch.fft.irfft, torch.fft.hfft]


# Powers of two, smooth lengths (radix 3, 5, 7, 11, 13 kernels), primes and lengths with
# a prime factor over 13 (VkFFT's Bluestein algorithm), and the trivial one.
# 4099 and 8191 are also odd lengths VkFFT 1.2.26 has no real transforms for (they
# take it more than one pass): those run as complex ones.
SIZES = [1, 2, 8, 12, 30, 64, 100, 17, 97, 255, 1000, 1024, 4099, 8191]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("fn", C2C + R2C + C2R, ids=lambda f: f.__name__)
def test_one_dimensional_sizes(fn, n):
    if fn in C2R:  # n real points out of a onesided spectrum
        _check(lambda t: fn(t, n=n), _signal((3, n // 2 + 1)))
    else:
        _check(fn, _signal((3, n), torch.complex64 if fn in C2C else torch.float32))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(
    "fn",
    [
        torch.fft.fft,
        torch.fft.ifft,
        torch.fft.rfft,
        torch.fft.irfft,
        torch.fft.hfft,
        torch.fft.ihfft,
        torch.fft.fft2,
        torch.fft.ifft2,
        torch.fft.rfft2,
        torch.fft.irfft2,
        torch.fft.hfft2,
        torch.fft.ihfft2,
        torch.fft.fftn,
        torch.fft.ifftn,
        torch.fft.rfftn,
        torch.fft.irfftn,
        torch.fft.hfftn,
        torch.fft.ihfftn,
    ],
    ids=lambda f: f.__name__,
)
def test_every_function_and_norm(fn, norm):
    real_in = fn.__name__.removeprefix("fft_").startswith(("rfft", "ihfft"))
    x = _signal((2, 6, 10), torch.float32 if real_in else torch.complex64)
    _check(lambda t: fn(t, norm=norm), x)


def test_lengths_dims_and_padding():
    x = _signal((4, 5, 6, 7))
    r = _signal((4, 5, 6, 7), torch.float32)
    _check(lambda t: torch.fft.fft(t, n=16, dim=1), x)  # zero-padded
    _check(lambda t: torch.fft.fft(t, n=3, dim=-1), x)  # truncated
    _check(lambda t: torch.fft.fft2(t, dim=(0, 2)), x)  # not the last dims
    _check(lambda t: torch.fft.fftn(t, dim=(2, 0)), x)  # out of order
    _check(lambda t: torch.fft.rfftn(t, s=(8, 9), dim=(1, 3)), r)
    _check(lambda t: torch.fft.irfftn(t, s=(4, 11), dim=(0, 2)), x)
    _check(lambda t: torch.fft.irfft(t, n=9), x)  # odd output length


def test_more_than_three_dimensions():
    # VkFFT transforms three dimensions per call: four and five go in groups.
    x = _signal((2, 3, 4, 5, 6))
    r = _signal((2, 3, 4, 5, 6), torch.float32)
    _check(torch.fft.fftn, x)
    _check(torch.fft.ifftn, x)
    _check(torch.fft.rfftn, r)
    _check(torch.fft.irfftn, x)
    _check(lambda t: torch.fft.fftn(t, dim=(0, 1, 3, 4)), x)


def test_strided_and_conjugated_inputs():
    x = _signal((6, 8, 10))
    _check(lambda t: torch.fft.fft(t.transpose(0, 2)), x)
    _check(lambda t: torch.fft.fft(t[:, ::2, 1::3]), x)
    _check(lambda t: torch.fft.fft2(t.conj()), x)
    _check(lambda t: torch.fft.ifft(torch.view_as_complex(torch.view_as_real(t)[..., :5, :])), x)
    r = _signal((8, 12), torch.float32)
    _check(lambda t: torch.fft.rfft(t.t()), r)
    _check(lambda t: torch.fft.rfft(t[:, 1::2]), r)


def test_spectra_that_are_not_hermitian():
    # The inverse real transforms read a spectrum as if the imaginary parts of its zero
    # and Nyquist bins were zero (and, in several dimensions, its other hermitian
    # redundancy did not exist), as PyTorch's CPU and CUDA read it. Even batches used to
    # differ: VkFFT merges two real signals into one complex transform.
    for batch in (1, 2, 5, 144):
        x = _signal((batch, 5))
        _check(lambda t: torch.fft.irfft(t, n=8), x)
        _check(lambda t: torch.fft.irfft(t, n=9), x)
    _check(torch.fft.irfft2, _signal((2, 6, 5)))


def test_double_precision():
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.skip("the device has no float64")
    x = _signal((3, 12, 17), torch.complex128)
    r = _signal((3, 12, 17), torch.float64)
    _check(torch.fft.fftn, x)
    _check(torch.fft.rfft2, r)
    _check(torch.fft.irfft, x)


def test_results_are_usable_tensors():
    x = _signal((3, 16)).to(VKML)
    y = torch.fft.fft(x, dim=0)
    assert y.device.type == "vkml" and y.dtype == torch.complex64
    z = y.reshape(-1) * 2  # a permuted result still reshapes, indexes and computes
    _same(z, torch.fft.fft(x.cpu(), dim=0).reshape(-1) * 2)
    out = torch.empty(3, 16, dtype=torch.complex64, device=VKML)
    torch.fft.fft(x, out=out)
    _same(out, torch.fft.fft(x.cpu()))
    assert torch.fft.fft(torch.empty(0, 4, dtype=torch.complex64, device=VKML)).shape == (0, 4)


GRADIENT_CASES = {
    "fft": (torch.fft.fft, False),
    "ifft": (torch.fft.ifft, False),
    "rfft": (torch.fft.rfft, True),
    "irfft": (torch.fft.irfft, False),
    "hfft": (torch.fft.hfft, False),
    "ihfft": (torch.fft.ihfft, True),
    "fft2": (torch.fft.fft2, False),
    "rfft2": (torch.fft.rfft2, True),
    "irfft2": (torch.fft.irfft2, False),
    "fftn": (torch.fft.fftn, False),
    "rfftn_ortho": (lambda t: torch.fft.rfftn(t, norm="ortho"), True),
    "irfft_n11_forward": (lambda t: torch.fft.irfft(t, n=11, norm="forward"), False),
}


@pytest.mark.parametrize("case", GRADIENT_CASES)
def test_gradients(case):
    fn, real_in = GRADIENT_CASES[case]
    base = _signal((3, 6, 8), torch.float32 if real_in else torch.complex64, seed=1)
    a = base.clone().requires_grad_()
    b = base.to(VKML).requires_grad_()
    ya, yb = fn(a), fn(b)
    _same(yb, ya.detach())
    g = _signal(ya.shape, ya.dtype, seed=2)
    ya.backward(g)
    yb.backward(g.to(VKML))
    _same(b.grad, a.grad)


def test_stft_istft_round_trip():
    x = _signal((2, 4000), torch.float32)
    w = torch.hann_window(256)
    kw = dict(n_fft=256, hop_length=64, return_complex=True)
    spec = torch.stft(x, window=w, **kw)
    spec_v = torch.stft(x.to(VKML), window=w.to(VKML), **kw)
    _same(spec_v, spec)
    # A mask in the frequency domain, then back to a waveform.
    mask = (torch.arange(spec.shape[-2]) < 60).to(torch.float32)[:, None]
    y = torch.istft(spec * mask, 256, hop_length=64, window=w, length=4000)
    y_v = torch.istft(spec_v * mask.to(VKML), 256, hop_length=64, window=w.to(VKML), length=4000)
    _same(y_v, y)
    # Unmasked, the round trip gives the signal back.
    back = torch.istft(spec_v, 256, hop_length=64, window=w.to(VKML), length=4000)
    _same(back, x, tol=1e-5)


def test_stft_variants_and_gradient():
    x = _signal((3000,), torch.float32)
    w = torch.hamming_window(200)
    for kw in (
        dict(n_fft=200, hop_length=50, window=w, center=False),
        dict(n_fft=256, hop_length=100, win_length=200, window=w, normalized=True),
        dict(n_fft=128, onesided=False),
    ):
        cpu = torch.stft(x, return_complex=True, **kw)
        kv = {k: (v.to(VKML) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
        _same(torch.stft(x.to(VKML), return_complex=True, **kv), cpu)
    a = x.clone().requires_grad_()
    b = x.to(VKML).requires_grad_()
    torch.stft(a, 256, window=torch.hann_window(256), return_complex=True).abs().sum().backward()
    torch.stft(
        b, 256, window=torch.hann_window(256, device=VKML), return_complex=True
    ).abs().sum().backward()
    _same(b.grad, a.grad, tol=1e-4)


def test_helpers_run_natively():
    x = torch.arange(10.0)
    _check(torch.fft.fftshift, x)
    _check(torch.fft.ifftshift, x)
    _same(torch.fft.fftfreq(9, d=0.5, device=VKML), torch.fft.fftfreq(9, d=0.5))
    _same(torch.fft.rfftfreq(8, device=VKML), torch.fft.rfftfreq(8))


def test_plan_cache():
    cache = torch_vkml.fft_plan_cache
    x = _signal((4, 48)).to(VKML)
    cache.clear()
    assert cache.size == 0
    torch.fft.fft(x)
    torch.fft.fft(x)  # the same plan again
    assert cache.size == 1
    torch.fft.ifft(x)
    assert cache.size == 2
    saved = cache.max_size
    assert saved == 4096  # cuFFT's default in PyTorch
    try:
        cache.max_size = 1
        assert cache.size == 1
        for n in (10, 11, 12):
            _same(torch.fft.fft(x[:, :n]), torch.fft.fft(x[:, :n].cpu()))
            assert cache.size == 1
        cache.max_size = 0  # nothing kept: each transform plans anew, still correct
        _same(torch.fft.fft(x), torch.fft.fft(x.cpu()))
        assert cache.size == 0
        with pytest.raises(ValueError):
            cache.max_size = -1
    finally:
        cache.max_size = saved
    assert torch_vkml.fft_plan_cache[0].max_size == saved
    before = torch_vkml.memory_allocated()
    cache.clear()  # the plans and their working buffer go back to the allocator
    assert cache.size == 0
    assert torch_vkml.memory_allocated() < before
    _same(torch.fft.fft(x), torch.fft.fft(x.cpu()))  # a cleared cache plans again


def test_growing_sizes_replace_the_working_buffer():
    # All plans share one working buffer; a larger transform replaces it and the plans
    # bound to the old one are rebuilt on their next use, with the same results.
    torch_vkml.fft_plan_cache.clear()
    small = _signal((2, 64))
    _check(torch.fft.fft, small)
    _check(torch.fft.fft, _signal((64, 1024)))
    _check(torch.fft.fft, small)
    _check(torch.fft.rfft, _signal((16, 4096), torch.float32))


def test_many_transforms_queue_without_waiting():
    # A loop of transforms through one plan: each call reuses the plan's buffers while
    # earlier ones may still run; the stream orders them.
    x = _signal((8, 256)).to(VKML)
    outs = [torch.fft.fft(x * k) for k in range(1, 20)]
    ref = torch.fft.fft(x.cpu())
    for k, y in enumerate(outs, start=1):
        _same(y, ref * k)


def test_errors_match_the_cpu():
    x = _signal((4, 8))
    for fn in (
        lambda t: torch.fft.fft(t, n=0),
        lambda t: torch.fft.fft(t, dim=2),
        lambda t: torch.fft.fft(t, norm="bogus"),
        lambda t: torch.fft.irfft(t, n=-1),
        lambda t: torch.fft.rfft(t),  # complex input to a real transform
    ):
        with pytest.raises(Exception) as cpu:
            fn(x)
        with pytest.raises(cpu.type):
            fn(x.to(VKML))
