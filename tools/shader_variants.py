"""The compiled variants of each compute shader, read from the `//!` lines at its top.

This is the one reader of those lines: shaders.cmake compiles what it lists, the shader
registry embeds what was compiled under the names it gives, and the launchers name
variants through the C++ enum it writes, so that a misspelt variant fails the build.

Declarations (one per line, in a shader's first lines):
  //! variant NAME FLAG...
      one variant, compiled with glslc and these flags.
  //! dtypes DT... [suffix=S] [FLAG...]
      one variant per storage dtype (f32 f16 bf16 f64 i32 i64 i16 i8 u8), named DT, or
      DT_S, compiled with -DST_<DT> (and -DNEED_F16 for f16 and bf16, -DNEED_I16 for
      i16) and the FLAGs. The
      C++ lookup shaders::<shader>[_<S>](DType) finds them; u8 also serves bool.
  //! widths N... [FLAG...]
      one variant per element size in bytes, named bN, compiled with -DEL=N (and
      -DNEED_F16 for 2): for kernels that move bits. Lookup: shaders::<shader>(itemsize).
  //! coopmat-variant NAME FLAG... [--retype-bf16]
      compiled with a glslang that knows GL_KHR_cooperative_matrix (see shaders.cmake);
      declared in C++ even where the build cannot compile it (its blob is then null).
A shader without declarations is compiled once, under its file name.

    python tools/shader_variants.py cmake OUT.cmake SHADER.comp...
    python tools/shader_variants.py header OUT.h SHADER.comp...
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

DTYPES = {  # variant dtype -> the vkml::DType values it stores
    "f32": ["f32"],
    "f16": ["f16"],
    "bf16": ["bf16"],
    "f64": ["f64"],
    "i32": ["i32"],
    "i64": ["i64"],
    "i16": ["i16"],
    "i8": ["i8"],
    "u8": ["u8", "b8"],
}
NEEDS = {"f16": ["-DNEED_F16"], "bf16": ["-DNEED_F16"], "i16": ["-DNEED_I16"]}  # extensions
WIDTHS = ("1", "2", "4", "8")


@dataclass
class Variant:
    shader: Path
    suffix: str  # "" for a shader compiled once
    flags: list[str]
    coopmat: bool = False
    retype_bf16: bool = False

    @property
    def name(self) -> str:
        return f"{self.shader.stem}_{self.suffix}" if self.suffix else self.shader.stem


@dataclass
class Lookup:
    """A C++ function from a dtype (or element size) to one declaration's variants."""

    function: str
    declaration: str
    by_dtype: bool
    cases: dict[str, str] = field(default_factory=dict)  # key -> variant name


def _fail(shader: Path, line: str, why: str) -> None:
    raise SystemExit(f"{shader.name}: `{line}`: {why}")


def parse(shader: Path) -> tuple[list[Variant], list[Lookup]]:
    variants: list[Variant] = []
    lookups: list[Lookup] = []
    for line in shader.read_text().splitlines():
        if not line.startswith("//! "):
            continue
        kind, *words = shlex.split(line[4:])
        if kind in ("variant", "coopmat-variant"):
            if not words:
                _fail(shader, line, "no variant name")
            retype = "--retype-bf16" in words
            flags = [w for w in words[1:] if w != "--retype-bf16"]
            if retype and kind != "coopmat-variant":
                _fail(shader, line, "--retype-bf16 is for coopmat variants")
            variants.append(Variant(shader, words[0], flags, kind == "coopmat-variant", retype))
        elif kind == "dtypes":
            keys = [w for w in words if w in DTYPES]
            rest = [w for w in words if w not in DTYPES]
            suffix = next((w[7:] for w in rest if w.startswith("suffix=")), "")
            flags = [w for w in rest if not w.startswith("suffix=")]
            if not keys or any(not f.startswith("-D") for f in flags):
                _fail(shader, line, f"expected dtypes from {list(DTYPES)}, then flags")
            fn = f"{shader.stem}_{suffix}" if suffix else shader.stem
            lookup = Lookup(fn, line[4:], True)
            for dt in keys:
                v = Variant(
                    shader,
                    f"{dt}_{suffix}" if suffix else dt,
                    [f"-DST_{dt.upper()}", *NEEDS.get(dt, []), *flags],
                )
                variants.append(v)
                for t in DTYPES[dt]:
                    lookup.cases[t] = v.name
            lookups.append(lookup)
        elif kind == "widths":
            keys = [w for w in words if w in WIDTHS]
            flags = [w for w in words if w not in WIDTHS]
            if not keys or any(not f.startswith("-D") for f in flags):
                _fail(shader, line, f"expected element sizes from {list(WIDTHS)}, then flags")
            lookup = Lookup(shader.stem, line[4:], False)
            for n in keys:
                need = ["-DNEED_F16"] if n == "2" else []
                v = Variant(shader, f"b{n}", [f"-DEL={n}", *need, *flags])
                variants.append(v)
                lookup.cases[n] = v.name
            lookups.append(lookup)
        else:
            _fail(shader, line, "unknown declaration")
    if not variants:
        variants.append(Variant(shader, "", []))
    return variants, lookups


