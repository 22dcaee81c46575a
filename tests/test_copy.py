"""Copies between host and device, within the device, and dtype conversions."""

import pytest
import torch
from conftest import VKML, assert_close_to_cpu, assert_same, dtype_id, make, run_python

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

COPY_DTYPES = [
    torch.float32,
    torch.float16,
    torch.int64,
    torch.int32,
    torch.bool,
    torch.uint8,
]
SIZES = [0, 1, 3, 1000]


def _special_values(dtype):
    """Values that a lossy or 32-bit round trip would destroy."""
    if dtype == torch.float32:
        return [float("nan"), float("inf"), float("-inf"), -0.0, 1e-40, 3.4e38]
    if dtype == torch.float16:
        return [float("nan"), float("inf"), -0.0, 6e-8, 65504.0]
    if dtype == torch.float64:
        return [float("nan"), -0.0, 1e-300, 1.0 + 2**-52]
    if dtype == torch.int64:
        return [2**62 + 3, -(2**63), 2**32 + 1, -1]
    if dtype == torch.int32:
        return [2**31 - 1, -(2**31), -1]
    if dtype == torch.uint8:
        return [255, 128, 0]
    return [True, False]


def _data(size, dtype):
    t = make(size, dtype)
    special = torch.tensor(_special_values(dtype), dtype=dtype)
    n = min(size, special.numel())
    t[:n] = special[:n]
    return t


def _assert_bitwise_equal(actual, expected):
    assert actual.device.type == "cpu"
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if expected.dtype.is_floating_point:
        # compare bit patterns: keeps NaN payload-agnostic equality and -0.0
        assert torch.equal(torch.isnan(actual), torch.isnan(expected))
        mask = ~torch.isnan(expected)
        assert torch.equal(actual[mask], expected[mask])
        assert torch.equal(torch.signbit(actual[mask]), torch.signbit(expected[mask]))
    else:
        assert torch.equal(actual, expected)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", COPY_DTYPES + [torch.float64], ids=dtype_id)
def test_host_device_round_trip(dtype, size):
    cpu = _data(size, dtype)
    vk = cpu.to(VKML)
    assert vk.is_vkml and vk.dtype == dtype and vk.shape == cpu.shape
    _assert_bitwise_equal(vk.cpu(), cpu)
    _assert_bitwise_equal(vk.to("cpu"), cpu)
    out = torch.empty_like(cpu)
    out.copy_(vk)
    _assert_bitwise_equal(out, cpu)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", COPY_DTYPES, ids=dtype_id)
def test_device_to_device(dtype, size):
    cpu = _data(size, dtype)
    vk = cpu.to(VKML)
    clone = vk.clone()
    dst = torch.empty(size, dtype=dtype, device=VKML)
    assert dst.copy_(vk) is dst
    for copy in (clone, dst, vk.to(VKML, copy=True)):
        assert copy.is_vkml
        _assert_bitwise_equal(copy.cpu(), cpu)
    # copies are independent of their source
    clone.zero_()
    _assert_bitwise_equal(vk.cpu(), cpu)


def test_copy_into_existing_device_tensor_from_host():
    dst = torch.zeros(3, 4, device=VKML)
    src = make((3, 4))
    dst.copy_(src)
    assert torch.equal(dst.cpu(), src)


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.t(),
        lambda t: t[::2, 1::3],
        lambda t: t[1:, 2:5],
        lambda t: t.unsqueeze(0).expand(2, 6, 8),
        lambda t: t[:, 4],
        lambda t: t.reshape(2, 3, 8).permute(2, 0, 1),
    ],
    ids=["transposed", "stepped", "offset", "expanded", "column", "permuted"],
)
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.int64, torch.bool], ids=dtype_id
)
def test_noncontiguous_source(view, dtype):
    base = make((6, 8), dtype)
    # device -> host and device -> device from a strided view
    assert_close_to_cpu(lambda t: view(t).contiguous(), base)
    assert_close_to_cpu(lambda t: view(t).clone(), base)
    assert_close_to_cpu(view, base)
    # host -> device from a strided CPU view
    moved = view(base).to(VKML)
    assert torch.equal(moved.cpu(), view(base))


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.t(),
        lambda t: t[::2, 1::3],
        lambda t: t[1:, 2:5],
        lambda t: t[:, 4],
    ],
    ids=["transposed", "stepped", "offset", "column"],
)
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.int64, torch.uint8], ids=dtype_id
)
@pytest.mark.parametrize("source", ["host", "device"])
def test_noncontiguous_destination(view, dtype, source):
    base_cpu = torch.zeros(6, 8, dtype=dtype)
    base_vk = base_cpu.to(VKML)
    src = make(view(base_cpu).shape, dtype)
    view(base_cpu).copy_(src)
    view(base_vk).copy_(src if source == "host" else src.to(VKML))
    # everything outside the view must still be zero
    assert torch.equal(base_vk.cpu(), base_cpu)


