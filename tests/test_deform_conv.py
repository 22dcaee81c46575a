"""torchvision's deformable convolution on vkml (csrc/aten/ops_deform_conv.cpp):
deform_conv2d and its backward against a reference of torchvision's semantics
(deform_conv_reference.py; torchvision's own op where it loads), computed in float64 on
the CPU."""

import os

import pytest
import torch
from conftest import VKML, run_python
from deform_conv_reference import deform_conv2d, deform_conv2d_reference

pytestmark = pytest.mark.usefixtures("no_fallback")

# (batch, channels, height, width, out channels, kernel, stride, padding, dilation,
#  groups, offset groups)
CASES = {
    "3x3": (2, 4, 7, 6, 5, 3, 1, 1, 1, 1, 1),
    "strided_dilated": (2, 3, 9, 8, 4, (3, 2), (2, 1), (1, 2), (2, 1), 1, 1),
    "groups": (1, 6, 6, 7, 4, 3, 1, 1, 1, 2, 3),
    "1x1": (3, 2, 5, 5, 3, 1, 1, 0, 1, 1, 2),
}


def _case(name, use_mask, offset_scale=2.0, dtype=torch.float64, seed=0):
    b, c, h, w, o, k, stride, padding, dilation, groups, offset_groups = CASES[name]

    def pair(v):
        return (v, v) if isinstance(v, int) else v

    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = pair(k), pair(stride), pair(padding), pair(dilation)
    oh = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    g = torch.Generator().manual_seed(seed)
    tensors = {
        "input": torch.randn(b, c, h, w, generator=g, dtype=dtype),
        "offset": torch.randn(b, 2 * offset_groups * kh * kw, oh, ow, generator=g, dtype=dtype)
        * offset_scale,
        "weight": torch.randn(o, c // groups, kh, kw, generator=g, dtype=dtype),
        "bias": torch.randn(o, generator=g, dtype=dtype),
        "mask": torch.rand(b, offset_groups * kh * kw, oh, ow, generator=g, dtype=dtype)
        if use_mask
        else None,
    }
    return tensors, dict(stride=stride, padding=padding, dilation=dilation)


def _run(tensors, kw, device, dtype):
    leaves = {
        n: None if t is None else t.to(device, dtype).requires_grad_() for n, t in tensors.items()
    }
    out = deform_conv2d(
        leaves["input"],
        leaves["offset"],
        leaves["weight"],
        leaves["bias"],
        mask=leaves["mask"],
        **kw,
    )
    return out, leaves


def _reference(tensors, kw, grad):
    """The reference's output and gradients, in float64 on the CPU."""
    leaves = {
        n: None if t is None else t.detach().double().requires_grad_() for n, t in tensors.items()
    }
    (kh, kw_), offset = tensors["weight"].shape[-2:], tensors["offset"]
    mask = leaves["mask"]

    def pair(v):
        return (v, v) if isinstance(v, int) else v

    out = deform_conv2d_reference(
        leaves["input"],
        leaves["weight"],
        leaves["offset"],
        mask,
        leaves["bias"],
        pair(kw["stride"]),
        pair(kw["padding"]),
        pair(kw["dilation"]),
        tensors["input"].shape[1] // tensors["weight"].shape[1],
        offset.shape[1] // (2 * kh * kw_),
        mask is not None,
    )
    out.backward(grad)
    return out.detach(), {n: t.grad for n, t in leaves.items() if t is not None}


@pytest.mark.parametrize("use_mask", [True, False], ids=["v2_mask", "v1"])
@pytest.mark.parametrize("name", list(CASES))
def test_forward_and_gradients_match_the_reference(name, use_mask):
    # Offsets of about two pixels put many samples near and past the plane's edges.
    tensors, kw = _case(name, use_mask)
    out, leaves = _run(tensors, kw, VKML, torch.float32)
    assert out.device.type == VKML and out.dtype == torch.float32
    grad = torch.randn(out.shape, dtype=torch.float64)
    out.backward(grad.float().to(VKML))
    expected, grads = _reference(tensors, kw, grad)
    # float32 against float64: sums of up to c * kh * kw products of values about 1.
    torch.testing.assert_close(out.detach().cpu().double(), expected, atol=2e-5, rtol=1e-5)
    for n, g in grads.items():
        torch.testing.assert_close(
            leaves[n].grad.cpu().double(), g, atol=5e-5, rtol=1e-4, msg=lambda m, n=n: f"{n}: {m}"
        )


def test_zero_offsets_and_unit_mask_give_a_convolution():
    tensors, kw = _case("strided_dilated", True, offset_scale=0.0, dtype=torch.float32)
    tensors["mask"] = torch.ones_like(tensors["mask"])
    out, _ = _run(tensors, kw, VKML, torch.float32)
    expected = torch.nn.functional.conv2d(
        tensors["input"], tensors["weight"], tensors["bias"], **kw
    )
    torch.testing.assert_close(out.detach().cpu(), expected, atol=1e-5, rtol=1e-5)


def test_float64_is_exact_to_rounding():
    tensors, kw = _case("groups", True)
    out, leaves = _run(tensors, kw, VKML, torch.float64)
    assert out.dtype == torch.float64
    grad = torch.randn(out.shape, dtype=torch.float64)
    out.backward(grad.to(VKML))
    expected, grads = _reference(tensors, kw, grad)
    torch.testing.assert_close(out.detach().cpu(), expected, atol=1e-12, rtol=1e-12)
    for n, g in grads.items():
        torch.testing.assert_close(leaves[n].grad.cpu(), g, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_runs_in_float32(dtype):
    tensors, kw = _case("3x3", True, dtype=torch.float32)
    tensors = {n: t.to(dtype) for n, t in tensors.items()}
    out, leaves = _run(tensors, kw, VKML, dtype)
    assert out.dtype == dtype
    out.sum().backward()
    assert all(t.grad.dtype == dtype for t in leaves.values())
    expected, _ = _reference(tensors, kw, torch.ones(out.shape, dtype=torch.float64))
    torch.testing.assert_close(out.detach().cpu().double(), expected, atol=0.1, rtol=0.02)


def test_autocast_runs_the_op_in_float32():
    tensors, kw = _case("3x3", False, dtype=torch.float32)
    with torch.autocast(VKML, dtype=torch.float16):
        out, _ = _run(tensors, kw, VKML, torch.float32)
    assert out.dtype == torch.float32
    expected, _ = _reference(tensors, kw, torch.ones(out.shape, dtype=torch.float64))
    torch.testing.assert_close(out.detach().cpu().double(), expected, atol=2e-5, rtol=1e-5)


def test_batches_beyond_one_chunk_and_empty_batches():
    # 35 images: a chunk of 32 and one of 3, each with its own columns.
    g = torch.Generator().manual_seed(1)
    tensors = {
        "input": torch.randn(35, 2, 5, 5, generator=g, dtype=torch.float64),
        "offset": torch.randn(35, 18, 5, 5, generator=g, dtype=torch.float64),
        "weight": torch.randn(3, 2, 3, 3, generator=g, dtype=torch.float64),
        "bias": torch.randn(3, generator=g, dtype=torch.float64),
        "mask": torch.rand(35, 9, 5, 5, generator=g, dtype=torch.float64),
    }
    kw = dict(stride=1, padding=1, dilation=1)
    out, leaves = _run(tensors, kw, VKML, torch.float32)
    grad = torch.randn(out.shape, dtype=torch.float64)
    out.backward(grad.float().to(VKML))
    expected, grads = _reference(tensors, kw, grad)
    torch.testing.assert_close(out.detach().cpu().double(), expected, atol=2e-5, rtol=1e-5)
    for n, gr in grads.items():
        torch.testing.assert_close(leaves[n].grad.cpu().double(), gr, atol=1e-4, rtol=1e-4)

    empty = {n: t[:0] if n in ("input", "offset", "mask") else t for n, t in tensors.items()}
    out, leaves = _run(empty, kw, VKML, torch.float32)
    assert out.shape == (0, 3, 5, 5)
    out.sum().backward()
    assert leaves["weight"].grad.abs().sum().item() == 0
    assert leaves["input"].grad.shape == (0, 2, 5, 5)


def test_a_dcn_block_trains_as_on_the_cpu():
    """A DCNv2 block as detection and segmentation models build it: a convolution
    predicts the offsets and mask of a deformable one. Three SGD steps on vkml and on the
    CPU from the same weights and batches."""
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.offsets = torch.nn.Conv2d(4, 27, 3, padding=1)
            torch.nn.init.normal_(self.offsets.weight, std=0.3)
            self.weight = torch.nn.Parameter(torch.randn(6, 4, 3, 3) * 0.3)
            self.bias = torch.nn.Parameter(torch.zeros(6))

        def forward(self, x):
            dy_dx_m = self.offsets(x)
            offset, mask = dy_dx_m[:, :18], dy_dx_m[:, 18:].sigmoid()
            return deform_conv2d(x, offset, self.weight, self.bias, padding=1, mask=mask)

    cpu = Block()
    dev = Block().to(VKML)
    dev.load_state_dict(cpu.state_dict())
    g = torch.Generator().manual_seed(2)
    batches = [(torch.randn(2, 4, 8, 8, generator=g), torch.randn(2, 6, 8, 8, generator=g))]
    batches *= 3
    losses = []
    for model, device in ((cpu, "cpu"), (dev, VKML)):
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        run = []
        for x, y in batches:
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    assert losses[0][-1] < losses[0][0]
    torch.testing.assert_close(losses[1], losses[0], atol=1e-5, rtol=1e-5)
    for (n, p), q in zip(cpu.named_parameters(), dev.parameters(), strict=True):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), atol=1e-5, rtol=1e-5, msg=n)


