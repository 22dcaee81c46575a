"""out= arguments of another dtype or on another device, against the CPU.

A sweep over op_db's out= variants found vkml casting silently where the CPU raises (114
ops), writing the GEMMs' bytes into an out of another dtype (garbage: mm, bmm, addmm,
baddbmm, linear), and writing into an out on the CPU (98 ops; CUDA raises). The rule
now: where the CPU raises, vkml raises the same exception type and writes nothing; where
the CPU casts (into a dtype no value is lost in), vkml gives the CPU's values."""

import pytest
import torch
from conftest import VKML, make

A = make((4, 5))
B = make((5, 3))
SQUARE = make((4, 4)) @ make((4, 4)).mT + 4 * torch.eye(4)  # positive definite
BATCH = make((2, 3, 4))
INDEX = torch.tensor([[0, 2, 1], [3, 0, 0]])

# name -> (fn(out, device) writing into out, the result's dtype)
CASES = {
    "mm": (lambda out, d: torch.mm(A.to(d), B.to(d), out=out), torch.float32),
    "bmm": (lambda out, d: torch.bmm(BATCH.to(d), BATCH.mT.to(d), out=out), torch.float32),
    "addmm": (lambda out, d: torch.addmm(B[0].to(d), A.to(d), B.to(d), out=out), torch.float32),
    "mv": (lambda out, d: torch.mv(A.to(d), B[:, 0].to(d), out=out), torch.float32),
    "gather": (lambda out, d: torch.gather(A.to(d), 1, INDEX.to(d), out=out), torch.float32),
    "index_select": (
        lambda out, d: torch.index_select(A.to(d), 0, INDEX[0].to(d), out=out),
        torch.float32,
    ),
    "take": (lambda out, d: torch.take(A.to(d), INDEX.to(d), out=out), torch.float32),
    "softmax": (lambda out, d: torch.softmax(A.to(d), 1, out=out), torch.float32),
    "argmax": (lambda out, d: torch.argmax(A.to(d), 1, out=out), torch.int64),
    "abs": (lambda out, d: torch.abs(A.to(d), out=out), torch.float32),
    "floor": (lambda out, d: torch.floor(A.to(d), out=out), torch.float32),
    "where": (
        lambda out, d: torch.where(A.to(d) > 0, A.to(d), torch.zeros((), device=d), out=out),
        torch.float32,
    ),
    "isin": (lambda out, d: torch.isin(A.to(d), A[0].to(d), out=out), torch.bool),
    "nonzero": (lambda out, d: torch.nonzero(A.to(d) > 0, out=out), torch.int64),
    "linalg.inv": (lambda out, d: torch.linalg.inv(SQUARE.to(d), out=out), torch.float32),
    # castable: the CPU writes a float32 result into a float64 out, never into int64
    "std": (lambda out, d: torch.std(A.to(d), 1, out=out), torch.float32),
    "cholesky": (lambda out, d: torch.linalg.cholesky(SQUARE.to(d), out=out), torch.float32),
    "add": (lambda out, d: torch.add(A.to(d), 1, out=out), torch.float32),
}


def outcome(fn, out, device):
    """("raised", exception type) or ("ok", what was written)."""
    try:
        fn(out, device)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return "raised", type(e)
    return "ok", out.cpu()


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("wrong", [torch.float64, torch.int64, torch.float32, torch.int32])
@pytest.mark.parametrize("name", list(CASES))
def test_out_of_another_dtype_as_on_the_cpu(name, wrong):
    fn, dtype = CASES[name]
    if wrong == dtype:
        wrong = torch.int16
    want = outcome(fn, torch.full((2,), 7, dtype=wrong), "cpu")
    out = torch.full((2,), 7, dtype=wrong, device=VKML)
    got = outcome(fn, out, VKML)
    assert got[0] == want[0], f"CPU {want}, vkml {got}"
    if want[0] == "raised":
        assert got[1] is want[1]
        assert out.cpu().tolist() == [7, 7], "an out was written before the error"
    else:
        torch.testing.assert_close(got[1], want[1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_out_on_the_cpu_raises(name):
    """CUDA never writes a device result into a CPU tensor; vkml raises as it does."""
    fn, dtype = CASES[name]
    out = torch.full((2,), 7, dtype=dtype)
    with pytest.raises(RuntimeError):
        fn(out, VKML)
    assert out.tolist() == torch.full((2,), 7, dtype=dtype).tolist()


def test_tuple_outs_are_checked_before_any_is_written():
    x = A.to(VKML)
    values = torch.full((2,), 7.0, device=VKML)
    indices = torch.full((2,), 7.0, device=VKML)  # should be int64
    with pytest.raises(RuntimeError):
        torch.max(x, 1, out=(values, indices))
    assert values.cpu().tolist() == [7.0, 7.0]
    vectors = torch.full((2,), 7.0, dtype=torch.float64, device=VKML)
    with pytest.raises(RuntimeError):
        torch.linalg.eigh(SQUARE.to(VKML), out=(values, vectors))
    assert values.cpu().tolist() == [7.0, 7.0]
    values, indices = torch.empty(0, device=VKML), torch.empty(0, dtype=torch.long, device=VKML)
    torch.max(x, 1, out=(values, indices))
    want = torch.max(A, 1)
    assert torch.equal(values.cpu(), want.values) and torch.equal(indices.cpu(), want.indices)


def test_complex_and_polar_take_only_their_complex_out_dtype():
    # They cast into a complex128 out of float32 parts; the CPU raises.
    for fn in (torch.complex, torch.polar):
        for dev in ("cpu", VKML):
            a, b = torch.ones(2, device=dev), torch.ones(2, device=dev)
            with pytest.raises(RuntimeError, match="for argument 'out'"):
                fn(a, b, out=torch.empty(2, dtype=torch.complex128, device=dev))
        out = torch.empty(0, dtype=torch.complex64, device=VKML)
        fn(torch.ones(2, device=VKML), torch.full((2,), 0.5, device=VKML), out=out)
        torch.testing.assert_close(out.cpu(), fn(torch.ones(2), torch.full((2,), 0.5)))
