"""Short probes of the process crashes seen on the H200, each in its own process, all at
once, for scripts/gpu_run.sh: python3 scripts/gpu_diagnose.py [segv_where.so]

With NVIDIA's driver loaded through its EGL library, the second H200 run (2026-12-04)
saw C++ exceptions kill the process: the test workers died of SIGSEGV in CPU torch
errors (group_norm's channel check, nll_loss's shape check) once they had used the
device, and a vkml shape error after a kernel died the same way; torch.arange with a
step cast to 0 died of SIGFPE even before the device was used (torch_vkml's import
loads no driver: perhaps torch 2.11's own integer division). The thread's locale, the
first run's guess, was unchanged. The probes test the next guesses: a driver that
registers bogus unwind tables (the shim logs every frame registration and can skip
NVIDIA's), one that unmasks floating-point exceptions (the shim prints the control
words; one probe restores the default environment), a driver library whose C++ runtime
captures lazily bound symbols (LD_BIND_NOW; throwing before the driver loads; the
LD_DEBUG bindings of the runtime's entry points), and torch alone.
scripts/vk_throw.cpp, run by gpu_run.sh, takes PyTorch out of the picture.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

PRELUDE = """
import ctypes, os, torch
libc = ctypes.CDLL(None)
def fpu(when):
    if hasattr(libc, "segv_where_fpu"):  # the preloaded shim
        libc.segv_where_fpu(when.encode())
def cpu_error():
    try:
        torch.nn.functional.group_norm(torch.ones(2, 6, 4), 4)  # 6 channels in 4 groups
    except Exception as e:
        print("cpu error raised:", str(e).splitlines()[0][:60], flush=True)
def arange_error():  # an integer step of 0: SIGFPE inside torch 2.11 itself?
    try:
        torch.arange(0, 5, 0.5, dtype=torch.long)
    except Exception as e:
        print("arange error raised:", str(e).splitlines()[0][:60], flush=True)
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
    "arange with a step cast to 0, torch only": ("arange_error()", {}),
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
    # Lazy binding: a library's first call of __cxa_throw, __cxa_begin_catch,
    # _Unwind_Resume ... binds then, to the first definition in the global scope; a
    # driver library in that scope that defines them (a static C++ runtime) would then
    # capture every library that had not thrown before it loaded. Throwing through
    # torch and torch_vkml before the first kernel binds those slots early.
    "vkml and cpu errors after a kernel, exceptions thrown before the driver loaded": (
        "import torch_vkml\n"
        "for f in (lambda: torch.empty(-1), lambda: torch_vkml._C._set_coopmat_tuning(3, 0)):\n"
        "    try:\n        f()\n    except Exception:\n        pass\n"
        "kernel(); vkml_error(); cpu_error()",
        {},
    ),
    "symbol bindings of the unwinder after a kernel (LD_DEBUG)": (
        VKML + "kernel(); vkml_error()",
        {"LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": "@LDDEBUG@"},
    ),
}

# The C++ runtime's entry points, as LD_DEBUG=bindings names them.
UNWIND_SYMBOLS = (
    "__cxa_throw",
    "__cxa_begin_catch",
    "__cxa_end_catch",
    "_Unwind_Resume",
    "_Unwind_RaiseException",
    "__cxa_allocate_exception",
    "__gxx_personality",
)


def bindings(prefix: str) -> list[str]:
    """The LD_DEBUG lines that bind the C++ runtime's entry points to a library other
    than libstdc++ / libgcc_s, or from an NVIDIA library; at most 40."""
    out = []
    for path in glob.glob(prefix + ".*"):
        with open(path, errors="replace") as f:
            for line in f:
                if not any(s in line for s in UNWIND_SYMBOLS):
                    continue
                to = line.split(" to ")[-1] if " to " in line else ""
                if "nvidia" in line.lower() or not ("libstdc++" in to or "libgcc_s" in to):
                    out.append(line.strip())
    return out[:40] or ["(no binding of those symbols outside libstdc++ and libgcc_s)"]


def run_probe(name: str, body: str, extra: dict, shim: str | None) -> str:
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", **extra)
    ld_prefix = None
    if env.get("LD_DEBUG_OUTPUT") == "@LDDEBUG@":
        ld_prefix = env["LD_DEBUG_OUTPUT"] = os.path.join(tempfile.mkdtemp(), "ld")
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
    if ld_prefix:
        lines += bindings(ld_prefix)
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
