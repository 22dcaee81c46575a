"""python -m torch_vkml.bench [--quick | --smoke] [--cases PATTERNS] [--device-index I]
python -m torch_vkml.bench --distributed [--quick | --smoke]

Runs each case on vkml and on the baselines (PyTorch CPU always, in this process; CUDA
when available, in a child process that has not imported torch_vkml) and writes
results/<device>-<time>/{results.json, ratios.png} plus a table. With --distributed it
measures torch.distributed on vkml instead (bench/distributed.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import fnmatch
import json
import os
import platform
import re
import signal
import sys
import textwrap
import time
from pathlib import Path

# Ops without a vkml kernel run on the CPU; count them per case instead of warning.
os.environ.setdefault("TORCH_VKML_FALLBACK", "silent")

import torch  # noqa: E402

import torch_vkml  # noqa: E402

from . import cases as case_lib  # noqa: E402
from . import run  # noqa: E402
from .baseline_process import BaselineProcess  # noqa: E402
from .report import format_table, plot, write_json  # noqa: E402
from .timing import Backend, Plan  # noqa: E402

PLANS = {
    # profile: (micro plan, model plan, host-overhead repetitions)
    "smoke": (Plan(0, 1, 1, 0.0), Plan(0, 1, 1, 0.0), 1),
    "quick": (Plan(1, 3, 7, 0.3), Plan(1, 2, 3, 0.5), 3),
    "full": (Plan(2, 5, 25, 0.5), Plan(1, 2, 10, 2.0), 5),
}
# The CPU baseline beside CUDA (the GPU machine): CUDA is the comparison that matters there,
# and full CPU repetitions of the big cases would take the time the GPU cases need.
CPU_BESIDE_CUDA = Plan(1, 2, 3, 0.0)


def plan_for(case: case_lib.Case, backend: str, baselines: list[str], plans) -> Plan:
    micro_plan, model_plan, _ = plans
    plan = micro_plan if case.group == "micro" else model_plan
    if backend == "cpu" and "cuda" in baselines and plan.max_reps > CPU_BESIDE_CUDA.max_reps:
        return CPU_BESIDE_CUDA
    return plan


class _Stop(BaseException):
    """SIGTERM (e.g. from `timeout`): start no more cases, still write the report."""


def _on_term(signum, frame):
    raise _Stop()


def run_on(
    case: case_lib.Case, backend: Backend, plan: Plan, host_reps: int, kernels: int = 0
) -> dict:
    """One case on vkml or the CPU, here: figure, timing statistics, status, and for vkml
    the engine counts, CPU fallbacks and, with `kernels`, that many kernels of one more
    call by device time (kernel_profile)."""
    if backend.name != "vkml":
        return run.run_on(case, backend, plan, host_reps)
    torch_vkml.reset_fallback_counts()
    probe = None
    if case.clock != "host":

        def probe(fn):
            found = {"engine": engine_counts(fn, backend)}
            if kernels:
                found["kernels"] = kernel_profile(fn, backend, kernels)
            return found

    res = run.run_on(case, backend, plan, host_reps, probe)
    fb = torch_vkml.fallback_counts()
    res["fallbacks"] = fb
    if fb and res["status"] == "ok":
        res["status"] = "fallback"
    return res


def engine_counts(fn, backend: Backend) -> dict:
    """What one call of `fn` asks of the vkml stream: dispatches, barriers, submits, and
    syncs (host waits for the GPU inside the call, the one that ends it not counted)."""
    backend.sync()
    before = torch_vkml.memory_stats()
    fn()
    syncs = torch_vkml.memory_stats()["num_syncs"] - before["num_syncs"]
    backend.sync()
    after = torch_vkml.memory_stats()
    counts = {k: after[f"num_{k}"] - before[f"num_{k}"] for k in ("dispatches", "barriers")}
    counts["submits"] = after["num_submits"] - before["num_submits"]
    counts["syncs"] = syncs
    return counts


def kernel_profile(fn, backend: Backend, top: int) -> dict:
    """One call of `fn` under torch_vkml.profile: its `top` kernels by device time, each
    kernel run alone (so their sum exceeds the case's own time by the overlap lost)."""
    backend.sync()
    with torch_vkml.profile() as prof:
        fn()
    return {
        "total_ms": prof.total_ms,
        "top": [dataclasses.asdict(k) for k in prof.kernels[:top]],
        "table": prof.table(top),
    }


def _selected(name: str, patterns: list[str]) -> bool:
    return not patterns or any(p in name or fnmatch.fnmatch(name, p) for p in patterns)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "device"


def _run_case(
    case, backends, baselines, plans, stop: list[str], remote=None, kernels: int = 0
) -> dict:
    """All backends of one case; `stop` (a one-item list) is set once the run must end.
    `remote`: a BaselineProcess for the last baseline (CUDA); `kernels`: see run_on."""
    host_reps = plans[2]
    entry = {
        "name": case.name,
        "group": case.group,
        "unit": case.unit,
        "note": case.note,
        "runs": {},
        "ratios": {},
    }
    local = {b.name: b for b in backends}
    for name in ["vkml", *baselines]:
        if stop:
            entry["runs"][name] = {"status": "skipped", "message": stop[0]}
        elif name in case.skip_baseline:
            entry["runs"][name] = {"status": "skipped", "message": "too slow here"}
        else:
            try:
                plan = plan_for(case, name, baselines, plans)
                if name in local:
                    entry["runs"][name] = run_on(case, local[name], plan, host_reps, kernels)
                else:
                    entry["runs"][name] = remote.run(case.name, plan, host_reps)
            except (_Stop, KeyboardInterrupt):
                stop.append("interrupted")
                entry["runs"][name] = {"status": "skipped", "message": "interrupted"}
    v = entry["runs"]["vkml"]
    for name in baselines:
        r = entry["runs"][name]
        if v.get("time_s") and r.get("time_s"):
            entry["ratios"][name] = r["time_s"] / v["time_s"]
    entry["status"] = v["status"]
    if case.clock == "host" and "cpu" in entry["ratios"]:
        x = 1.0 / entry["ratios"]["cpu"]
        entry["overhead_vs_cpu"] = x
        entry["extra"] = (
            f"vkml thread time/op = {x:.2f}x CPU's (target <= 3x); wall/op "
            f"{1e6 * v['wall']['median']:.1f} us vs "
            f"{1e6 * entry['runs']['cpu']['wall']['median']:.1f} us"
        )
    return entry


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m torch_vkml.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes: minutes on lavapipe")
    size.add_argument("--smoke", action="store_true", help="2-3 tiny cases, 1 repetition")
    ap.add_argument(
        "--cases",
        default="",
        help="comma-separated substrings or globs of case names (e.g. gemm,train/*)",
    )
    ap.add_argument("--device-index", type=int, default=None, help="vkml device index")
    ap.add_argument("--out", default=None, help="output folder (default results/<device>-<time>)")
    ap.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="seconds; cases not started by then are reported as skipped",
    )
    ap.add_argument("--no-cuda", action="store_true", help="do not compare against CUDA")
    ap.add_argument(
        "--kernels",
        type=int,
        default=0,
        metavar="N",
        help="after timing a case, profile one more vkml call and report its N kernels "
        "with the most device time (torch_vkml.profile)",
    )
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument(
        "--distributed",
        action="store_true",
        help="instead of the cases: all_reduce through vkml_gloo against Gloo on CPU tensors, "
        "and DDP throughput on 1 and 2 ranks (bench/distributed.py)",
    )
    ap.add_argument(
        "--replot",
        metavar="DIR",
        default=None,
        help="redraw DIR/table.txt and DIR/ratios.png from DIR/results.json (e.g. a run "
        "fetched from a machine without matplotlib) and exit",
    )
    args = ap.parse_args(argv)
    if args.replot:
        return replot(Path(args.replot))

    profile = "smoke" if args.smoke else "quick" if args.quick else "full"
    if args.distributed:
        from . import distributed

        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = Path(args.out or f"results/distributed-{stamp}")
        return distributed.main(profile, out, cuda=not args.no_cuda)
    if not torch_vkml.is_available():
        print(
            f"torch-vkml: no usable Vulkan device: {torch_vkml._C.unavailable_reason()}",
            file=sys.stderr,
        )
        return 2
    if args.device_index is not None:
        torch_vkml.set_device(args.device_index)
    index = torch_vkml.current_device()
    props = dataclasses.asdict(torch_vkml.get_device_properties(index))
    big = props.get("device_type") != "cpu"
    patterns = [p for p in args.cases.split(",") if p]
    selected = [c for c in case_lib.build(profile, big) if _selected(c.name, patterns)]
    if args.list:
        for c in selected:
            print(f"{c.name:40s} {c.unit:10s} {c.note}")
        return 0

    backends = [Backend("vkml", torch.device("vkml", index)), Backend("cpu", torch.device("cpu"))]
    baselines = ["cpu"]
    remote = None
    if torch.cuda.is_available() and not args.no_cuda:
        # Full fp32 there (PyTorch's default, TF32 off), stated in the results.
        remote = BaselineProcess("cuda", profile, big)
        try:
            remote.start()
            baselines.append("cuda")
        except RuntimeError as e:
            print(f"torch-vkml bench: no CUDA baseline: {e}", file=sys.stderr)
            remote = None

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else Path("results") / f"{_slug(props['name'])}-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    results = {
        "profile": profile,
        "started": stamp,
        "device": {"index": index, **props},
        "baselines": baselines,
        "cuda_device": remote.device_name if remote else None,
        "cuda_tf32": False if "cuda" in baselines else None,
        "cpu_plan": dataclasses.asdict(CPU_BESIDE_CUDA) if "cuda" in baselines else None,
        "torch": torch.__version__,
        "torch_vkml": torch_vkml.__version__,
        "host": {
            "machine": platform.machine(),
            "python": platform.python_version(),
            "cpu_threads": torch.get_num_threads(),
        },
        "env": {k: v for k, v in os.environ.items() if k.startswith(("TORCH_VKML_", "LP_", "VK_"))},
        "cases": [],
    }
    print(
        f"torch-vkml bench ({profile}): vkml:{index} = {props['name']}; baselines: "
        f"{', '.join(baselines)}"
        + (f" ({results['cuda_device']})" if results["cuda_device"] else ""),
        flush=True,
    )

    t_start = time.perf_counter()
    stop: list[str] = []
    previous = signal.signal(signal.SIGTERM, _on_term)
    try:
        for case in selected:
            if not stop and args.time_budget is not None:
                if time.perf_counter() - t_start > args.time_budget:
                    stop.append("time budget")
            try:
                entry = _run_case(
                    case, backends, baselines, PLANS[profile], stop, remote, args.kernels
                )
            except (_Stop, KeyboardInterrupt):  # between two runs
                stop.append("interrupted")
                entry = _run_case(case, backends, baselines, PLANS[profile], stop, remote)
            results["cases"].append(entry)
            results["elapsed_s"] = time.perf_counter() - t_start
            write_json(results, out / "results.json")  # after every case: a killed run keeps it
            ratios = ", ".join(f"x {n} {r:.3g}" for n, r in entry["ratios"].items())
            print(f"  {case.name:38s} {entry['status']:8s} {ratios}", flush=True)
            found = entry["runs"]["vkml"].get("kernels")
            if found:
                print(textwrap.indent(found["table"], "      "), flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if remote:
            remote.close()
    # Whether fp16 and bf16 GEMMs ran on the matrix units: "active", or why not (after the
    # cases, so that the start-up checks have run).
    results["device"]["coopmat_status"] = torch_vkml._C.coopmat_status(index)
    results["device"]["coopmat_status_bf16"] = torch_vkml._C.coopmat_status(index, "bfloat16")
    if torch_vkml._C.validation_enabled():
        results["validation_messages"] = torch_vkml.validation_messages()
    results["elapsed_s"] = time.perf_counter() - t_start
    write_json(results, out / "results.json")

    table = format_table(results)
    (out / "table.txt").write_text(table + "\n", encoding="utf-8")
    why_not = plot(results, out / "ratios.png")
    print()
    print(table)
    print()
    print(
        f"wrote {out}/results.json, table.txt"
        + (f" ({why_not})" if why_not else ", ratios.png")
        + f" in {results['elapsed_s']:.0f} s"
    )
    return 0


def replot(out: Path) -> int:
    results = json.loads((out / "results.json").read_text())
    table = format_table(results)
    (out / "table.txt").write_text(table + "\n", encoding="utf-8")
    why_not = plot(results, out / "ratios.png")
    print(table)
    print(f"wrote {out}/table.txt" + (f" ({why_not})" if why_not else ", ratios.png"))
    return 0 if why_not is None else 1


if __name__ == "__main__":
    sys.exit(main())
