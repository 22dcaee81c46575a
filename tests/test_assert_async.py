"""torch._assert_async on vkml: the value check runs on the device, so the call never
waits; a zero is raised at the next read of the device with the CPU's words or the
caller's message (kornia's histogram and equalize call it; so do exported and compiled
programs' runtime asserts). Shape errors need no value and raise at once, as on the
CPU."""

import pytest
import torch
from conftest import VKML, check_raises_later, host_syncs

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")


def asserted(value, *msg):
    torch._assert_async(value, *msg)
    return value * 2  # later work, read to surface the check


@pytest.mark.parametrize(
    "value",
    [
        torch.tensor(0.0),
        torch.tensor(-0.0),
        torch.tensor([0], dtype=torch.int64),
        torch.tensor(False),
        torch.tensor([[0]], dtype=torch.uint8),
        torch.tensor(0.0, dtype=torch.float16),
        torch.tensor(0.0, dtype=torch.bfloat16),
    ],
    ids=str,
)
@pytest.mark.parametrize("msg", [(), ("kornia: histogram's bandwidth must be positive",), ("",)])
def test_a_zero_raises_at_the_next_read(value, msg):
    check_raises_later(asserted, value, *msg)


@pytest.mark.parametrize(
    "value",
    [torch.tensor(1.0), torch.tensor(float("nan")), torch.tensor(-3), torch.tensor([True])],
    ids=str,
)
def test_a_nonzero_passes_without_a_wait(value):
    x = value.to(VKML)
    torch_vkml.synchronize()
    before = host_syncs()
    torch._assert_async(x, "never raised")
    torch._assert_async(x)
    assert host_syncs() == before
    torch.testing.assert_close((x * 2).cpu(), value * 2, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("value", [torch.tensor([]), torch.tensor([1.0, 2.0])], ids=str)
def test_shape_errors_raise_at_once(value):
    for msg in ((), ("m",)):
        with pytest.raises(RuntimeError) as cpu:
            torch._assert_async(value, *msg)
        with pytest.raises(RuntimeError) as dev:
            torch._assert_async(value.to(VKML), *msg)
        assert str(dev.value) == str(cpu.value)


def test_each_message_is_its_own():
    # Two failing asserts: the first one's message is raised, once; a later assert with
    # another message raises that one.
    a = torch.tensor(0).to(VKML)
    torch._assert_async(a, "first")
    torch._assert_async(a, "second")
    with pytest.raises(RuntimeError, match="^first$"):
        torch_vkml.synchronize()
    torch._assert_async(a, "third")
    with pytest.raises(RuntimeError, match="^third$"):
        a.item()
    # Many distinct messages (a message formatted per call) keep working.
    for i in range(5000):
        torch._assert_async(torch.tensor(1, device=VKML), f"value {i}")
    torch._assert_async(a, "value 4999")
    with pytest.raises(RuntimeError, match="^value 4999$"):
        torch_vkml.synchronize()


def test_kornia_style_check_in_a_compiled_function():
    # torch.compile turns the assert into _functional_assert_async.msg.
    @torch.compile(backend="aot_eager")
    def clip(x):
        torch._assert_async((x > 0).all(), "x must be positive")
        return x.clamp(max=1.0)

    x = torch.tensor([0.5, 2.0], device=VKML)
    assert clip(x).tolist() == [0.5, 1.0]
    with pytest.raises(RuntimeError, match="x must be positive"):
        clip(-x).cpu()
