"""End to end: examples/spectral_linalg.py (STFT denoising, a Gaussian-process fit, a
low-rank SVD) agrees with the CPU on vkml with no CPU fallback."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "spectral_linalg.py"


@pytest.mark.parametrize("device", ["vkml", "cpu"])
def test_spectral_linalg_example(device):
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--device", device],
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = f"exit status {proc.returncode}\n{proc.stdout}\n--- stderr ---\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, output
    for line in ("denoise:", "gaussian process nll:", "low rank:"):
        assert line in proc.stdout, output
    if device == "vkml":
        assert "CPU fallbacks: none" in proc.stdout, output
