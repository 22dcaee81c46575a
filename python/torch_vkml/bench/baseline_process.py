"""The CUDA baseline, measured in a child process that never imports torch_vkml.

PyTorch takes a registered PrivateUse1 backend as the process's accelerator
(at::accelerator::getAccelerator puts it before CUDA), and the autograd engine then
looks up vkml streams for CUDA nodes: any CUDA backward in a process that imported
torch_vkml stops on "opt_ready_stream && opt_parent_stream INTERNAL ASSERT FAILED".
So the bench sends each case's name and plan to this process, which builds the same
cases and answers with the same result fields, one JSON line per case.

The parent side is BaselineProcess; run as a script, this file is the child. It loads
cases, timing and run from this folder under another package name, so that importing
them does not import torch_vkml's __init__ (which registers the device).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import types
from pathlib import Path

_FOLDER = Path(__file__).resolve().parent


class BaselineProcess:
    """One baseline backend ("cuda"; "cpu" in the tests) in a child process, started on
    first use and again after it dies (a crash costs its case, not the run)."""

    def __init__(self, backend: str, profile: str, big: bool):
        self.backend, self.profile, self.big = backend, profile, big
        self.proc: subprocess.Popen | None = None
        self.device_name: str | None = None
        self.imported_torch_vkml: bool | None = None

    def start(self) -> None:
        env = dict(os.environ)
        # torch's entry-point autoload would import torch_vkml with torch.
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), self.backend, self.profile]
            + (["big"] if self.big else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            hello = self._read()
            if "error" in hello:
                raise RuntimeError(hello["error"])
            self.device_name = hello["device"]
            self.imported_torch_vkml = hello["torch_vkml_imported"]
        except Exception as e:  # its own error, an early exit, or a garbled line
            self.close()
            raise RuntimeError(f"{self.backend} baseline process: {e}") from e

    def run(self, case_name: str, plan, host_reps: int) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            try:
                self.start()
            except RuntimeError as e:
                from .run import head  # the parent's side: a package module here

                return {"status": "error", "message": head(e)}
        request = {"case": case_name, "plan": dataclasses.asdict(plan), "host_reps": host_reps}
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            return self._read()
        except BaseException as e:
            # A crash of the child, or the parent interrupted while waiting: either way
            # this child is done.
            rc = self.proc.poll()
            self.close()
            if not isinstance(e, Exception):
                raise
            return {"status": "error", "message": f"baseline process failed (exit {rc}): {e}"}

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"exited with status {self.proc.wait()}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def _load_bench_modules():
    pkg = types.ModuleType("_vkml_bench_baseline")
    pkg.__path__ = [str(_FOLDER)]
    sys.modules[pkg.__name__] = pkg
    from _vkml_bench_baseline import cases, run, timing  # type: ignore[import-not-found]

    return cases, run, timing


def _child(argv: list[str]) -> int:
    # Only protocol lines on the pipe: it moves to a descriptor of its own, and whatever
    # else writes to stdout (Python or a library's C code) goes to stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    backend_name, profile = argv[0], argv[1]
    big = "big" in argv[2:]
    try:
        import torch

        cases, run, timing = _load_bench_modules()
        if backend_name == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("CUDA is not available")
            device = torch.device("cuda", torch.cuda.current_device())
            # Full fp32 (PyTorch's default), stated in the results: TF32 would compare a
            # lower-precision GEMM against vkml's fp32.
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            name = torch.cuda.get_device_name(device)
        else:
            device, name = torch.device(backend_name), backend_name
        backend = timing.Backend(backend_name, device)
        by_name = {c.name: c for c in cases.build(profile, big)}
    except Exception as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), file=out, flush=True)
        return 1
    hello = {"device": name, "torch_vkml_imported": "torch_vkml" in sys.modules}
    print(json.dumps(hello), file=out, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        case = by_name.get(request["case"])
        if case is None:
            res = {"status": "error", "message": f"no case {request['case']} here"}
        else:
            plan = timing.Plan(**request["plan"])
            res = run.run_on(case, backend, plan, request["host_reps"])
        print(json.dumps(res), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
