"""Running a hook on a PyTorch module right after it is first imported.

Some of PyTorch's Python modules name the devices they support in a table or a check of
their own, or offer no registration point for an out-of-tree device; torch_vkml adapts
them where they are defined. Several of them take seconds to import (Dynamo, Inductor),
and ``import torch`` loads torch_vkml by itself, so nothing here imports them: a
``sys.meta_path`` finder runs the hook after the module's own loader, or the hook runs at
once where the module is already loaded.
"""

from __future__ import annotations

import importlib.machinery
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

Hook = Callable[[ModuleType], None]

# module name -> (hook, what it installs, for the warning if it fails)
_PENDING: dict[str, tuple[Hook, str]] = {}


def _run_hook(hook: Hook, what: str, module: ModuleType) -> None:
    try:
        hook(module)
    except Exception as error:  # torch changed: run as without torch_vkml, but say so
        warnings.warn(
            f"torch-vkml: {what} is not installed ({module.__name__}: {error!r})",
            stacklevel=2,
        )


class _HookedLoader:
    """Runs a module's own loader, then the hook; everything else is the loader's."""

    def __init__(self, loader: Any, hook: Hook, what: str) -> None:
        self._loader = loader
        self._hook = hook
        self._what = what

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _run_hook(self._hook, self._what, module)


class _PostImportFinder:
    """A ``sys.meta_path`` finder that hooks the modules in ``_PENDING`` and finds nothing."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _PENDING:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return None  # left to the other finders, unhooked
        spec.loader = _HookedLoader(spec.loader, *_PENDING.pop(fullname))
        if not _PENDING:
            sys.meta_path.remove(self)
        return spec


_FINDER = _PostImportFinder()


def after_import(name: str, hook: Hook, what: str) -> None:
    """Runs ``hook(module)`` once the module ``name`` is imported (now, if it is).

    ``what`` names what the hook installs: a hook that raises (a PyTorch whose module
    changed) leaves the module as it is, with a warning that says so."""
    if name in sys.modules:
        _run_hook(hook, what, sys.modules[name])
        return
    _PENDING[name] = (hook, what)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
