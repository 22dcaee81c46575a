"""Build glue: compiles the torch_vkml._C extension with the project's CMake build.

All metadata lives in pyproject.toml; this file only adds the extension and a build_ext that
drives CMake. It reuses the same build directory as the Makefile (``build/``, incremental), so

    pip install --no-build-isolation --no-deps -e .   # editable: imports from python/
    pip install --no-build-isolation --no-deps .      # regular wheel

both work and cost little once ``make build`` has run. CMake writes ``_C.<abi>.so`` straight
into python/torch_vkml/; build_ext copies it to where setuptools expects the extension.

Environment knobs: VKML_BUILD_DIR (default build), VKML_BUILD_TYPE (default Release, used only
when configuring a fresh build dir), CMAKE_ARGS (extra configure arguments, shell-quoted),
CMAKE_BUILD_PARALLEL_LEVEL (default: all CPUs).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
PKG_DIR = ROOT / "python" / "torch_vkml"
MIN_CMAKE = (3, 25)


class CMakeExtension(Extension):
    """An extension whose sources and build rules live in CMakeLists.txt."""

    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


def _find_tool(name: str, pip_module: str) -> str | None:
    """The tool next to this interpreter (a venv's bin/), then on PATH, then a pip package's."""
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which(name)
    if found:
        return found
    try:  # the `cmake` / `ninja` PyPI packages expose their bin dirs
        mod = __import__(pip_module)
        bin_dir = getattr(mod, "CMAKE_BIN_DIR", None) or getattr(mod, "BIN_DIR", None)
        if bin_dir and (Path(bin_dir) / name).is_file():
            return str(Path(bin_dir) / name)
    except ImportError:
        pass
    return None


def _check_torch() -> None:
    # Found without importing torch: importing it would auto-load torch_vkml through its
    # entry point, whose extension we are building. CMake asks this interpreter for torch's
    # headers and libraries.
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "torch-vkml: torch is not importable by the interpreter running the build "
            f"({sys.executable}). Install torch first and build with --no-build-isolation."
        )


def _cmake_version(cmake: str) -> tuple[int, ...]:
    out = subprocess.run([cmake, "--version"], check=True, capture_output=True, text=True).stdout
    match = re.search(r"version\s+(\d+)\.(\d+)", out)
    return tuple(int(x) for x in match.groups()) if match else (0, 0)


def _cached(build_dir: Path, var: str) -> str | None:
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        return None
    pattern = re.compile(rf"^{re.escape(var)}:[A-Z_]+=(.*)$")
    for line in cache.read_text(errors="replace").splitlines():
        match = pattern.match(line)
        if match:
            return match.group(1)
    return None


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if not isinstance(ext, CMakeExtension):
            super().build_extension(ext)
            return

        cmake = _find_tool("cmake", "cmake")
        if cmake is None:
            raise SystemExit("torch-vkml: cmake not found (pip install cmake, or apt cmake)")
        if _cmake_version(cmake) < MIN_CMAKE:
            raise SystemExit(f"torch-vkml: {cmake} is older than {'.'.join(map(str, MIN_CMAKE))}")
        ninja = _find_tool("ninja", "ninja")

        env = dict(os.environ)
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
        tool_dirs = [str(Path(t).parent) for t in (cmake, ninja) if t]
        env["PATH"] = os.pathsep.join([*dict.fromkeys(tool_dirs), env.get("PATH", "")])

        build_dir = Path(os.environ.get("VKML_BUILD_DIR", "build"))
        if not build_dir.is_absolute():
            build_dir = ROOT / build_dir

        # Configure only when needed: a fresh build dir, or one configured for another
        # interpreter. Otherwise CMake re-runs its own configure step when CMakeLists change.
        have_cache = (build_dir / "CMakeCache.txt").is_file()
        have_rules = any((build_dir / f).is_file() for f in ("build.ninja", "Makefile"))
        configured_python = _cached(build_dir, "Python_EXECUTABLE")
        needs_configure = (
            not have_cache
            or not have_rules
            or (configured_python is not None and configured_python != sys.executable)
        )
        if needs_configure:
            _check_torch()
            args = [cmake, "-S", str(ROOT), "-B", str(build_dir)]
            if not have_cache:  # an existing cache keeps its generator
                if ninja is None:
                    raise SystemExit("torch-vkml: ninja not found (pip install ninja)")
                args += ["-G", "Ninja"]
            args += [
                f"-DCMAKE_BUILD_TYPE={os.environ.get('VKML_BUILD_TYPE', 'Release')}",
                f"-DPython_EXECUTABLE={sys.executable}",
                *shlex.split(os.environ.get("CMAKE_ARGS", "")),
            ]
            print("torch-vkml: " + shlex.join(args), flush=True)
            subprocess.run(args, cwd=ROOT, env=env, check=True)

        jobs = self.parallel or os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or os.cpu_count() or 1
        args = [cmake, "--build", str(build_dir), f"-j{jobs}"]
        print("torch-vkml: " + shlex.join(args), flush=True)
        subprocess.run(args, cwd=ROOT, env=env, check=True)

        built = self._built_library(ext)
        dest = Path(self.get_ext_fullpath(ext.name))
        if built.resolve() != dest.resolve():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, dest)

    @staticmethod
    def _built_library(ext: Extension) -> Path:
        """The library CMake wrote into the source package (prefer this interpreter's ABI)."""
        stem = ext.name.rsplit(".", 1)[-1]
        exact = PKG_DIR / (stem + sysconfig.get_config_var("EXT_SUFFIX"))
        if exact.is_file():
            return exact
        candidates = sorted(PKG_DIR.glob(f"{stem}*.so"), key=lambda p: p.stat().st_mtime)
        if not candidates:
            raise SystemExit(f"torch-vkml: the CMake build produced no {stem}*.so in {PKG_DIR}")
        return candidates[-1]

    def copy_extensions_to_source(self) -> None:
        # In-place/editable builds: CMake already wrote the library into python/torch_vkml/
        # (possibly under a suffix of its own), so copying it back would only add a duplicate.
        others = [e for e in self.extensions if not isinstance(e, CMakeExtension)]
        if others:
            saved, self.extensions = self.extensions, others
            try:
                super().copy_extensions_to_source()
            finally:
                self.extensions = saved


setup(
    ext_modules=[CMakeExtension("torch_vkml._C")],
    cmdclass={"build_ext": CMakeBuild},
    # Keep setuptools' own build/bdist trees out of the top level of CMake's build dir.
    options={"build": {"build_base": "build/setuptools"}},
)