def test_device_to_noncontiguous_host():
    src = make((6, 8))
    dst = torch.zeros(8, 6).t()
    dst.copy_(src.to(VKML))
    assert torch.equal(dst, src)


def test_copy_broadcasts_source():
    dst = torch.zeros(3, 4, device=VKML)
    row = make((4,))
    dst.copy_(row.to(VKML))
    assert torch.equal(dst.cpu(), row.expand(3, 4))
    dst.copy_(torch.tensor(2.5))  # 0-dim CPU source
    assert torch.equal(dst.cpu(), torch.full((3, 4), 2.5))


@pytest.mark.parametrize(
    "dtype", [torch.uint8, torch.bool, torch.float16, torch.int32], ids=dtype_id
)
@pytest.mark.parametrize("start, length", [(1, 1), (3, 3), (5, 7), (2, 9)])
def test_unaligned_offsets(dtype, start, length):
    # Sub-word element sizes at odd offsets must not clobber neighbours.
    cpu = make(20, dtype)
    vk = cpu.to(VKML)
    region = slice(start, start + length)
    src = make(length, dtype)
    cpu[region] = src
    vk[region].copy_(src)  # host -> device
    assert torch.equal(vk.cpu(), cpu)
    src = make(length, dtype)
    cpu[region] = src
    vk[region].copy_(src.to(VKML))  # device -> device
    assert torch.equal(vk.cpu(), cpu)
    assert torch.equal(vk[region].cpu(), src)  # device -> host
    cpu[region] = 1
    vk[region].fill_(1)
    assert torch.equal(vk.cpu(), cpu)


COPY_ALIGNMENTS = r"""
import sys, torch, torch_vkml
from collections import Counter
cases = [
    (0, 4096, torch.float32),  # whole 16-byte words: the kernel's wide variant
    (1, 4095, torch.float32),  # 4-byte words only: its narrow variant
    (0, 1001, torch.float32),
    (2, 10_001, torch.int16),  # 2-byte aligned: always the transfer command
    (3, 777, torch.uint8),
    (0, 3_000_001, torch.float32),  # past 65535 workgroups
]
g = torch.Generator().manual_seed(5)
with torch_vkml.profile() as prof:
    for start, length, dtype in cases:
        base = torch.randint(-100, 100, (length + 8,), generator=g).to(dtype)
        view = base.to("vkml")[start : start + length]
        assert torch.equal(view.clone().cpu(), base[start : start + length]), (start, length)
        dst = torch.full((length + 8,), 7, dtype=dtype).to("vkml")
        dst[start : start + length].copy_(view.clone())
        expected = torch.full((length + 8,), 7, dtype=dtype)
        expected[start : start + length] = base[start : start + length]
        assert torch.equal(dst.cpu(), expected), (start, length)
messages = torch_vkml.validation_messages()
assert not messages, messages
print(sorted(Counter(k.name.split("[")[0] for k in prof.kernels if "copy" in k.name)))
"""


@pytest.mark.parametrize("kernel", ["0", "1"])
def test_contiguous_device_copies_of_every_alignment(kernel):
    """Contiguous device-to-device copies run as a word-copy kernel (GPUs; forced here with
    TORCH_VKML_COPY_KERNEL=1) where addresses and size are whole 4- or 16-byte words, else
    as a transfer command (lavapipe's default); neighbours stay as they were."""
    proc = run_python(COPY_ALIGNMENTS, env={"TORCH_VKML_COPY_KERNEL": kernel})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    used = proc.stdout.split("\n")[-2]
    if kernel == "1":
        assert "copy_words_w16" in used and "copy_words_w4" in used, used
    else:
        assert "copy_words" not in used, used


def test_non_blocking_copies():
    src = make((64, 64))
    vk = src.to(VKML, non_blocking=True)
    back = vk.to("cpu", non_blocking=True)
    torch_vkml.synchronize()
    assert torch.equal(back, src)


# --------------------------------------------------------- conversions


def _conversion_source(src, dst):
    """Values that convert without undefined behaviour on the CPU."""
    unsigned = torch.uint8 in (src, dst)
    low = 0 if unsigned else -100
    high = 100
    if src == torch.bool:
        return make(50, torch.bool)
    t = make(50, src, low=low, high=high)
    if src.is_floating_point:
        # fractions exercise truncation towards zero and "nonzero is True"
        fractions = [0.0, -0.0, 0.5, 2.7, 99.9] if unsigned else [-2.7, -0.5, 0.0, -0.0, 0.5]
        t[: len(fractions)] = torch.tensor(fractions, dtype=src)
    return t


