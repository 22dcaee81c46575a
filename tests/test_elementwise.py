"""Element-wise ops against the CPU: dtypes, layouts, promotion, in-place, out=, bfloat16
storage, float64 kernels and the CPU route of float64 math (the ops by arity:
test_unary.py, test_binary.py, test_ternary.py, test_activation.py)."""

from dataclasses import dataclass, field

import pytest
import torch
import torch.nn.functional as F
from conftest import (
    ALL_DTYPES,
    BINARY_LAYOUTS,
    FLOAT_DTYPES,
    INT_DTYPES,
    UNARY_LAYOUTS,
    VKML,
    assert_close_to_cpu,
    assert_grads_close_to_cpu,
    assert_raises_like_cpu,
    assert_same,
    binary_case,
    dtype_id,
    make,
    scalar_for,
    unary_case,
)

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

NO_BOOL = [torch.float32, torch.int64, torch.int32, torch.float16]
NAN = float("nan")
INF = float("inf")


@dataclass
class Op:
    fn: object
    dtypes: list = field(default_factory=lambda: list(ALL_DTYPES))
    a_kw: dict = field(default_factory=dict)
    b_kw: dict = field(default_factory=dict)
    scalar: bool = True  # accepts a python scalar as second operand
    atol: float | None = None
    rtol: float | None = None


def _kw_for(kw, dtype):
    """Per-dtype make() keywords: ``kw`` may map "float"/"int" to dicts."""
    if "float" in kw or "int" in kw:
        return kw.get("float" if dtype.is_floating_point else "int", {})
    return kw


SMALL = dict(low=-3, high=4, discrete=True)  # ties, also with the int scalar 3

BINARY = {
    "add": Op(torch.add),
    "add_alpha": Op(lambda a, b: torch.add(a, b, alpha=2)),
    "sub": Op(torch.sub, NO_BOOL),
    "sub_alpha": Op(lambda a, b: torch.sub(a, b, alpha=3), NO_BOOL),
    "mul": Op(torch.mul),
    "div": Op(torch.div, b_kw=dict(nonzero=True)),
    "pow": Op(
        torch.pow,
        NO_BOOL,
        a_kw={"float": dict(low=0.5, high=2.5), "int": dict(low=-3, high=4)},
        b_kw={"float": dict(low=-2, high=2), "int": dict(low=0, high=4)},
        # pow is exp2(y * log2(x)) on many GPUs: a few more ulp than exp
        rtol=1e-4,
    ),
    "maximum": Op(torch.maximum, a_kw=SMALL, b_kw=SMALL, scalar=False),
    "minimum": Op(torch.minimum, a_kw=SMALL, b_kw=SMALL, scalar=False),
    "eq": Op(torch.eq, a_kw=SMALL, b_kw=SMALL),
    "ne": Op(torch.ne, a_kw=SMALL, b_kw=SMALL),
    "lt": Op(torch.lt, a_kw=SMALL, b_kw=SMALL),
    "le": Op(torch.le, a_kw=SMALL, b_kw=SMALL),
    "gt": Op(torch.gt, a_kw=SMALL, b_kw=SMALL),
    "ge": Op(torch.ge, a_kw=SMALL, b_kw=SMALL),
}


def _binary_params():
    for name, op in BINARY.items():
        for dtype in op.dtypes:
            for layout in BINARY_LAYOUTS:
                if layout == "scalar" and not op.scalar:
                    continue
                yield pytest.param(name, dtype, layout, id=f"{name}-{dtype_id(dtype)}-{layout}")


@pytest.mark.parametrize("name, dtype, layout", list(_binary_params()))
def test_binary(name, dtype, layout):
    op = BINARY[name]
    inputs, build = binary_case(
        layout, dtype, a_kw=_kw_for(op.a_kw, dtype), b_kw=_kw_for(op.b_kw, dtype)
    )
    rtol = op.rtol if dtype == torch.float32 else None
    assert_close_to_cpu(lambda *xs: op.fn(*build(*xs)), *inputs, atol=op.atol, rtol=rtol)


def test_sub_and_neg_of_bool_are_errors():
    a, b = make(5, torch.bool), make(5, torch.bool)
    assert_raises_like_cpu(torch.sub, a, b)
    assert_raises_like_cpu(torch.neg, a)


@pytest.mark.parametrize("dtype", NO_BOOL, ids=dtype_id)
def test_reflected_scalar_ops(dtype):
    x = make((3, 4), dtype, nonzero=True, low=1, high=3)
    s = scalar_for(dtype)
    assert_close_to_cpu(lambda t: s - t, x)
    assert_close_to_cpu(lambda t: s * t, x)
    assert_close_to_cpu(lambda t: s / t, x)
    assert_close_to_cpu(lambda t: 2**t, x)
    assert_close_to_cpu(lambda t: 2.5**t, x)


def test_cpu_scalar_tensor_operand():
    # 0-dim CPU tensors are allowed as scalars, like with CUDA tensors
    x = make((3, 4))
    for s in (torch.tensor(2.5), torch.tensor(3)):
        assert_same(x.to(VKML) * s, x * s)
        assert_same(x.to(VKML) + s, x + s)


# ---------------------------------------------------------------- unary

UNARY = {
    "neg": Op(torch.neg, NO_BOOL),
    "abs": Op(torch.abs, NO_BOOL),
    "sqrt": Op(torch.sqrt, a_kw={"float": dict(low=0.1, high=9), "int": dict(low=0)}),
    "rsqrt": Op(torch.rsqrt, NO_BOOL, a_kw={"float": dict(low=0.1, high=9), "int": dict(low=1)}),
    "exp": Op(torch.exp),
    "log": Op(torch.log, NO_BOOL, a_kw={"float": dict(low=0.1, high=9), "int": dict(low=1)}),
    "relu": Op(torch.relu, NO_BOOL),
    "sigmoid": Op(torch.sigmoid, NO_BOOL),
    "tanh": Op(torch.tanh),
}


def _unary_params():
    for name, op in UNARY.items():
        for dtype in op.dtypes:
            for layout in UNARY_LAYOUTS:
                yield pytest.param(name, dtype, layout, id=f"{name}-{dtype_id(dtype)}-{layout}")