def test_bad_arguments_raise_as_torchvision():
    tensors, kw = _case("3x3", True, dtype=torch.float32)
    t = {n: v.to(VKML) for n, v in tensors.items()}
    with pytest.raises(RuntimeError, match="offset.shape\\[1\\] is not valid"):
        deform_conv2d(t["input"], t["offset"][:, :9], t["weight"], t["bias"], padding=1)
    with pytest.raises(RuntimeError, match="mask.shape\\[1\\] is not valid"):
        deform_conv2d(
            t["input"], t["offset"], t["weight"], t["bias"], padding=1, mask=t["mask"][:, :4]
        )
    with pytest.raises(RuntimeError, match="offset output dims"):
        deform_conv2d(t["input"], t["offset"], t["weight"], t["bias"], padding=0)
    with pytest.raises(RuntimeError, match="one device"):
        deform_conv2d(t["input"], t["offset"], t["weight"].cpu(), t["bias"], padding=1)
    # The device stays usable.
    out = deform_conv2d(t["input"], t["offset"], t["weight"], t["bias"], padding=1, mask=t["mask"])
    assert torch.isfinite(out).all()


def test_float64_without_device_float64_takes_the_counted_cpu_route():
    here = os.path.dirname(os.path.abspath(__file__))
    run = run_python(
        """
        import torch, torch_vkml
        from deform_conv_reference import deform_conv2d
        assert not torch_vkml.get_device_properties().supports_fp64
        g = torch.Generator().manual_seed(0)
        x = torch.randn(2, 3, 6, 6, generator=g, dtype=torch.float64)
        offset = torch.randn(2, 18, 6, 6, generator=g, dtype=torch.float64)
        weight = torch.randn(4, 3, 3, 3, generator=g, dtype=torch.float64)
        leaves = [t.to("vkml").requires_grad_() for t in (x, offset, weight)]
        out = deform_conv2d(leaves[0], leaves[1], leaves[2], padding=1)
        out.backward(torch.ones_like(out))  # a float64 sum is math: no kernel here
        cpu = [t.clone().requires_grad_() for t in (x, offset, weight)]
        expected = deform_conv2d(cpu[0], cpu[1], cpu[2], padding=1)
        expected.sum().backward()
        assert out.dtype == torch.float64 and out.device.type == "vkml"
        torch.testing.assert_close(out.cpu(), expected)
        for a, b in zip(leaves, cpu, strict=True):
            torch.testing.assert_close(a.grad.cpu(), b.grad)
        counts = torch_vkml.fallback_counts()
        assert set(counts) == {
            "torchvision::deform_conv2d", "torchvision::_deform_conv2d_backward"
        }, counts
        print("ok")
        """,
        env={
            "TORCH_VKML_NO_FP64": "1",
            "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]),
        },
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
