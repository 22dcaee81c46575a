"""nn.Embedding(max_norm=...) on vkml (composite/embedding_renorm.cpp): the rows a lookup
names are renormalized in place to max_norm where their norm exceeds it, each row once,
as the CPU does, for the p-norms the module takes; it ran on the CPU fallback before."""

import pytest
import torch
from conftest import VKML
from torch import nn

pytestmark = pytest.mark.usefixtures("no_fallback")


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_renorm_matches_cpu(norm_type):
    torch.manual_seed(0)
    weight = torch.randn(12, 5) * 2
    weight[3] *= 0.05  # a row under the limit stays as it is
    idx = torch.tensor([[1, 3, 1, 7], [7, 0, 11, 3]])  # repeats scale a row once
    want = weight.clone()
    torch.embedding_renorm_(want, idx, 1.5, norm_type)
    got = weight.to(VKML)
    torch.embedding_renorm_(got, idx.to(VKML), 1.5, norm_type)
    torch.testing.assert_close(got.cpu(), want, atol=1e-6, rtol=1e-6)


def test_embedding_with_max_norm_trains_like_cpu():
    torch.manual_seed(0)
    cpu = nn.Embedding(20, 6, max_norm=1.0, padding_idx=0)
    with torch.no_grad():
        cpu.weight.mul_(3)
    vk = nn.Embedding(20, 6, max_norm=1.0, padding_idx=0).to(VKML)
    vk.load_state_dict(cpu.state_dict())
    idx = torch.tensor([[1, 2, 0, 5], [5, 5, 7, 0]])
    for module, device in ((cpu, "cpu"), (vk, VKML)):
        module(idx.to(device)).pow(2).sum().backward()
    torch.testing.assert_close(vk.weight.detach().cpu(), cpu.weight.detach(), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(vk.weight.grad.cpu(), cpu.weight.grad, atol=1e-5, rtol=1e-5)


def test_renorm_errors_as_cpu():
    with pytest.raises(RuntimeError, match="Expected 2-dimensional tensor"):
        torch.embedding_renorm_(torch.ones(3, device=VKML), torch.tensor([0], device=VKML), 1, 2)
    with pytest.raises(RuntimeError, match="Long, Int"):
        torch.embedding_renorm_(
            torch.ones(3, 2, device=VKML), torch.tensor([0.0], device=VKML), 1, 2
        )
    with pytest.raises(IndexError):
        weight = torch.ones(3, 2, device=VKML)
        torch.embedding_renorm_(weight, torch.tensor([5], device=VKML), 1, 2)
        weight.cpu()  # a device value: raised at the read
    assert torch.ones(2, device=VKML).sum().item() == 2  # still usable
