"""Short probes of the process crashes seen on the H200, each in its own process, all at
once, for scripts/gpu_run.sh: python3 scripts/gpu_diagnose.py [segv_where.so]

With NVIDIA's driver loaded through its EGL library, the second H200 run (2026-12-04)
saw every C++ exception kill the process: SIGFPE for a CPU torch error once torch_vkml
was imported, SIGSEGV for a vkml shape error after a kernel; the thread's locale was
unchanged (the first run's guess). The probes now test the next guesses: a driver that
registers bogus unwind tables (the shim logs every frame registration and can skip
NVIDIA's), one that unmasks floating-point exceptions (the shim prints the control
words; one probe restores the default environment), lazy binding, and a baseline with
torch alone. scripts/vk_throw.cpp, run by gpu_run.sh, takes PyTorch out of the picture.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

PRELUDE = """
import ctypes, os, torch
libc = ctypes.CDLL(None)
def fpu(when):
    if hasattr(libc, "segv_where_fpu"):  # the preloaded shim
        libc.segv_where_fpu(when.encode())
def cpu_error():
    try:
        torch.arange(0, 5, 0.5, dtype=torch.long)
    except Exception as e:
        print("cpu error raised:", str(e).splitlines()[0][:60], flush=True)
def kernel():
    print("kernel:", (torch.ones(4, device="vkml") + 1).cpu().tolist(), flush=True)
def vkml_error():
    try:
        torch.ones(2, 3, device="vkml") @ torch.ones(2, 3, device="vkml")
    except RuntimeError as e:
        print("vkml error raised", flush=True)
def nvidia_libs():
    with open("/proc/self/maps") as f:
        return sorted({l.split()[-1] for l in f if "nvidia" in l.lower() and "/" in l})
"""
VKML = "fpu('before import'); import torch_vkml; fpu('after import'); "

# name: (body, extra environment)
PROBES = {
    "cpu error, torch only (no torch_vkml)": ("fpu('start'); cpu_error()", {}),
    "cpu error, vkml imported, device unused": (VKML + "cpu_error()", {}),
    "cpu error after a kernel": (VKML + "kernel(); fpu('after kernel'); cpu_error()", {}),
    "vkml error after a kernel": (VKML + "kernel(); fpu('after kernel'); vkml_error()", {}),
    "vkml error after a kernel, NVIDIA frame registrations skipped": (
        VKML + "kernel(); vkml_error()",
        {"SEGV_WHERE_SKIP_NVIDIA": "1"},
    ),
    "vkml error after a kernel, LD_BIND_NOW": (
        VKML + "kernel(); vkml_error()",
        {"LD_BIND_NOW": "1"},
    ),
    "vkml error after a kernel, default fp environment restored": (
        VKML + "kernel(); ctypes.CDLL('libm.so.6').fesetenv(ctypes.c_void_p(-1)); "
        "fpu('after fesetenv'); vkml_error()",
        {},
    ),
    "loaded NVIDIA libraries after a kernel": (
        VKML + "kernel(); print('\\n'.join(nvidia_libs()))",
        {},
    ),
    "exit after a kernel (pipeline cache save)": (VKML + "kernel()", {}),
}


def run_probe(name: str, body: str, extra: dict, shim: str | None) -> str:
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", **extra)
    if shim:
        env["LD_PRELOAD"] = shim
    try:
        proc = subprocess.run(
            [sys.executable, "-c", PRELUDE + body],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        status, out = proc.returncode, (proc.stdout + proc.stderr).strip()
    except subprocess.TimeoutExpired:
        status, out = "timeout", ""
    # The frame-registration log can be long: keep its first lines and everything else.
    lines, reg = [], 0
    for line in out.splitlines():
        if "register_frame" in line:
            reg += 1
            if reg > 12:
                continue
        lines.append(line)
    if reg > 12:
        lines.append(f"({reg - 12} more frame-registration lines)")
    return f"== {name}: exit {status}\n" + "".join(f"    {line}\n" for line in lines[-80:])


def main() -> int:
    shim = sys.argv[1] if len(sys.argv) > 1 else None
    # Each probe in its own process, all at once (the machine has 16 cores).
    with ThreadPoolExecutor(len(PROBES)) as pool:
        futures = [pool.submit(run_probe, n, b, e, shim) for n, (b, e) in PROBES.items()]
        for f in futures:
            print(f.result(), end="", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