def declared(shaders: list[Path]) -> tuple[list[Variant], list[Lookup]]:
    """Every variant of these shaders, sorted by name (the enum's order), and the lookups."""
    variants: list[Variant] = []
    lookups: list[Lookup] = []
    for s in sorted(shaders, key=lambda p: p.name):
        v, lk = parse(s)
        variants += v
        lookups += lk
    names = [v.name for v in variants]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"shader variants declared twice: {sorted(dup)}")
    return sorted(variants, key=lambda v: v.name), lookups


def write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def cmake_text(variants: list[Variant]) -> str:
    lines = ["# Generated by tools/shader_variants.py; do not edit."]
    for v in variants:
        args = [
            str(v.shader),
            v.name,
            "coopmat" if v.coopmat else "glslc",
            "retype-bf16" if v.retype_bf16 else "keep",
            *v.flags,
        ]
        lines.append("vkml_shader_variant(" + " ".join(f'"{a}"' for a in args) + ")")
    return "\n".join(lines) + "\n"


def header_text(variants: list[Variant], lookups: list[Lookup]) -> str:
    lines = [
        "// Generated by tools/shader_variants.py from the //! lines of"
        " csrc/vkml/shaders/*.comp; do not edit.",
        "#pragma once",
        "#include <cstddef>",
        "#include <cstdint>",
        "",
        '#include "vkml/core/dtype.h"',
        "",
        "namespace vkml {",
        "",
        "// Every shader variant the sources declare. One the build could not compile (a",
        "// cooperative-matrix variant without its compiler) is here all the same, with no blob.",
        "enum class Shader : uint16_t {",
        *(f"  {v.name}," for v in variants),
        "  none,  // what a lookup below gives for a dtype or size its shader lacks",
        "};",
        f"inline constexpr size_t kShaderCount = {len(variants)};",
        "",
        "namespace shaders {",
    ]
    for lk in lookups:
        param = "DType t" if lk.by_dtype else "size_t itemsize"
        lines += [
            "",
            f"// {lk.declaration}",
            f"constexpr Shader {lk.function}({param}) {{",
            f"  switch ({'t' if lk.by_dtype else 'itemsize'}) {{",
        ]
        for key, name in lk.cases.items():
            label = f"DType::{key}" if lk.by_dtype else key
            lines.append(f"    case {label}:")
            lines.append(f"      return Shader::{name};")
        lines += ["    default:", "      return Shader::none;", "  }", "}"]
    lines += ["", "}  // namespace shaders", "", "}  // namespace vkml", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    mode, out, shaders = argv[1], Path(argv[2]), [Path(p) for p in argv[3:]]
    variants, lookups = declared(shaders)
    if mode == "cmake":
        write_if_changed(out, cmake_text(variants))
    elif mode == "header":
        write_if_changed(out, header_text(variants, lookups))
    else:
        raise SystemExit(f"unknown mode {mode}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