@pytest.mark.parametrize("dst", COPY_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("src", COPY_DTYPES, ids=dtype_id)
def test_dtype_conversion_on_device(src, dst):
    x = _conversion_source(src, dst)
    assert_close_to_cpu(lambda t: t.to(dst), x)


@pytest.mark.parametrize("dst", COPY_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("src", [torch.float32, torch.int64, torch.bool], ids=dtype_id)
def test_dtype_conversion_across_devices(src, dst):
    x = _conversion_source(src, dst)
    expected = x.to(dst)
    # host -> device with conversion
    vk = x.to(VKML, dst)
    assert_same(vk, expected)
    # copy_ into an existing device tensor of another dtype
    out = torch.empty(x.shape, dtype=dst, device=VKML)
    out.copy_(x)
    assert_same(out, expected)
    # device -> host with conversion
    back = x.to(VKML).to("cpu", dst)
    assert back.device.type == "cpu"
    assert torch.equal(back, expected)


def test_conversion_of_noncontiguous_view():
    x = make((6, 8))
    assert_close_to_cpu(lambda t: t.t()[::2].to(torch.float16), x)
    assert_close_to_cpu(lambda t: t[:, ::3].to(torch.int32), x)


def test_float_to_int_truncates_and_nonzero_is_true():
    x = torch.tensor([-2.7, -0.5, -0.0, 0.0, 0.4, 1.9, float("nan")])
    vk = x.to(VKML)
    assert vk[:-1].to(torch.int64).cpu().tolist() == [-2, 0, 0, 0, 0, 1]
    assert vk.to(torch.bool).cpu().tolist() == [True, True, False, False, True, True, True]


# ------------------------------------------------------------- big


def test_larger_than_128_mib():
    # 40M float32 = 160 MB: above the 2**27-byte minimum maxStorageBufferRange
    # and above 65535 workgroups of 256 threads.
    n = 40_000_000
    x = (torch.arange(n, dtype=torch.int32) % 5).to(torch.float32)
    vk = x.to(VKML)
    y = vk + 1
    total = vk.sum()
    assert y.is_vkml and y.shape == (n,)
    assert total.item() == pytest.approx(2.0 * n, rel=1e-5)  # sum of 0..4 is 10 per 5
    back = y.cpu()
    assert torch.equal(back[:10], x[:10] + 1)
    assert torch.equal(back[-10:], x[-10:] + 1)
    assert torch.equal(back, x + 1)


def test_float64_is_stored_filled_and_converted_without_device_float64():
    """On GPUs without shaderFloat64 (many Intel ones, Arc among them) float64 data still
    arrives (numpy's default dtype): it must fill, copy and convert exactly as on the
    CPU (.float() first of all), through integer arithmetic on its bits; only math on it
    raises. Values cover rounding ties, float32 subnormals and overflow, float64
    subnormals, infinities, NaN and random bit patterns."""
    run = run_python(
        """
        import torch, torch_vkml
        assert not torch_vkml.get_device_properties().supports_fp64
        g = torch.Generator().manual_seed(0)
        edges = [0.0, -0.0, 0.1, 1 / 3, 3.4028235677973366e38, 3.40282357e38, 1e39,
                 1.1754943508222875e-38, 7.006492321624085e-46, 7.0064923216240862e-46,
                 1e-310, -5e-324, float("inf"), -float("inf"), float("nan"), 16777217.0,
                 2.0**53 + 2, -2.0**63, 0.5, -2.5, 1.0000000596046448]
        x = torch.cat([
            torch.tensor(edges, dtype=torch.float64),
            torch.randn(2000, generator=g, dtype=torch.float64) * 1e10,
            torch.randint(-2**63, 2**63 - 1, (4000,), generator=g).view(torch.float64),
        ])

        def same(got, want, what):
            got = got.cpu()
            if want.dtype.is_floating_point:
                ok = (got == want) & (got.signbit() == want.signbit())
                ok |= got.isnan() & want.isnan()
            else:
                ok = got == want
            assert bool(ok.all()), (what, x[~ok][:4], got[~ok][:4], want[~ok][:4])

        xv = x.to("vkml")
        for dt in (torch.float32, torch.float16, torch.bfloat16, torch.bool):
            same(xv.to(dt), x.to(dt), dt)
        ints = x[x.isfinite() & (x.abs() < 2**31)]
        for dt in (torch.int64, torch.int32):
            same(ints.to("vkml").to(dt), ints.to(dt), dt)
        f = torch.randint(-2**31, 2**31 - 1, (4000,), generator=g, dtype=torch.int32)
        same(f.view(torch.float32).to("vkml").double(), f.view(torch.float32).double(), "f32")
        h = f.to(torch.int16).view(torch.float16)
        same(h.to("vkml").double(), h.double(), "f16")
        i = torch.cat([torch.randint(-2**63, 2**63 - 1, (4000,), generator=g),
                       torch.tensor([2**53 + 1, 2**53 + 3, -2**63, 2**63 - 1])])
        same(i.to("vkml").double(), i.double(), "i64")
        same(f.to("vkml").double(), f.double(), "i32")
        m = torch.randn(40, 30, dtype=torch.float64)
        same(m.to("vkml").t().contiguous(), m.t().contiguous(), "transpose")
        for v in (0.0, 0.1, 1 / 3, -2.5e-310, float("inf")):
            same(torch.full((5, 3), v, device="vkml", dtype=torch.float64),
                 torch.full((5, 3), v, dtype=torch.float64), v)
        z = torch.zeros(6, device="vkml", dtype=torch.float64)
        z[1:4].fill_(0.7)
        same(z, torch.tensor([0, 0.7, 0.7, 0.7, 0, 0], dtype=torch.float64), "fill")
        try:
            z + 1
            raise SystemExit("float64 math ran")
        except NotImplementedError as e:
            assert "has no float64 arithmetic; convert with .float()" in str(e), e
        print("ok", torch_vkml.fallback_counts())
        """,
        env={"TORCH_VKML_NO_FP64": "1"},
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok {}", run.stdout + run.stderr


UNSIGNED = {torch.uint16: 2**16 - 1, torch.uint32: 2**32 - 1, torch.uint64: 2**64 - 1}


@pytest.mark.parametrize("dtype", list(UNSIGNED), ids=str)
def test_unsigned_storage_dtypes(dtype):
    """uint16/32/64 (found by PyTorch's test_view_ops.py: 'vkml tensors cannot hold'):
    held as CUDA holds them, with copies, conversions and fills giving the CPU's values."""
    top = UNSIGNED[dtype]
    a = torch.tensor([0, 1, 300, top, top - 5, 2**15 + 3], dtype=dtype)
    v = a.to("vkml")
    assert v.dtype == dtype and torch.equal(v.cpu(), a)
    assert torch.equal(v[1::2].cpu(), a[1::2])  # strided
    others = [torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.uint8]
    for to in [*others, torch.bool, *UNSIGNED]:
        got, want = v.to(to).cpu(), a.to(to)
        if to.is_floating_point:
            torch.testing.assert_close(got, want, atol=0, rtol=1e-7 if to == torch.float32 else 0)
        else:
            assert torch.equal(got, want), (to, got, want)
    for frm in others:
        src = torch.tensor([0, 1, 300, 70000, 5, 2**31 - 1]).to(frm)
        assert torch.equal(src.to("vkml").to(dtype).cpu(), src.to(dtype)), frm
    full = torch.full((3,), top, dtype=dtype, device="vkml")
    assert torch.equal(full.cpu(), torch.full((3,), top, dtype=dtype))
    assert torch.zeros(2, dtype=dtype, device="vkml").cpu().tolist() == [0, 0]
    # reinterpreting views, as view_ops test them
    x = make((4, 6))
    assert torch.equal(x.to("vkml").view(dtype).cpu(), x.view(dtype))
    with pytest.raises(NotImplementedError):
        v + 1  # storage only, as on CUDA: no arithmetic


def test_copies_into_overlapping_memory_raise_as_on_the_cpu():
    # copy_ into an expanded tensor, or from a source partly under its destination: the
    # result depends on the order of the writes and the CPU raises; vkml copied through a
    # temporary. A copy of a tensor onto itself stays a no-op.
    cases = (
        lambda d: torch.zeros(1, device=d).expand(3).copy_(torch.arange(3.0, device=d)),
        lambda d: torch.zeros(1, device=d).expand(3).copy_(torch.arange(3.0)),
        lambda d: (lambda a: a.copy_(a.t()))(torch.randn(3, 3, device=d)),
        lambda d: (lambda a: a[1:].copy_(a[:-1]))(torch.randn(5, device=d)),
    )
    for case in cases:
        for device in ("cpu", VKML):
            with pytest.raises(RuntimeError, match="unsupported operation"):
                case(device)
    a = torch.randn(5, device=VKML)
    before = a.cpu()
    assert torch.equal(a.copy_(a).cpu(), before)
    b = torch.randn(4, 4, device=VKML)
    b[:2].copy_(b[2:])  # disjoint halves of one storage
    assert torch.equal(b[:2].cpu(), b[2:].cpu())
