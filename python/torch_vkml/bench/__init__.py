"""Benchmarks of torch-vkml against PyTorch's CPU backend (and CUDA where present).

Run ``python -m torch_vkml.bench --help``. Every figure is a ratio against a baseline
measured in the same run (CUDA's in a child process, see baseline_process.py):
``ratio = baseline time / vkml time`` (> 1: vkml is faster).
"""
