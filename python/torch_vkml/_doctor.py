"""``python -m torch_vkml doctor``: what torch-vkml finds on this machine, and what to fix.

Checks, in the order a first-time user meets them: the torch release against the one the
extension was built for, the Vulkan loader, the driver manifests (ICDs) the loader reads,
the validation layer, then every device torch-vkml can use with its driver, memory heaps
and features, and a smoke test per device (a matmul compared with the CPU's, its GFLOP/s,
host<->device copy bandwidth). Every problem found comes with one line saying what to
install or set. ``--json`` prints the whole report as one JSON object, for bug reports.
The exit status is 1 when no device is usable (none found, or none passes its smoke test).

Where ``import torch_vkml`` itself fails (an extension built for another torch), running
this file by its path, ``python .../torch_vkml/_doctor.py``, still checks the rest.
"""

from __future__ import annotations

import argparse
import ctypes
import json as _json
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

_LOADER_FIX = (
    "install the Vulkan loader: `apt install libvulkan1` (Fedora: `dnf install vulkan-loader`; "
    "Windows: the GPU driver installs it), or set TORCH_VKML_LOADER=/path/to/libvulkan.so.1"
)
_DRIVER_FIX = (
    "install a Vulkan driver: `apt install mesa-vulkan-drivers` (AMD, Intel, or lavapipe on "
    "the CPU) or the NVIDIA driver; `vulkaninfo --summary` lists what the loader sees"
)
_REBUILD_FIX = (
    "rebuild torch-vkml against the installed torch: `pip install --no-build-isolation "
    "--no-deps -e .` (or `make build`) in its checkout"
)
_REPORT_FIX = (
    "update the GPU driver; if that does not help, report it with the output of "
    "`python -m torch_vkml doctor --json`"
)


def _problem(report: dict, severity: str, problem: str, fix: str) -> None:
    report["problems"].append({"severity": severity, "problem": problem, "fix": fix})


def _version(v: int) -> str:
    """A VK_MAKE_API_VERSION number as text."""
    return f"{(v >> 22) & 0x7F}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


# ----------------------------------------------------------------------- the loader


class _LinkMap(ctypes.Structure):  # the head of glibc's struct link_map
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]


class _LayerProperties(ctypes.Structure):  # VkLayerProperties
    _fields_ = [
        ("layerName", ctypes.c_char * 256),
        ("specVersion", ctypes.c_uint32),
        ("implementationVersion", ctypes.c_uint32),
        ("description", ctypes.c_char * 256),
    ]


def _loaded_path(lib: ctypes.CDLL) -> str | None:
    """The file the dynamic linker opened for ``lib`` (glibc's dlinfo), or None."""
    try:
        dlinfo = ctypes.CDLL(None).dlinfo
    except (OSError, AttributeError):
        try:
            dlinfo = ctypes.CDLL("libdl.so.2").dlinfo
        except (OSError, AttributeError):
            return None
    link_map = ctypes.POINTER(_LinkMap)()
    rtld_di_linkmap = 2
    if dlinfo(ctypes.c_void_p(lib._handle), rtld_di_linkmap, ctypes.byref(link_map)) != 0:
        return None
    name = link_map.contents.l_name
    return os.path.realpath(name.decode()) if name else None


def _check_loader(report: dict) -> ctypes.CDLL | None:
    """Opens the loader as torch-vkml does (csrc/vkml/runtime/vk_api.cpp)."""
    override = os.environ.get("TORCH_VKML_LOADER")
    candidates = [override] if override else ["libvulkan.so.1", "libvulkan.so"]
    info: dict[str, Any] = {"found": False, "path": None, "version": None, "error": None}
    report["loader"] = info
    lib, errors = None, []
    for name in candidates:
        try:
            lib = ctypes.CDLL(name, mode=os.RTLD_NOW | os.RTLD_LOCAL)
            break
        except OSError as e:
            errors.append(str(e))
    if lib is None:
        info["error"] = "; ".join(errors)
        what = f"TORCH_VKML_LOADER={override}" if override else "libvulkan.so.1"
        _problem(report, "error", f"no Vulkan loader: {what} cannot be opened", _LOADER_FIX)
        return None
    info["found"] = True
    info["path"] = _loaded_path(lib) or name
    version = ctypes.c_uint32(0)
    fn = getattr(lib, "vkEnumerateInstanceVersion", None)
    if fn is not None and fn(ctypes.byref(version)) == 0:
        info["version"] = _version(version.value)
    else:
        info["version"] = "1.0"
    if info["version"] == "1.0" or tuple(map(int, info["version"].split(".")[:2])) < (1, 2):
        _problem(
            report,
            "error",
            f"the Vulkan loader is {info['version']}; torch-vkml needs 1.2 or newer",
            "update the loader: `apt install libvulkan1` from a newer release, or set "
            "TORCH_VKML_LOADER to a newer libvulkan.so.1",
        )
    return lib


