"""Ternary elementwise ops (ops_ternary.cpp: where, addcmul, addcdiv, lerp) against the
CPU."""

import pytest
import torch
from conftest import assert_close_to_cpu, dtype_id, make, tol

pytestmark = pytest.mark.usefixtures("no_fallback")

FLOATS = [torch.float32, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=dtype_id)
def test_ternary_ops(dtype):
    a, b = make((4, 5), dtype), make((4, 5), dtype)
    c = make((5,), dtype, nonzero=True)
    cond = make((4, 1), torch.bool)
    kw = tol(dtype)
    assert_close_to_cpu(torch.where, cond, a, b)
    assert_close_to_cpu(lambda k, x: torch.where(k, x, 2), cond, a)
    assert_close_to_cpu(lambda x, y, z: torch.addcmul(x, y, z, value=2), a, b, c, **kw)
    assert_close_to_cpu(lambda x, y, z: torch.clamp(x, y.clamp(max=0), z.abs()), a, b, c)
    if dtype.is_floating_point:
        assert_close_to_cpu(lambda x, y, z: torch.addcdiv(x, y, z, value=0.5), a, b, c, **kw)
        assert_close_to_cpu(lambda x, y, z: torch.lerp(x, y, z), a, b, c, **kw)
        assert_close_to_cpu(lambda x, y, z: torch.addcmul(x, y, torch.tensor(1.5)), a, b, c, **kw)
