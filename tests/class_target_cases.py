"""The case matrix of the class-target losses (nll_loss in test_loss.py, cross_entropy in
test_cross_entropy.py): [N, C] scores, every reduction, with and without a class weight,
and no ignored target, the default ignore_index (-100) or a custom one (a class)."""

import pytest
import torch
from conftest import make

N, C = 6, 5


def class_targets(ignore):
    target = make(N, torch.int64, low=0, high=C)
    if ignore == "default":
        target[[1, 4]] = -100
    elif ignore == "custom":
        target[[0, 3]] = 2
    return target


def loss_kwargs(reduction, weighted, ignore):
    kwargs = {"reduction": reduction}
    if weighted:
        kwargs["weight"] = make(C, low=0.2, high=2.0)
    if ignore == "custom":
        kwargs["ignore_index"] = 2
    return kwargs


LOSS_CASES = [
    pytest.param(
        reduction,
        weighted,
        ignore,
        id=f"{reduction}-{'weight' if weighted else 'noweight'}-ignore_{ignore}",
    )
    for reduction in ("mean", "sum", "none")
    for weighted in (False, True)
    for ignore in ("none", "default", "custom")
]


def call_loss(loss_fn, kwargs):
    """loss_fn with kwargs, the weight (if any) passed as a third tensor argument."""

    def fn(x, target, *weight):
        return loss_fn(x, target, **kwargs, **({"weight": weight[0]} if weight else {}))

    return fn