def _check_layers(report: dict, lib: ctypes.CDLL | None, validation_enabled: bool) -> None:
    layers: list[str] = []
    if lib is not None:
        enumerate_layers = lib.vkEnumerateInstanceLayerProperties
        count = ctypes.c_uint32(0)
        if enumerate_layers(ctypes.byref(count), None) == 0 and count.value:
            props = (_LayerProperties * count.value)()
            if enumerate_layers(ctypes.byref(count), props) in (0, 5):  # VK_INCOMPLETE: 5
                layers = [p.layerName.decode() for p in props[: count.value]]
    available = "VK_LAYER_KHRONOS_validation" in layers
    report["validation_layer"] = {
        "available": available,
        "enabled": validation_enabled,
        "layers": layers,
    }
    wanted = os.environ.get("TORCH_VKML_VALIDATION", "0") not in ("", "0")
    if lib is not None and not available:
        _problem(
            report,
            "warning" if wanted else "note",
            "the Khronos validation layer is not installed"
            + (" but TORCH_VKML_VALIDATION is set" if wanted else ""),
            "`apt install vulkan-validationlayers` (needed only for TORCH_VKML_VALIDATION=1)",
        )


# ---------------------------------------------------------------------- the drivers


def _split(value: str) -> list[str]:
    return [p for p in value.split(os.pathsep) if p]


def _standard_driver_dirs() -> list[str]:
    """Where the Linux loader looks for driver manifests without VK_DRIVER_FILES."""
    home = os.path.expanduser("~")
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    config_dirs = _split(os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg")
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    data_dirs = _split(os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share")
    roots = [config_home, *config_dirs, "/etc", data_home, *data_dirs]
    dirs = [os.path.join(r, "vulkan", "icd.d") for r in roots]
    return list(dict.fromkeys(dirs))


def _manifests_in(path: str) -> list[str]:
    if os.path.isdir(path):
        return sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".json"))
    return [path]


def _read_manifest(path: str) -> dict:
    entry: dict[str, Any] = {
        "manifest": path,
        "exists": os.path.isfile(path),
        "library_path": None,
        "api_version": None,
        "library": None,
        "loadable": False,
        "other_architecture": False,
        "error": None,
    }
    if not entry["exists"]:
        entry["error"] = "no such file"
        return entry
    try:
        with open(path, encoding="utf-8") as f:
            icd = _json.load(f)["ICD"]
        entry["library_path"] = icd["library_path"]
        entry["api_version"] = icd.get("api_version")
    except (OSError, ValueError, KeyError, TypeError) as e:
        entry["error"] = f"not a driver manifest ({type(e).__name__}: {e})"
        return entry
    lib = entry["library_path"]
    if os.sep in lib and not os.path.isabs(lib):  # relative to the manifest
        lib = os.path.normpath(os.path.join(os.path.dirname(path), lib))
    entry["library"] = lib
    try:
        # The loader has opened it already where it works; this only asks the linker why
        # one does not.
        ctypes.CDLL(lib, mode=os.RTLD_LAZY | os.RTLD_LOCAL)
        entry["loadable"] = True
    except OSError as e:
        message = str(e)
        # A 32-bit driver beside the 64-bit one: the loader skips it, as it should.
        entry["other_architecture"] = "wrong ELF class" in message
        entry["error"] = message
    return entry


