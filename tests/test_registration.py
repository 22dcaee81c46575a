"""Importing the package is quiet: no kernel is registered twice (PyTorch warns on
stderr when a second registration overrides the first)."""

import os
import subprocess
import sys


def test_import_prints_nothing():
    # Where CUDA has a device, importing vkml warns by design (docs/coexistence.md).
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "-c", "import torch, torch_vkml; torch.zeros(2, device='vkml')"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr
