"""The device random generators (Philox; one default generator per device)."""

from __future__ import annotations

import torch

from . import _C
from ._device import _check, _index, device_count, is_available


def _generator(device: int | torch.device | str | None = None) -> torch.Generator:
    return _C.default_generator(_check(_index(device)))


def manual_seed(seed: int) -> None:
    """Seeds the current device's generator (torch.manual_seed seeds all of them)."""
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    if not is_available():
        return
    for i in range(device_count()):
        _C.default_generator(i).manual_seed(int(seed))


def seed() -> int:
    return _generator().seed()


def seed_all() -> None:
    """Seeds every vkml device's generator with one random number (torch.cuda.seed_all)."""
    if not is_available():
        return
    value = _C.default_generator(0).seed()
    for i in range(1, device_count()):
        _C.default_generator(i).manual_seed(value)


def initial_seed() -> int:
    return _generator().initial_seed()


def get_rng_state(device: int | torch.device | str | None = None) -> torch.Tensor:
    return _generator(device).get_state()


def set_rng_state(state: torch.Tensor, device: int | torch.device | str | None = None) -> None:
    _generator(device).set_state(state)


def get_rng_state_all() -> list[torch.Tensor]:
    """Every device's generator state, in device order (as torch.cuda.get_rng_state_all)."""
    return [get_rng_state(i) for i in range(device_count())] if is_available() else []


def set_rng_state_all(states: list[torch.Tensor]) -> None:
    for i, state in enumerate(states):
        set_rng_state(state, i)
