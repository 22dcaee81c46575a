"""cdist and pdist with their backward (composite/distance.cpp) against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_grads_close_to_cpu, make

pytestmark = pytest.mark.usefixtures("no_fallback")


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_cdist_and_pdist(p):
    x1 = make((2, 4, 3), discrete=True).requires_grad_()  # ties and zero distances
    x2 = make((2, 5, 3), discrete=True).requires_grad_()
    # compute_mode keeps p = 2 on _cdist_forward rather than the matmul formula
    mode = "donot_use_mm_for_euclid_dist"
    assert_grads_close_to_cpu(lambda a, b: torch.cdist(a, b, p, compute_mode=mode), x1, x2)
    assert_grads_close_to_cpu(lambda a: F.pdist(a, p), make((5, 3), discrete=True).requires_grad_())