def _check_drivers(report: dict) -> None:
    selected_by = next(
        (v for v in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES") if os.environ.get(v)), None
    )
    drivers: dict[str, Any] = {"selected_by": selected_by, "manifests": []}
    report["drivers"] = drivers
    if sys.platform == "win32":
        drivers["selected_by"] = selected_by or "the Windows registry (not listed here)"
        if not selected_by:
            return
    paths = [m for p in _split(os.environ.get("VK_ADD_DRIVER_FILES", "")) for m in _manifests_in(p)]
    if selected_by:
        paths += [m for p in _split(os.environ[selected_by]) for m in _manifests_in(p)]
    else:
        paths += [m for d in _standard_driver_dirs() if os.path.isdir(d) for m in _manifests_in(d)]
    manifests = [_read_manifest(p) for p in dict.fromkeys(paths)]
    drivers["manifests"] = manifests

    standard = [m for d in _standard_driver_dirs() if os.path.isdir(d) for m in _manifests_in(d)]
    for m in manifests:
        if not m["exists"] and selected_by:
            alternatives = ", ".join(standard) if standard else "none installed"
            _problem(
                report,
                "error",
                f"{selected_by} names {m['manifest']}, which does not exist",
                f"unset {selected_by}, or set it to a driver manifest that exists "
                f"(found: {alternatives})",
            )
        elif m["exists"] and m["library"] is None:
            _problem(
                report,
                "warning",
                f"the driver manifest {m['manifest']} cannot be read: {m['error']}",
                "reinstall the driver package that owns it (`dpkg -S <file>` names it), "
                "or remove the file",
            )
        elif m["library"] is not None and not m["loadable"] and not m["other_architecture"]:
            _problem(
                report,
                "warning",
                f"the driver library {m['library_path']} of {m['manifest']} cannot be "
                f"loaded: {m['error']}",
                "reinstall the driver package that owns it (`dpkg -S <file>` names it)",
            )
    if not manifests:
        where = (
            selected_by or "the standard directories (" + ", ".join(_standard_driver_dirs()) + ")"
        )
        _problem(report, "error", f"no Vulkan driver manifest (ICD) in {where}", _DRIVER_FIX)


# ---------------------------------------------------------------------- the devices


def _features(p: dict) -> dict[str, Any]:
    subgroup = str(p["subgroup_size"])
    if p.get("subgroup_size_control"):
        subgroup += f" (control {p['min_subgroup_size']}-{p['max_subgroup_size']})"
    return {
        "fp16": p["supports_fp16"],
        # bf16 tensors are stored as 16 bits and computed in fp32: the storage fp16 needs.
        "bf16": p["supports_fp16"],
        "fp64": p["supports_fp64"],
        "int64": p["supports_int64"],
        "int16": p["supports_int16"],
        "subgroup_size": subgroup,
        "matrix_units_fp16": p["cooperative_matrix"] or None,
        "matrix_units_bf16": p["cooperative_matrix_bf16"] or None,
        "memory_budget": p.get("supports_memory_budget", False),
        # Queues the streams run on (1: every stream shares one, as on lavapipe)
        "compute_queues": p.get("queue_count", 1),
    }


def _smoke_matmul(dev: Any, matmul: Callable) -> dict[str, Any]:
    """A matmul on the device compared with the CPU's, in float64, value by value."""
    import torch

    g = torch.Generator().manual_seed(0)
    m, k, n = 100, 300, 70  # not multiples of any tile: edge tiles are exercised
    a = torch.randn(m, k, generator=g)
    b = torch.randn(k, n, generator=g)
    expected = a.double() @ b.double()
    got = matmul(a.to(dev), b.to(dev)).cpu()
    if tuple(got.shape) != (m, n):
        return {"ok": False, "shape": f"{m}x{k}x{n}", "error": f"result shape {tuple(got.shape)}"}
    diff = (got.double() - expected).abs()
    finite = bool(torch.isfinite(got).all())
    max_rel = float(diff.max() / expected.abs().max()) if finite else float("inf")
    ok = finite and max_rel <= 1e-3
    result = {"ok": ok, "shape": f"{m}x{k}x{n}", "max_rel_error": max_rel}
    if not ok:
        where = divmod(int(diff.nan_to_num(float("inf")).argmax()), n)
        result["error"] = (
            f"matmul differs from the CPU: max relative error {max_rel:.3g} "
            f"(at {where}: {float(got[where]):.6g} instead of {float(expected[where]):.6g})"
        )
    return result


def _smoke(index: int, matmul: Callable | None = None) -> dict[str, Any]:
    """Checks device ``index`` works, and times it (about a second on lavapipe)."""
    import torch

    import torch_vkml

    matmul = matmul or torch.matmul
    dev = torch.device("vkml", index)
    out: dict[str, Any] = {"ok": False}
    try:
        out["matmul"] = _smoke_matmul(dev, matmul)
        if not out["matmul"]["ok"]:
            out["error"] = out["matmul"]["error"]
            return out

        # GFLOP/s: the first size whose product takes 20 ms or more (or the largest).
        for size in (256, 512, 1024, 2048, 4096):
            a = torch.rand(size, size).to(dev)
            b = torch.rand(size, size).to(dev)
            matmul(a, b)  # compiles the pipeline
            torch_vkml.synchronize(index)
            start = time.perf_counter()
            matmul(a, b)
            torch_vkml.synchronize(index)
            once = time.perf_counter() - start
            if once >= 0.02 or size == 4096:
                reps = max(1, min(20, int(0.2 / max(once, 1e-6))))
                start = time.perf_counter()
                for _ in range(reps):
                    matmul(a, b)
                torch_vkml.synchronize(index)
                seconds = (time.perf_counter() - start) / reps
                out["gflops"] = 2 * size**3 / seconds / 1e9
                out["gflops_size"] = size
                break
        del a, b

        # Copy bandwidth: 64 MiB from pageable host memory and back, best of three.
        nbytes = 64 * 2**20
        host = (torch.arange(nbytes, dtype=torch.int32) % 251).to(torch.uint8)
        h2d, d2h = float("inf"), float("inf")
        for _ in range(3):
            start = time.perf_counter()
            on_device = host.to(dev)
            torch_vkml.synchronize(index)
            h2d = min(h2d, time.perf_counter() - start)
            start = time.perf_counter()
            back = on_device.cpu()
            d2h = min(d2h, time.perf_counter() - start)
        out["h2d_gb_per_s"] = nbytes / h2d / 1e9
        out["d2h_gb_per_s"] = nbytes / d2h / 1e9
        out["copy_ok"] = bool(torch.equal(back, host))
        if not out["copy_ok"]:
            out["error"] = "a 64 MiB host -> device -> host round trip changed the data"
            return out
        out["ok"] = True
    except Exception as e:  # any failure of the device is the finding, not a crash
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def _check_devices(report: dict, _C: Any, smoke: bool) -> None:
    report["available"] = bool(_C.is_available())
    report["unavailable_reason"] = _C.unavailable_reason() or None
    report["devices"] = []
    for i in range(_C.device_count()):
        p = dict(_C.get_device_properties(i, details=True))
        device = {"index": i, **p, "features": _features(p)}
        if smoke:
            device["smoke"] = _smoke(i)
            if not device["smoke"]["ok"]:
                _problem(
                    report,
                    "error",
                    f"device {i} ({p['name']}) failed its smoke test: {device['smoke']['error']}",
                    _REPORT_FIX,
                )
        if not p["supports_fp64"]:
            _problem(
                report,
                "note",
                f"device {i} ({p['name']}) has no fp64 (shaderFloat64)",
                "convert float64 tensors to float32 before moving them to vkml",
            )
        report["devices"].append(device)

    if not report["available"]:
        reason = report["unavailable_reason"] or "unknown"
        if reason.startswith("no Vulkan loader"):
            fix = _LOADER_FIX
        elif "older than 1.2" in reason:
            fix = "update the Vulkan loader (`apt install libvulkan1` from a newer release)"
        elif "TORCH_VKML_VISIBLE_DEVICES" in reason:
            fix = "unset TORCH_VKML_VISIBLE_DEVICES, or list indices of the usable devices"
        elif "features torch-vkml needs" in reason:
            fix = (
                "update the GPU driver (Mesa 22 or newer, or a current vendor driver): the "
                "devices listed lack what torch-vkml needs"
            )
        elif any(p["severity"] == "error" for p in report["problems"]):
            # What made it fail was found above (a missing manifest, a broken driver, ...).
            fix = next(p["fix"] for p in report["problems"] if p["severity"] == "error")
        else:
            fix = _DRIVER_FIX
        _problem(report, "error", f"no usable Vulkan device: {reason}", fix)
        return

    types = {d["device_type"] for d in report["devices"]}
    if types == {"cpu"}:
        _problem(
            report,
            "note",
            "the only device is Vulkan on the CPU (lavapipe): correct, but slow",
            "for a GPU, install its Vulkan driver (`apt install mesa-vulkan-drivers` for AMD "
            "and Intel, or the NVIDIA driver)",
        )
    vendors = {d["vendor"] for d in report["devices"]}
    glx_nvidia = any(
        os.path.basename(m.get("library_path") or "").startswith("libGLX_nvidia")
        for m in report.get("drivers", {}).get("manifests", [])
    )
    if glx_nvidia and "NVIDIA" not in vendors and not os.environ.get("DISPLAY"):
        _problem(
            report,
            "warning",
            "an NVIDIA driver is installed but its device is missing (its GLX library needs "
            "a display)",
            "point VK_DRIVER_FILES at a copy of nvidia_icd.json whose library_path is "
            "libEGL_nvidia.so.0 (see the README's Troubleshooting)",
        )


# ------------------------------------------------------------------------- the report


def _check_torch(report: dict, built_for: str | None) -> None:
    import torch

    running = torch.__version__.split("+")[0]
    report["torch"] = {"version": torch.__version__, "built_for": built_for}
    if built_for is None:
        return

    def release(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split(".")[:3] if x.isdigit())

    if release(running)[:2] != release(built_for)[:2]:
        severity = "error"
    elif release(running) != release(built_for):
        severity = "warning"
    else:
        return
    _problem(
        report,
        severity,
        f"torch-vkml was built for torch {built_for}, this is torch {torch.__version__}",
        _REBUILD_FIX + f", or install torch=={built_for}",
    )


def collect(smoke: bool = True) -> dict[str, Any]:
    """The doctor's findings as a dict (what ``--json`` prints)."""
    report: dict[str, Any] = {
        "ok": False,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "problems": [],
    }
    try:
        import torch_vkml
        from torch_vkml import _C
    except Exception as e:  # an extension built for another torch, a missing library, ...
        torch_vkml = _C = None
        report["torch_vkml"] = {"version": None, "path": None, "import_error": str(e)}
        _problem(report, "error", f"`import torch_vkml` fails: {e}", _REBUILD_FIX)
    else:
        report["torch_vkml"] = {
            "version": torch_vkml.__version__,
            "path": os.path.dirname(torch_vkml.__file__),
        }
    _check_torch(report, getattr(_C, "built_for_torch", None))
    lib = _check_loader(report)
    _check_drivers(report)
    _check_layers(report, lib, bool(_C and _C.validation_enabled()))
    report["environment"] = {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith(("TORCH_VKML_", "VK_", "LP_", "MESA_"))
        or k in ("TORCH_DEVICE_BACKEND_AUTOLOAD", "DISPLAY", "WAYLAND_DISPLAY")
    }
    if _C is not None:
        _check_devices(report, _C, smoke)
        usable = [d for d in report["devices"] if not smoke or d.get("smoke", {}).get("ok", False)]
        report["ok"] = bool(report["available"] and usable)
    order = {"error": 0, "warning": 1, "note": 2}
    report["problems"].sort(key=lambda p: order[p["severity"]])
    return report


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _yes(v: Any) -> str:
    return "yes" if v is True else "no" if v is False else str(v) if v else "none"


def format_report(report: dict[str, Any]) -> str:
    """The report as text, for people."""
    lines = ["torch-vkml doctor", ""]
    tv = report["torch_vkml"]
    lines.append(f"torch-vkml   {tv['version'] or 'not importable'}  ({tv['path'] or '-'})")
    t = report["torch"]
    lines.append(f"torch        {t['version']}  (extension built for {t['built_for'] or '?'})")
    lines.append(f"Python       {report['python']}  ({report['platform']})")
    loader = report["loader"]
    if loader["found"]:
        lines.append(f"loader       {loader['path']}  (Vulkan {loader['version']})")
    else:
        lines.append(f"loader       not found ({loader['error']})")
    drivers = report["drivers"]
    source = drivers["selected_by"] or "the standard search path"
    lines.append(f"drivers      from {source}:")
    for m in drivers["manifests"]:
        if m["loadable"]:
            state = f"-> {m['library_path']} (Vulkan {m['api_version'] or '?'})"
        elif m["other_architecture"]:
            state = f"-> {m['library_path']} (another architecture; skipped)"
        else:
            state = f"BROKEN: {m['error']}"
        lines.append(f"               {m['manifest']} {state}")
    if not drivers["manifests"]:
        lines.append("               none")
    layer = report["validation_layer"]
    lines.append(
        f"validation   layer {'installed' if layer['available'] else 'not installed'}, "
        + ("on in this process" if layer["enabled"] else "off (TORCH_VKML_VALIDATION=1: on)")
    )
    for k, v in report["environment"].items():
        lines.append(f"env          {k}={v}")

    devices = report.get("devices", [])
    lines += ["", f"devices      {len(devices)}"]
    for d in devices:
        lines.append(f"  [{d['index']}] {d['name']}")
        lines.append(
            f"      {d['device_type']}, {d['vendor']} (vendor 0x{d['vendor_id']:04x}, "
            f"device 0x{d['device_id']:04x}), Vulkan {d['api_version']}"
        )
        lines.append(
            f"      driver {d['driver_name']} {d['driver_info']} (version {d['driver_version']})"
        )
        for h_index, h in enumerate(d["heaps"]):
            budget = f", budget {_gib(h['budget'])}" if d["features"]["memory_budget"] else ""
            kind = "device-local" if h["device_local"] else "host"
            lines.append(f"      heap {h_index}: {_gib(h['size'])} {kind}{budget}")
        f = d["features"]
        lines.append(
            "      fp16 {} bf16 {} fp64 {} int64 {} int16 {}, subgroup {}, {} compute "
            "queue(s) for streams".format(
                *(_yes(f[k]) for k in ("fp16", "bf16", "fp64", "int64", "int16")),
                f["subgroup_size"],
                f["compute_queues"],
            )
        )
        lines.append(
            f"      matrix units fp16 {_yes(f['matrix_units_fp16'])}, bf16 "
            f"{_yes(f['matrix_units_bf16'])}; memory budget {_yes(f['memory_budget'])}"
        )
        s = d.get("smoke")
        if s is None:
            continue
        if s["ok"]:
            lines.append(
                f"      smoke test ok: matmul {s['matmul']['shape']} matches the CPU "
                f"(max rel. error {s['matmul']['max_rel_error']:.1e}); "
                f"{s['gflops']:.1f} GFLOP/s fp32 at {s['gflops_size']}^3; copies "
                f"{s['h2d_gb_per_s']:.1f} GB/s to, {s['d2h_gb_per_s']:.1f} GB/s from the device"
            )
        else:
            lines.append(f"      smoke test FAILED: {s['error']}")

    lines.append("")
    if report["problems"]:
        lines.append("problems and fixes:")
        for p in report["problems"]:
            lines.append(f"  {p['severity']}: {p['problem']}")
            lines.append(f"      fix: {p['fix']}")
    else:
        lines.append("no problems found")
    usable = sum(1 for d in devices if d.get("smoke", {"ok": True})["ok"])
    lines.append("")
    lines.append(
        f"result: OK, {usable} usable device(s)" if report["ok"] else "result: NO USABLE DEVICE"
    )
    return "\n".join(lines)


def doctor(json: bool = False, smoke: bool = True, file: TextIO | None = None) -> dict[str, Any]:
    """Diagnoses the Vulkan set-up and prints the findings with their fixes.

    ``json``: print one JSON object instead of text. ``smoke``: run the smoke test on
    each device (about a second per device). Returns the report; ``report["ok"]`` is
    whether at least one device is usable.
    """
    report = collect(smoke=smoke)
    text = _json.dumps(report, indent=2) if json else format_report(report)
    print(text, file=file or sys.stdout, flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torch_vkml doctor",
        description="Checks the Vulkan loader, drivers and devices torch-vkml uses, runs a "
        "smoke test on each device and says how to fix what is wrong. Exit status 1 when "
        "no device is usable.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-smoke", action="store_true", help="skip the per-device tests")
    args = parser.parse_args(argv)
    report = doctor(json=args.json, smoke=not args.no_smoke)
    return 0 if report["ok"] else 1


if __name__ == "__main__":  # run by its path where `import torch_vkml` fails
    # Keep `import torch` from importing a broken torch_vkml through autoload.
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    sys.path = [p for p in sys.path if os.path.abspath(p) != os.path.dirname(__file__)]
    sys.exit(main())
