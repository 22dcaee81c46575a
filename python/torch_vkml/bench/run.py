"""One case on one backend, measured: the part of the bench that needs no torch_vkml, so
that the baseline process (baseline_process.py) runs it too."""

from __future__ import annotations

import gc
from collections.abc import Callable

from .cases import Case
from .timing import Backend, Plan, measure, measure_host_overhead


def head(e: BaseException) -> str:
    """The exception's type and first line: what a table cell can hold."""
    text = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {text}"[:120]


def unsupported(e: BaseException) -> bool:
    text = str(e).lower()
    return (
        isinstance(e, NotImplementedError) or "not supported" in text or ("not implemented" in text)
    )


def run_on(
    case: Case,
    backend: Backend,
    plan: Plan,
    host_reps: int,
    probe: Callable[[Callable[[], object]], dict] | None = None,
) -> dict:
    """Figure, timing statistics and status of `case` on `backend`; `probe(fn)` adds
    fields measured on the set-up case (the vkml engine counts)."""
    res: dict = {"status": "ok"}
    fn = None
    try:
        fn = case.setup(backend.device)
        if case.clock == "host":
            t = measure_host_overhead(fn, backend, case.inner, host_reps)
            primary = t["thread"]
        else:
            t = measure(fn, backend, plan, case.inner)
            primary = t["device"] if case.clock == "device" else t["wall"]
        res.update(t)
        res["time_s"] = primary["median"]
        res["value"] = case.value(primary["median"])
        res["spread"] = (primary["q3"] - primary["q1"]) / primary["median"]
        if probe is not None:
            res.update(probe(fn))
    except Exception as e:  # a failing case is reported, never fatal
        res = {"status": "n/a" if unsupported(e) else "error", "message": head(e)}
    finally:
        del fn
        gc.collect()
        try:
            backend.sync()
            backend.empty_cache()
        except Exception as e:
            res.setdefault("message", head(e))
    return res