@pytest.mark.parametrize("name, dtype, layout", list(_unary_params()))
def test_unary(name, dtype, layout):
    op = UNARY[name]
    x, build = unary_case(layout, dtype, **_kw_for(op.a_kw, dtype))
    assert_close_to_cpu(lambda t: op.fn(build(t)), x)


def test_unary_extreme_values():
    x = torch.tensor([-100.0, -20.0, -0.0, 0.0, 1e-30, 20.0, 100.0, INF, -INF, NAN])
    for fn in (torch.exp, torch.sigmoid, torch.tanh, torch.relu, torch.abs, torch.neg):
        assert_close_to_cpu(fn, x)
    assert_close_to_cpu(torch.log, torch.tensor([0.0, 1e-30, 1.0, 1e30, INF, -1.0, NAN]))
    assert_close_to_cpu(torch.sqrt, torch.tensor([0.0, 1e-30, 4.0, INF, -1.0, NAN]))
    assert_close_to_cpu(torch.rsqrt, torch.tensor([1e-30, 4.0, 1e30, INF, -1.0, NAN]))


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, -1, 0.5, -0.5, 2.5], ids=lambda e: f"x**{e}")
@pytest.mark.parametrize("dtype", NO_BOOL, ids=dtype_id)
def test_pow_scalar_exponent(dtype, exponent):
    if dtype.is_floating_point:
        x = make((3, 4), dtype, low=0.5, high=3)
    elif isinstance(exponent, float):
        x = make((3, 4), dtype, low=1, high=4)  # int ** float is a float
    elif exponent < 0:
        x = make((3, 4), dtype, low=1, high=4)
        assert_raises_like_cpu(lambda t: t**exponent, x)
        return
    else:
        x = make((3, 4), dtype, low=-3, high=4)
    rtol = 1e-4 if dtype == torch.float32 else None
    assert_close_to_cpu(lambda t: torch.pow(t, exponent), x, rtol=rtol)
    assert_close_to_cpu(lambda t: t.t() ** exponent, x, rtol=rtol)


# ---------------------------------------------------------------- clamp

CLAMPS = {
    "min": dict(min=-2),
    "max": dict(max=3),
    "both": dict(min=-2, max=3),
    "float_bounds": dict(min=-0.5, max=1.5),
    "min_above_max": dict(min=2, max=-1),
}


@pytest.mark.parametrize("layout", list(UNARY_LAYOUTS))
@pytest.mark.parametrize("dtype", NO_BOOL, ids=dtype_id)
@pytest.mark.parametrize("bounds", list(CLAMPS))
def test_clamp(bounds, dtype, layout):
    x, build = unary_case(layout, dtype)
    kwargs = CLAMPS[bounds]
    assert_close_to_cpu(lambda t: torch.clamp(build(t), **kwargs), x)


def test_nan_propagation():
    a = torch.tensor([NAN, 1.0, 2.0, NAN, -INF, 0.0])
    b = torch.tensor([0.0, NAN, 3.0, NAN, 1.0, -0.0])
    for fn in (
        torch.maximum,
        torch.minimum,
        torch.eq,
        torch.ne,
        torch.lt,
        torch.le,
        torch.gt,
        torch.ge,
        torch.add,
        torch.mul,
    ):
        assert_close_to_cpu(fn, a, b)
    assert_close_to_cpu(lambda t: torch.clamp(t, min=0.5), a)
    assert_close_to_cpu(lambda t: torch.clamp(t, max=0.5), a)
    assert_close_to_cpu(lambda t: torch.clamp(t, -1.0, 1.0), a)
    assert_close_to_cpu(torch.relu, a)


# ---------------------------------------------------------------- where

WHERE_LAYOUTS = {
    # (cond shape, x shape, y shape or None for a python scalar, builder)
    "contiguous": ((4, 5), (4, 5), (4, 5), lambda c, x, y: (c, x, y)),
    "noncontiguous": ((5, 4), (4, 10), (5, 4), lambda c, x, y: (c.t(), x[:, ::2], y.t())),
    "broadcast": ((3, 1, 4), (1, 5, 1), (5, 4), lambda c, x, y: (c, x, y)),
    "empty": ((0, 3), (0, 3), (0, 3), lambda c, x, y: (c, x, y)),
    "zerodim": ((), (4, 5), (), lambda c, x, y: (c, x, y)),
    "scalar": ((4, 5), (4, 5), None, None),
}


@pytest.mark.parametrize("layout", list(WHERE_LAYOUTS))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_where(dtype, layout):
    c_shape, x_shape, y_shape, build = WHERE_LAYOUTS[layout]
    cond, x = make(c_shape, torch.bool), make(x_shape, dtype)
    if y_shape is None:
        value = scalar_for(dtype)
        assert_close_to_cpu(lambda c, t: torch.where(c, t, value), cond, x)
        assert_close_to_cpu(lambda c, t: torch.where(c, value, t), cond, x)
    else:
        y = make(y_shape, dtype)
        assert_close_to_cpu(lambda *xs: torch.where(*build(*xs)), cond, x, y)


def test_where_promotes():
    cond = make((3, 4), torch.bool)
    assert_close_to_cpu(torch.where, cond, make((3, 4), torch.int32), make((3, 4)))
    assert_close_to_cpu(lambda c, t: torch.where(c, t, 0.5), cond, make((3, 4), torch.int64))


# ------------------------------------------------------ addcmul / addcdiv

TERNARY_LAYOUTS = {
    "contiguous": ((4, 5), (4, 5), (4, 5), lambda a, b, c: (a, b, c)),
    "noncontiguous": ((5, 4), (4, 10), (5, 4), lambda a, b, c: (a.t(), b[:, ::2], c.t())),
    "broadcast": ((3, 1, 4), (1, 5, 1), (5, 4), lambda a, b, c: (a, b, c)),
    "empty": ((0, 3), (0, 3), (0, 3), lambda a, b, c: (a, b, c)),
    "zerodim": ((), (), (4, 5), lambda a, b, c: (a, b, c)),
}


