"""embedding_bag and its backward (composite/embedding_bag.cpp) against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close_to_cpu, assert_grads_close_to_cpu, leaf, make

pytestmark = pytest.mark.usefixtures("no_fallback")


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag(mode, padding_idx):
    weight = make((10, 3), unique=True).requires_grad_()
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2, 2])
    offsets = torch.tensor([0, 4, 4, 8])  # an empty bag and a padding-only bag

    def fn(w, i, o):
        return F.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx)

    assert_grads_close_to_cpu(fn, weight, indices, offsets)
    assert_grads_close_to_cpu(
        lambda w, i: F.embedding_bag(i, w, mode=mode), weight, indices.view(2, 5)
    )


def test_embedding_bag_per_sample_weights_and_last_offset():
    weight = leaf((8, 4))
    psw = leaf(6)
    indices = torch.tensor([0, 7, 3, 3, 1, 5])
    offsets = torch.tensor([0, 2, 5, 6])

    def fn(w, p):
        return F.embedding_bag(
            indices.to(w.device),
            w,
            offsets.to(w.device),
            mode="sum",
            per_sample_weights=p,
            include_last_offset=True,
        )

    assert_grads_close_to_cpu(fn, weight, psw)
    assert_close_to_cpu(
        lambda w: F.embedding_bag(indices.to(w.device), w, offsets.to(w.device), mode="mean"),
        make((8, 4), torch.float16),
    )
