"""Short probes of the process crashes seen on the H200 (2026-12-04), each in its own
process, for scripts/gpu_run.sh: python3 scripts/gpu_diagnose.py [segv_where.so]

With NVIDIA's driver loaded through its EGL library, processes died of SIGSEGV when a C++
error message was formatted (a CPU torch.arange error too) and in the pipeline-cache
save at exit (after the cache data was written, while its key list was formatted). One
guess: the driver leaves the thread's locale (uselocale) pointing at a locale it freed,
and every std::ostream number formatting after it reads freed memory. Each probe prints
its exit status; the locale probes print the thread's locale before and after a kernel.
"""

from __future__ import annotations

import os
import subprocess
import sys

PRELUDE = """
import ctypes, torch, torch_vkml
libc = ctypes.CDLL(None)
libc.uselocale.restype = ctypes.c_void_p
libc.uselocale.argtypes = [ctypes.c_void_p]
libc.setlocale.restype = ctypes.c_char_p
libc.setlocale.argtypes = [ctypes.c_int, ctypes.c_char_p]
GLOBAL = ctypes.c_void_p(-1).value  # LC_GLOBAL_LOCALE
def where():
    cur = libc.uselocale(None)
    return "global" if cur == GLOBAL else hex(cur or 0), libc.setlocale(6, None)
def cpu_error():
    try:
        torch.arange(0, 5, 0.5, dtype=torch.long)
    except Exception as e:
        print("cpu error raised:", str(e).splitlines()[0][:60], flush=True)
def kernel():
    print("kernel:", (torch.ones(4, device="vkml") + 1).cpu().tolist(), flush=True)
"""

PROBES = {
    "cpu error, vkml imported, device unused": "cpu_error()",
    "cpu error after device init": "torch.empty(1, device='vkml'); cpu_error()",
    "locale before/after a kernel": "print('before', where()); kernel(); print('after', where())",
    "cpu error after a kernel": "kernel(); cpu_error()",
    "cpu error after a kernel, thread locale reset": (
        "kernel(); libc.uselocale(ctypes.c_void_p(GLOBAL)); cpu_error()"
    ),
    "vkml error after a kernel": (
        "kernel()\ntry:\n    torch.ones(2, 3, device='vkml') @ torch.ones(2, 3, device='vkml')\n"
        "except RuntimeError as e:\n    print('vkml error raised', flush=True)"
    ),
    "exit after a kernel (pipeline cache save)": "kernel()",
    "exit after a kernel, no pipeline cache": "kernel()",
}


def main() -> int:
    shim = sys.argv[1] if len(sys.argv) > 1 else None
    for name, body in PROBES.items():
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        if name.endswith("no pipeline cache"):
            env["TORCH_VKML_PIPELINE_CACHE"] = "0"
        if shim:
            env["LD_PRELOAD"] = shim
        try:
            proc = subprocess.run(
                [sys.executable, "-c", PRELUDE + body],
                env=env,
                capture_output=True,
                text=True,
                timeout=40,
            )
            status, out = proc.returncode, (proc.stdout + proc.stderr).strip()
        except subprocess.TimeoutExpired:
            status, out = "timeout", ""
        print(f"== {name}: exit {status}")
        for line in out.splitlines()[-14:]:
            print("   ", line)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
