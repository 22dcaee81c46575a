"""End to end: examples/digits_mlp.py trains to >= 95% accuracy on vkml."""

import re
import subprocess
import sys
from pathlib import Path

import torch_vkml

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "digits_mlp.py"


def _run(*args):
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=420,
    )
    output = f"exit status {proc.returncode}\n{proc.stdout}\n--- stderr ---\n{proc.stderr[-3000:]}"
    return proc, output


def _value(pattern, stdout, output):
    match = re.search(pattern, stdout, re.MULTILINE)
    assert match, f"no line matching {pattern!r}\n{output}"
    return match.group(1)


def test_digits_example():
    # On vkml only: its CPU path is plain PyTorch (`make demo` runs this same command).
    proc, output = _run("--device", "vkml")
    accuracy = float(_value(r"^test accuracy: ([0-9.]+)$", proc.stdout, output))
    fallbacks = int(_value(r"^cpu fallbacks: (\d+)$", proc.stdout, output))
    float(_value(r"^wall time: ([0-9.]+) s$", proc.stdout, output))
    assert accuracy >= 0.95, output
    assert fallbacks == 0, output
    assert proc.returncode == 0, output
    assert torch_vkml.device_name() in proc.stdout, output