@pytest.mark.parametrize("layout", list(TERNARY_LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=dtype_id)
def test_addcmul(dtype, layout):
    a_shape, b_shape, c_shape, build = TERNARY_LAYOUTS[layout]
    inputs = make(a_shape, dtype), make(b_shape, dtype), make(c_shape, dtype)
    value = 0.5 if dtype.is_floating_point else 2
    assert_close_to_cpu(lambda *xs: torch.addcmul(*build(*xs), value=value), *inputs)
    assert_close_to_cpu(lambda *xs: torch.addcmul(*build(*xs)), *inputs)


@pytest.mark.parametrize("layout", list(TERNARY_LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_addcdiv(dtype, layout):
    a_shape, b_shape, c_shape, build = TERNARY_LAYOUTS[layout]
    inputs = make(a_shape, dtype), make(b_shape, dtype), make(c_shape, dtype, nonzero=True)
    assert_close_to_cpu(lambda *xs: torch.addcdiv(*build(*xs), value=-0.5), *inputs)
    assert_close_to_cpu(lambda *xs: torch.addcdiv(*build(*xs)), *inputs)


def test_addcdiv_of_ints_is_an_error():
    x = make(4, torch.int64, nonzero=True)
    assert_raises_like_cpu(torch.addcdiv, x, x, x)


# ----------------------------------------------------------------- lerp


@pytest.mark.parametrize("layout", list(TERNARY_LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_lerp_tensor_weight(dtype, layout):
    a_shape, b_shape, w_shape, build = TERNARY_LAYOUTS[layout]
    inputs = make(a_shape, dtype), make(b_shape, dtype), make(w_shape, dtype, low=-0.5, high=1.5)
    assert_close_to_cpu(lambda *xs: torch.lerp(*build(*xs)), *inputs)


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.5, 0.7, 1.0, 1.5])
@pytest.mark.parametrize("layout", ["contiguous", "noncontiguous", "broadcast", "empty", "zerodim"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_lerp_scalar_weight(dtype, layout, weight):
    inputs, build = binary_case(layout, dtype)
    assert_close_to_cpu(lambda *xs: torch.lerp(*build(*xs), weight), *inputs)


# ------------------------------------------------------ type promotion

PROMOTIONS = [
    (torch.int32, torch.float32),
    (torch.int64, 2.5),
    (torch.bool, 3),
    (torch.bool, torch.int32),
    (torch.bool, 2.5),
    (torch.int32, torch.int64),
    (torch.float16, torch.float32),
    (torch.float16, 2.5),
    (torch.int64, True),
    (torch.int32, (torch.float32,)),  # (dtype,) means a 0-dim tensor
    (torch.float16, (torch.float32,)),
    (torch.int32, (torch.int64,)),
    (torch.uint8, torch.int32),
]


def _promotion_params():
    for a_dtype, other in PROMOTIONS:
        if isinstance(other, torch.dtype):
            other_id = dtype_id(other)
        elif isinstance(other, tuple):
            other_id = f"0dim_{dtype_id(other[0])}"
        else:
            other_id = repr(other)
        for fn in (torch.add, torch.mul, torch.div, torch.lt, torch.maximum):
            if fn is torch.maximum and not isinstance(other, (torch.dtype, tuple)):
                continue  # maximum takes tensors only
            name = f"{dtype_id(a_dtype)}-{other_id}-{fn.__name__}"
            yield pytest.param(a_dtype, other, fn, id=name)


@pytest.mark.parametrize("a_dtype, other, fn", list(_promotion_params()))
def test_type_promotion(a_dtype, other, fn):
    a = make((3, 4), a_dtype, nonzero=True)
    if isinstance(other, torch.dtype):
        assert_close_to_cpu(fn, a, make((3, 4), other, nonzero=True))
    elif isinstance(other, tuple):
        assert_close_to_cpu(fn, a, make((), other[0], nonzero=True))
    else:
        assert_close_to_cpu(lambda t: fn(t, other), a)


# -------------------------------------------------------- integer math


def test_integer_wraparound_and_64_bit_math():
    big = torch.tensor([2**31 + 1, -(2**33) - 5, 2**40 + 7, -3])
    other = torch.tensor([2**31 + 3, 2**32 + 1, 3, 2**61])
    assert_close_to_cpu(torch.add, big, other)
    assert_close_to_cpu(torch.mul, big, other)
    assert_close_to_cpu(torch.sub, big, other)
    assert_close_to_cpu(lambda a, b: a < b, big, other)
    int32_max = torch.tensor([2**31 - 1, -(2**31)], dtype=torch.int32)
    assert_close_to_cpu(lambda t: t + 1, int32_max)
    assert_close_to_cpu(lambda t: t - 1, int32_max)
    assert_close_to_cpu(
        lambda a, b: a / b, torch.tensor([7, -7, 7, -7]), torch.tensor([2, 2, -2, -2])
    )


@pytest.mark.parametrize("dtype", ALL_DTYPES + [torch.uint8], ids=dtype_id)
def test_odd_sizes_and_offsets(dtype):
    # sub-word outputs (bool, uint8, float16) written by neighbouring threads
    n = 100_003
    a, b = make(n + 3, dtype), make(n + 3, dtype)
    assert_close_to_cpu(lambda x, y: x[3:] == y[:-3], a, b)
    assert_close_to_cpu(lambda x, y: torch.maximum(x[1:-2], y[2:-1]), a, b)
    assert_close_to_cpu(lambda x, y: torch.where(x[1:] > y[1:], x[1:], y[1:]), a, b)
    if dtype != torch.bool:
        assert_close_to_cpu(lambda x, y: x[3:] * y[:-3], a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("n", [1, 3, 4, 6, 1029])
@pytest.mark.parametrize("off", range(4))
def test_quad_path_alignments_and_tails(dtype, n, off):
    # Contiguous floats go four to a thread when every operand starts on a
    # four-element boundary, element-wise otherwise: each start offset and
    # ragged tail must give the CPU's answer.
    a, b, c = (make(n + 3, dtype) for _ in range(3))
    s, t = slice(off, off + n), slice(3 - off, 3 - off + n)
    assert_close_to_cpu(lambda p, q, r: p[s] + q[s], a, b, c)
    assert_close_to_cpu(lambda p, q, r: torch.addcmul(p[s], q[s], r[s], value=0.5), a, b, c)
    assert_close_to_cpu(lambda p, q, r: 2.0 - torch.sigmoid(p[s]), a, b, c)
    assert_close_to_cpu(lambda p, q, r: p[s] + torch.arange(n, device=p.device), a, b, c)
    assert_close_to_cpu(lambda p, q, r: p[s] * q[t], a, b, c)


# -------------------------------------------------------------- in-place


def _inplace(method, *args, **kwargs):
    def fn(a, *tensors):
        result = getattr(a, method)(*tensors, *args, **kwargs)
        assert result is a, f"{method} must return self"
        return a

    return fn


@pytest.mark.parametrize("dtype", NO_BOOL, ids=dtype_id)
def test_inplace_ops(dtype):
    a, b = make((4, 5), dtype), make((4, 5), dtype)
    row = make((5,), dtype)
    s = scalar_for(dtype)
    assert_close_to_cpu(_inplace("add_"), a, b)
    assert_close_to_cpu(_inplace("add_", alpha=2), a, b)
    assert_close_to_cpu(_inplace("add_"), a, row)  # broadcast other
    assert_close_to_cpu(_inplace("add_", s), a)
    assert_close_to_cpu(_inplace("mul_"), a, b)
    assert_close_to_cpu(_inplace("mul_", s), a)
    assert_close_to_cpu(_inplace("clamp_", min=-2), a)
    assert_close_to_cpu(_inplace("clamp_", max=3), a)
    assert_close_to_cpu(_inplace("clamp_", -2, 3), a)


@pytest.mark.parametrize("method", ["add_", "mul_"])
def test_inplace_on_views_writes_base(method):
    base, other = make((5, 4)), make((4, 5))

    def fn(x, y):
        view = x.t()
        getattr(view, method)(y)
        x[::2, 1].clamp_(-0.5, 0.5)
        return x

    assert_close_to_cpu(fn, base, other)


def test_inplace_promotion_rules():
    half, full = make((3, 4), torch.float16), make((3, 4))
    assert_close_to_cpu(_inplace("add_"), half, full)  # float -> half is fine
    assert_close_to_cpu(_inplace("mul_"), full, make((3, 4), torch.int32))
    integer = make((3, 4), torch.int64)
    assert_raises_like_cpu(lambda a, b: a.add_(b), integer, full)
    assert_raises_like_cpu(lambda a: a.mul_(2.5), integer)


# ----------------------------------------------------------------- out=

OUT_OPS = {
    "add": (lambda a, b, out: torch.add(a, b, alpha=2, out=out), torch.float32),
    "sub": (lambda a, b, out: torch.sub(a, b, out=out), torch.float32),
    "mul": (lambda a, b, out: torch.mul(a, b, out=out), torch.float32),
    "div": (lambda a, b, out: torch.div(a, b, out=out), torch.float32),
    "maximum": (lambda a, b, out: torch.maximum(a, b, out=out), torch.float32),
    "exp": (lambda a, b, out: torch.exp(a, out=out), torch.float32),
    "sqrt": (lambda a, b, out: torch.sqrt(a.abs(), out=out), torch.float32),
    "clamp": (lambda a, b, out: torch.clamp(a, -1, 1, out=out), torch.float32),
    "eq": (lambda a, b, out: torch.eq(a, b, out=out), torch.bool),
    "where": (lambda a, b, out: torch.where(a > b, a, b, out=out), torch.float32),
}


@pytest.mark.parametrize("out_kind", ["same_shape", "empty", "noncontiguous"])
@pytest.mark.parametrize("name", list(OUT_OPS))
def test_out_variants(name, out_kind):
    fn, out_dtype = OUT_OPS[name]
    a, b = make((4, 5), nonzero=True), make((4, 5), nonzero=True)

    def run(x, y):
        device = x.device
        if out_kind == "same_shape":
            out = torch.full((4, 5), 7, dtype=out_dtype, device=device)
            storage = out
        elif out_kind == "empty":
            out = torch.empty(0, dtype=out_dtype, device=device)
            storage = out
        else:
            storage = torch.full((5, 4), 7, dtype=out_dtype, device=device)
            out = storage.t()
        result = fn(x, y, out)
        assert result is out
        return result, storage

    assert_close_to_cpu(run, a, b)


def test_true_division_of_ints_gives_float():
    a = torch.tensor([7, -7, 1, 0], dtype=torch.int32)
    b = torch.tensor([2, 2, 3, 5], dtype=torch.int32)
    _, vk = assert_close_to_cpu(torch.div, a, b)
    assert vk.dtype == torch.float32
    assert vk.cpu().tolist() == pytest.approx([3.5, -3.5, 1 / 3, 0.0])


# ---------------------------------------------------------------- bfloat16

BF16 = dict(atol=1e-2, rtol=1.6e-2)  # bfloat16 has 8 significant bits


def test_bfloat16_storage_and_creation():
    a, b = make((4, 5), torch.bfloat16), make((4, 5), torch.bfloat16)
    assert_close_to_cpu(torch.add, a, b, **BF16)
    assert_close_to_cpu(torch.mul, a, b, **BF16)
    assert_close_to_cpu(lambda x, y: x.t() - y.t(), a, b, **BF16)
    assert_close_to_cpu(torch.lt, a, b)
    assert_close_to_cpu(torch.eq, a, a)
    assert_close_to_cpu(lambda x: x + 2.5, a, **BF16)
    assert_close_to_cpu(lambda x: x.add_(1), a, **BF16)
    assert_close_to_cpu(lambda x: torch.clamp(x, -1, 1), a)
    assert_close_to_cpu(torch.relu, a)
    assert_close_to_cpu(torch.maximum, a, b)
    # rounding: 1 + 2^-9 is halfway between bfloat16 neighbours
    assert_close_to_cpu(lambda x: x + 2**-9, torch.ones(3, dtype=torch.bfloat16), atol=0, rtol=0)
    assert_factory_same(lambda d: torch.full((3, 4), 1.7, dtype=torch.bfloat16, device=d))
    assert_factory_same(lambda d: torch.zeros(5, dtype=torch.bfloat16, device=d))
    assert_factory_same(lambda d: torch.arange(0, 10, 0.5, dtype=torch.bfloat16, device=d))
    assert_factory_same(lambda d: torch.arange(7, dtype=torch.bfloat16, device=d))


def assert_factory_same(fn):
    expected = fn(torch.device("cpu"))
    actual = fn(torch.device(VKML))
    assert_same(actual, expected, atol=0, rtol=0)


def test_bfloat16_odd_sizes_and_offsets():
    # 16-bit outputs written by neighbouring threads
    n = 100_003
    a, b = make(n + 3, torch.bfloat16), make(n + 3, torch.bfloat16)
    assert_close_to_cpu(lambda x, y: x[3:] * y[:-3], a, b, **BF16)
    assert_close_to_cpu(lambda x, y: torch.where(x[1:] > y[1:], x[1:], y[1:]), a, b)


def test_bfloat16_promotion():
    bf, h = make((3, 4), torch.bfloat16), make((3, 4), torch.float16)
    i, f = make((3, 4), torch.int32), make((3, 4))
    assert_close_to_cpu(torch.add, bf, h)  # -> float32
    assert_close_to_cpu(torch.add, bf, i, **BF16)  # -> bfloat16
    assert_close_to_cpu(torch.mul, bf, f)
    assert_close_to_cpu(lambda x: x * torch.tensor(2.5), bf, **BF16)
    assert_close_to_cpu(lambda x, y: x.mul_(y), bf, f, **BF16)
    assert_close_to_cpu(torch.div, i, bf.abs() + 1, **BF16)


def test_bfloat16_random():
    torch.manual_seed(0)
    x = torch.rand(2000, dtype=torch.bfloat16, device=VKML)
    assert x.dtype == torch.bfloat16
    xc = x.cpu().float()
    assert 0 <= xc.min() and xc.max() < 1 and abs(xc.mean().item() - 0.5) < 0.05
    n = torch.randn(2000, dtype=torch.bfloat16, device=VKML).cpu().float()
    assert abs(n.mean().item()) < 0.1 and abs(n.std().item() - 1) < 0.1
    r = torch.randint(-3, 5, (500,), dtype=torch.bfloat16, device=VKML).cpu().float()
    assert r.min() >= -3 and r.max() <= 4 and torch.equal(r, r.round())
    p = torch.empty(2000, dtype=torch.bfloat16, device=VKML).bernoulli_(0.3).cpu().float()
    assert set(p.unique().tolist()) <= {0.0, 1.0} and abs(p.mean().item() - 0.3) < 0.05


# ---------------------------------------------------------------- float64


F64 = dict(atol=1e-12, rtol=1e-12)


def test_float64_native_ops():
    a, b = make((4, 5), torch.float64), make((4, 5), torch.float64, nonzero=True)
    c = make((5,), torch.float64)
    for fn in (
        torch.add,
        torch.sub,
        torch.mul,
        torch.div,
        torch.maximum,
        torch.minimum,
        torch.fmax,
        torch.fmin,
        torch.lt,
        torch.eq,
        torch.remainder,
        torch.fmod,
        torch.copysign,
        torch.floor_divide,
        lambda x, y: torch.div(x, y, rounding_mode="trunc"),
    ):
        assert_close_to_cpu(fn, a, b, **F64)
    for fn in (
        torch.abs,
        torch.neg,
        torch.sqrt,
        torch.rsqrt,
        torch.floor,
        torch.ceil,
        torch.round,
        torch.trunc,
        torch.frac,
        torch.sign,
        torch.reciprocal,
        torch.relu,
        torch.isnan,
        torch.signbit,
        F.hardswish,
        F.hardsigmoid,
        F.relu6,
        F.leaky_relu,
        F.softshrink,
        F.hardshrink,
        lambda t: F.threshold(t, 0.1, 20.0),
        lambda t: torch.round(t, decimals=3),
        lambda t: torch.clamp(t, -1, 1),
    ):
        assert_close_to_cpu(
            lambda t, fn=fn: fn(t.abs() + 1e-3 if fn in (torch.sqrt, torch.rsqrt) else t), a, **F64
        )
    assert_close_to_cpu(lambda x, y, z: torch.addcmul(x, y, z, value=0.5), a, b, c, **F64)
    assert_close_to_cpu(lambda x, y, z: torch.lerp(x, y, z), a, b, c, **F64)
    assert_close_to_cpu(lambda x, y: torch.where(x > 0, x, y), a, b, **F64)
    # more precise than float32 could be
    x = torch.tensor([1 + 1e-12, 1e300, 1e-300], dtype=torch.float64)
    assert_close_to_cpu(lambda t: t * 3 - 1, x, atol=0, rtol=1e-15)
    assert_close_to_cpu(torch.sqrt, x, atol=0, rtol=1e-15)
    x = make((4, 6), torch.float64).requires_grad_()
    assert_grads_close_to_cpu(lambda t: (F.hardtanh(t) * t).relu(), x, **F64)
    assert_grads_close_to_cpu(lambda t: F.leaky_relu(F.softshrink(t), 0.1), x, **F64)
    assert_grads_close_to_cpu(lambda t: F.hardswish(F.hardshrink(t, 0.3)), x, **F64)


def test_float64_transcendentals_run_on_cpu(monkeypatch):
    # float64 Bessel functions, ndtri, ... have no kernels: they take the counted CPU
    # route, never fp32 (exp/log, trigonometry, pow, erf, erfinv, lgamma, digamma,
    # polygamma, zeta and the activations have float64 kernels: below)
    x = make((3, 4), torch.float64, low=0.1, high=2)
    for fn, name in (
        (torch.special.ndtri, "aten::special_ndtri"),
        (torch.special.i0e, "aten::special_i0e"),
        (torch.special.i1, "aten::special_i1"),
    ):
        torch_vkml.reset_fallback_counts()
        monkeypatch.setenv("TORCH_VKML_FALLBACK", "silent")
        assert_close_to_cpu(fn, x, **F64)
        counts = torch_vkml.fallback_counts()
        assert counts.get(name, 0) >= 1, counts
        monkeypatch.setenv("TORCH_VKML_FALLBACK", "error")
        with pytest.raises(NotImplementedError):
            fn(x.to(VKML))
        monkeypatch.setenv("TORCH_VKML_FALLBACK", "warn")
        torch_vkml.reset_fallback_counts()


F64_ACTIVATIONS = {
    "softplus": lambda t: F.softplus(t),
    "softplus_beta_threshold": lambda t: F.softplus(t, beta=2.5, threshold=7.0),
    "elu": lambda t: F.elu(t, alpha=0.7),
    "selu": F.selu,
    "celu": lambda t: F.celu(t, 1.3),
    "elu_inplace": lambda t: F.elu(t * 1, inplace=True),
    "logit": lambda t: torch.logit(torch.sigmoid(t)),
    "logit_eps": lambda t: torch.logit(torch.sigmoid(t), eps=1e-3),
}


@pytest.mark.parametrize("name", sorted(F64_ACTIVATIONS))
def test_float64_activations_with_parameters_run_on_the_device(name):
    """softplus, elu (selu, celu) and logit take float parameters: the float64 kernels read
    them as doubles (dparam), so these run on the device in double, forward and backward
    (gpytorch's positive constraints are softplus, in float64 under botorch)."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    fn = F64_ACTIVATIONS[name]
    _, wide = _f64_samples(6)
    torch_vkml.reset_fallback_counts()
    assert_grads_close_to_cpu(fn, wide.requires_grad_(), atol=1e-300, rtol=4e-15)
    assert torch_vkml.fallback_counts() == {}


def _f64_samples(seed):
    gen = torch.Generator().manual_seed(seed)
    positive = torch.cat(
        [
            torch.rand(1500, generator=gen, dtype=torch.float64) * 10,
            torch.rand(500, generator=gen, dtype=torch.float64) * 1e-3,
            torch.tensor([5e-324, 1e-310, 1e-300, 0.5, 1.0, 2.0, 1e300], dtype=torch.float64),
        ]
    )
    wide = torch.cat(
        [
            torch.randn(1500, generator=gen, dtype=torch.float64) * 3,
            torch.linspace(-30, 30, 507, dtype=torch.float64),
        ]
    )
    return positive, wide


# Each op's reference on the CPU; inputs: positive (x > 0, subnormals included) and wide
# (normal(0, 3) and [-30, 30]). Tolerances: ulps of the result (eps = 2.2e-16), and an
# absolute floor where the result is a difference of terms larger than itself (the CPU's
# own rounding there is ~eps x the terms): logaddexp near 0, gelu and sinc near their
# zeros, which vkml computes from erfc and a reduced argument, the CPU with cancellation.
F64_KERNELS = {
    "pow": (lambda p, w: torch.pow(p, w.clamp(-25, 25)), dict(rtol=4e-15, atol=0)),
    "pow_scalar_exponent": (lambda p, w: torch.pow(p, -2.7), dict(rtol=2e-15, atol=0)),
    "pow_scalar_base": (lambda p, w: torch.pow(2.5, w), dict(rtol=4e-15, atol=0)),
    "pow_negative_base": (lambda p, w: torch.pow(-p, w.round()), dict(rtol=4e-15, atol=0)),
    "erf": (lambda p, w: torch.erf(w), dict(rtol=2e-15, atol=0)),
    "erfc": (lambda p, w: torch.erfc(w), dict(rtol=2e-15, atol=0)),
    "gelu": (lambda p, w: F.gelu(w), dict(rtol=2e-15, atol=1e-15)),
    "xlogy": (lambda p, w: torch.xlogy(w[: p.numel()], p), dict(rtol=2e-15, atol=0)),
    "xlog1py": (lambda p, w: torch.special.xlog1py(w[: p.numel()], p), dict(rtol=2e-15, atol=0)),
    "logaddexp": (lambda p, w: torch.logaddexp(w, w.flip(0)), dict(rtol=2e-15, atol=1e-14)),
    "logaddexp2": (lambda p, w: torch.logaddexp2(w, w.flip(0)), dict(rtol=2e-15, atol=1e-14)),
    "sinc": (lambda p, w: torch.sinc(w), dict(rtol=2e-15, atol=1e-15)),
    "entr": (lambda p, w: torch.special.entr(torch.cat([p, -p])), dict(rtol=2e-15, atol=0)),
    "glu": (lambda p, w: F.glu(w[:2000].reshape(-1, 2)), dict(rtol=2e-15, atol=0)),
}


@pytest.mark.parametrize("name", sorted(F64_KERNELS))
def test_float64_pow_erf_and_log_sums_run_on_the_device(name):
    """pow, erf/erfc/gelu, the x log y and log-sum-exp pairs, sinc, entr and glu have
    float64 kernels (f64_pow_erf.glsl): no CPU route, within a few ulps of the CPU. pow
    sums y log x in two doubles (else |y log x| ulps are lost); erfc's continued fraction
    is summed from its tail."""
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    fn, tol = F64_KERNELS[name]
    positive, wide = _f64_samples(5)
    torch_vkml.reset_fallback_counts()
    got = fn(positive.to(VKML), wide.to(VKML)).cpu()
    assert torch_vkml.fallback_counts() == {}
    torch.testing.assert_close(got, fn(positive, wide), equal_nan=True, **tol)


def _mpmath_at_40_digits(seed):
    """mpmath set to 40 digits and a seeded generator, for float64 references; an xfail
    on a device without float64 arithmetic."""
    import mpmath

    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    mpmath.mp.dps = 40
    return mpmath, torch.Generator().manual_seed(seed)


def test_float64_lgamma_and_digamma():
    """float64 lgamma (Taylor series about 2 below 15, Stirling above, reflection below
    1/2) and digamma (f64_gamma.glsl) on the device, against 40-digit references: lgamma
    within 4e-15 relative (its zeros at 1 and 2 exact), digamma too, where the CPU's own
    is off by up to 3e-8 near the poles (it reflects through tan(pi x) of a rounded pi x).
    torch.distributions' float64 log-densities and their gradients need both."""
    mpmath, gen = _mpmath_at_40_digits(seed=3)
    x = torch.cat(
        [
            torch.rand(600, generator=gen, dtype=torch.float64) * 60 - 30,
            torch.rand(300, generator=gen, dtype=torch.float64) * 4 - 1,
            torch.exp(torch.rand(300, generator=gen, dtype=torch.float64) * 200 - 100),
            torch.tensor(
                [1.0, 2.0, 1.5, 2.5, 14.999999, 15.0, 0.5, 1e-300, -1e-300, 1e300],
                dtype=torch.float64,
            ),
        ]
    )
    torch_vkml.reset_fallback_counts()
    got_lgamma = torch.lgamma(x.to(VKML)).cpu()
    got_digamma = torch.digamma(x.to(VKML)).cpu()
    got_polygamma0 = torch.polygamma(0, x.to(VKML)).cpu()
    assert torch_vkml.fallback_counts() == {}
    for got, exact in (
        (got_lgamma, lambda t: mpmath.log(abs(mpmath.gamma(t)))),
        (got_digamma, mpmath.digamma),
    ):
        ref = torch.tensor([float(exact(mpmath.mpf(t))) for t in x.tolist()], dtype=torch.float64)
        torch.testing.assert_close(got, ref, rtol=4e-15, atol=2e-15)
    assert got_lgamma[x == 1.0].item() == 0.0 and got_lgamma[x == 2.0].item() == 0.0
    torch.testing.assert_close(got_polygamma0, got_digamma, rtol=0, atol=0)
    # Poles, signed zeros, infinities and NaN as on the CPU; the gradient of lgamma.
    edge = torch.tensor([0.0, -0.0, -1.0, -7.0, INF, -INF, NAN, -2.5], dtype=torch.float64)
    assert_close_to_cpu(lambda t: torch.stack([torch.lgamma(t), torch.digamma(t)]), edge)
    leaf = make(50, torch.float64, low=0.1, high=20).requires_grad_()
    assert_grads_close_to_cpu(torch.lgamma, leaf, rtol=1e-13, atol=1e-14)


def test_float64_polygamma_and_zeta():
    """float64 trigamma, polygamma of higher orders and Hurwitz's zeta on the device
    (f64_gamma.glsl), against 40-digit references: trigamma within 1e-14 (the CPU's is
    off by up to 4e-10), the others by the CPU's methods in double, as close as it is.
    digamma's backward is trigamma."""
    mpmath, gen = _mpmath_at_40_digits(seed=5)
    x = torch.cat(
        [
            torch.rand(200, generator=gen, dtype=torch.float64) * 30 + 0.05,
            torch.rand(100, generator=gen, dtype=torch.float64) * 6 - 6.0,
        ]
    )
    x = x[(x - x.round()).abs() > 1e-3]  # away from the poles
    torch_vkml.reset_fallback_counts()
    got = {n: torch.polygamma(n, x.to(VKML)).cpu() for n in (1, 2, 3, 5)}
    q = x[x > 0]
    got_zeta = torch.special.zeta(torch.full_like(q, 3.5).to(VKML), q.to(VKML)).cpu()
    assert torch_vkml.fallback_counts() == {}
    for n, values in got.items():
        ref = torch.tensor([float(mpmath.polygamma(n, t)) for t in x.tolist()], dtype=torch.float64)
        tol = 1e-14 if n == 1 else 1e-12
        torch.testing.assert_close(values, ref, rtol=tol, atol=0, msg=f"polygamma({n})")
    ref = torch.tensor([float(mpmath.zeta(3.5, t)) for t in q.tolist()], dtype=torch.float64)
    torch.testing.assert_close(got_zeta, ref, rtol=1e-13, atol=0)
    edge = torch.tensor([INF, -INF, NAN, 1e-300, 1e300, 0.5], dtype=torch.float64)
    assert_close_to_cpu(lambda t: torch.stack([torch.polygamma(1, t), torch.polygamma(3, t)]), edge)
    leaf = make(40, torch.float64, low=0.1, high=9).requires_grad_()
    assert_grads_close_to_cpu(torch.digamma, leaf, rtol=1e-9, atol=0)  # the CPU's trigamma


def test_float64_erfcx_and_log_ndtr():
    """float64 erfcx (erfc's continued fraction without its exp(-x^2), the reflection with
    exp(x^2) from x^2 in two parts below 0) and log_ndtr through it (f64_pow_erf.glsl)
    against 40-digit references: within 4e-15 relative, where the CPU's erfcx is off by
    up to 5e-14 (botorch's LogEI and LogPI, in float64, call both)."""
    mpmath, gen = _mpmath_at_40_digits(seed=4)
    x = torch.cat(
        [
            torch.randn(800, generator=gen, dtype=torch.float64) * 4,
            torch.linspace(-26.6, 8, 300, dtype=torch.float64),
            torch.tensor([0.0, 0.7499999, 0.75, 1e-10, -1e-10, 1e5, 1e8], dtype=torch.float64),
        ]
    )
    torch_vkml.reset_fallback_counts()
    got_erfcx = torch.special.erfcx(x.to(VKML)).cpu()
    got_log_ndtr = torch.special.log_ndtr(x.to(VKML)).cpu()
    assert torch_vkml.fallback_counts() == {}
    ref = torch.tensor(
        [float(mpmath.exp(t * t) * mpmath.erfc(t)) for t in map(mpmath.mpf, x.tolist())],
        dtype=torch.float64,
    )
    torch.testing.assert_close(got_erfcx, ref, rtol=4e-15, atol=0)
    # log_ndtr of x is erfc's at t = x / sqrt(2), rounded: from that t (its rounding alone
    # moves erfc by 2 t^2 ulps, on the CPU as here), with log1p where the CDF is near 1.
    t = (x * 0.70710678118654752440).tolist()
    ref = torch.tensor(
        [
            float(mpmath.log(mpmath.erfc(-v) / 2) if v < 0 else mpmath.log1p(-mpmath.erfc(v) / 2))
            for v in map(mpmath.mpf, t)
        ],
        dtype=torch.float64,
    )
    torch.testing.assert_close(got_log_ndtr, ref, rtol=4e-15, atol=0)
    edge = torch.tensor([-27.0, 1e300, INF, -INF, NAN, -0.0], dtype=torch.float64)
    assert_close_to_cpu(
        lambda t: torch.stack([torch.special.erfcx(t), torch.special.log_ndtr(t)]), edge
    )
    leaf = make(50, torch.float64, low=-5, high=5).requires_grad_()
    assert_grads_close_to_cpu(torch.special.log_ndtr, leaf, rtol=1e-13, atol=1e-300)


def test_float64_erfinv():
    """float64 erfinv (f64_pow_erf.glsl: a float-accurate estimate, then Halley steps on erf
    below 1/2, Newton steps on log erfc of the exact complement above) against 40-digit
    references, within 4e-15 relative, down to the last doubles below 1 and the
    subnormals; edges and the gradient as on the CPU. torch.nn.init.trunc_normal_ of a
    float64 tensor needs it."""
    mpmath, gen = _mpmath_at_40_digits(seed=4)
    y = torch.cat(
        [
            torch.rand(800, generator=gen, dtype=torch.float64) * 2 - 1,
            1 - torch.exp(-torch.rand(300, generator=gen, dtype=torch.float64) * 36),
            torch.exp(-torch.rand(200, generator=gen, dtype=torch.float64) * 700),
            torch.tensor(
                [0.5, -0.5, 0.4999999999, 1 - 2**-53, -(1 - 2**-53), 1 - 2**-52, 5e-324, 1e-200],
                dtype=torch.float64,
            ),
        ]
    )
    torch_vkml.reset_fallback_counts()
    got = torch.erfinv(y.to(VKML)).cpu()
    assert torch_vkml.fallback_counts() == {}
    ref = torch.tensor(
        [float(mpmath.erfinv(mpmath.mpf(t))) for t in y.tolist()], dtype=torch.float64
    )
    torch.testing.assert_close(got, ref, rtol=4e-15, atol=0)
    edge = torch.tensor([0.0, -0.0, 1.0, -1.0, 1.5, -2.0, INF, NAN], dtype=torch.float64)
    assert_close_to_cpu(torch.erfinv, edge)
    assert str(torch.erfinv(torch.tensor(-0.0, dtype=torch.float64, device=VKML)).item()) == "-0.0"
    leaf = make(50, torch.float64, low=-0.99, high=0.99).requires_grad_()
    assert_grads_close_to_cpu(torch.erfinv, leaf, rtol=1e-13, atol=1e-14)
    assert torch_vkml.fallback_counts() == {}


def test_float64_pow_and_erf_special_values_and_grads():
    if not torch_vkml.get_device_properties(0).supports_fp64:
        pytest.xfail("the device has no float64 arithmetic")
    v = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 2.0, -2.0, 0.5, 3.0, -3.0, 1e300, 1e-310]
    base = torch.tensor(v, dtype=torch.float64).repeat_interleave(len(v))
    exponent = torch.tensor(v, dtype=torch.float64).repeat(len(v))
    # C's pow: signs of zero and infinity from odd integer exponents, NaN for negative
    # bases to fractional powers, 1 for 1 ** NaN and NaN ** 0.
    assert_close_to_cpu(torch.pow, base, exponent, atol=0, rtol=2e-15)
    # erf and erfc where their pieces meet (series, 1 - series, continued fraction) and end
    edges = torch.tensor([0.0, 27.3, 27.4, 6.0, -6.0, 0.75, -0.75, 1.0, -1.0], dtype=torch.float64)
    both = lambda t: torch.stack([torch.erf(t), torch.erfc(t)])  # noqa: E731
    assert_close_to_cpu(both, edges, atol=0, rtol=2e-15)
    # exact results at large exponents: |y log x| ~ 700 ulps if log x were rounded
    x = torch.tensor([2.0, 10.0, 0.5, 1.0625], dtype=torch.float64)
    y = torch.tensor([1000.0, -300.0, 1070.0, 10000.0], dtype=torch.float64)
    assert_close_to_cpu(torch.pow, x, y, atol=0, rtol=2e-15)
    t = make((6, 8), torch.float64).requires_grad_()
    torch_vkml.reset_fallback_counts()
    for fn in (F.gelu, torch.erfc, F.glu, lambda u: torch.pow(u.abs() + 0.1, u), torch.sinc):
        assert_grads_close_to_cpu(fn, t, atol=1e-14, rtol=1e-13)
    assert torch_vkml.fallback_counts() == {}


def test_float64_common_powers_are_native():
    x = make((3, 4), torch.float64, low=0.5, high=3)
    for e in (2, 3, 0.5, -0.5, -1, -2):
        assert_close_to_cpu(lambda t, e=e: t**e, x, **F64)
    assert_close_to_cpu(torch.square, x, **F64)


def test_float64_special_values():
    x = torch.tensor([-INF, INF, NAN, -0.0, 0.0, 1e-300, -2.5, 2.5, 3.5], dtype=torch.float64)
    for fn in (
        torch.floor,
        torch.ceil,
        torch.round,
        torch.trunc,
        torch.sign,
        torch.isinf,
        torch.isfinite,
        torch.signbit,
        torch.abs,
        torch.frac,
    ):
        assert_close_to_cpu(fn, x, **F64)
    assert_close_to_cpu(torch.fmax, x, x.flip(0), **F64)
    assert_close_to_cpu(torch.nan_to_num, x, **F64)
    assert_close_to_cpu(lambda t: torch.nan_to_num(t, 1.0, 2.0, -3.0), x, **F64)
    assert_close_to_cpu(torch.remainder, x, torch.full_like(x, -1.5), **F64)
