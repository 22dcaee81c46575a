// The shape of the elementwise kernels' SPIR-V that decides how long a driver takes to
// create one of their pipelines. A driver compiles the whole module before the op's
// specialization constant prunes the other ops (Mesa inlines and lowers everything
// first), so each extra inlined copy of the op switch, and each coefficient table
// indexed by a loop counter, costs every pipeline of the kernel. On lavapipe these made
// a special-function pipeline take 5 to 9 s and an add 0.5 s; the test suite spent most
// of its time there. Timing would be flaky; the structure is not.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "vkml/runtime/shader_registry.h"

namespace vkml::test {
namespace {

struct SpirvShape {
  int op_switches = 0;      // OpSwitch on a specialization constant: inlined op switches
  int function_arrays = 0;  // Function-storage arrays: tables copied where they are used
};

SpirvShape shape_of(const ShaderBlob& blob) {
  constexpr uint32_t kTypeArray = 28, kTypePointer = 32, kSpecConstant = 50, kVariable = 59,
                     kSwitch = 251, kFunctionStorage = 7;
  std::set<uint32_t> spec_constants, arrays, array_pointers;
  SpirvShape s;
  const uint32_t* w = blob.code;
  const size_t n = blob.bytes / 4;
  for (size_t i = 5; i < n;) {  // past the header
    const uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
    if (count == 0 || i + count > n) break;
    if (op == kTypeArray) arrays.insert(w[i + 1]);
    if (op == kTypePointer && arrays.count(w[i + 3])) array_pointers.insert(w[i + 1]);
    if (op == kSpecConstant) spec_constants.insert(w[i + 2]);
    if (op == kVariable && w[i + 3] == kFunctionStorage && array_pointers.count(w[i + 1]))
      ++s.function_arrays;
    if (op == kSwitch && spec_constants.count(w[i + 1])) ++s.op_switches;
    i += count;
  }
  return s;
}

const char* const kDtypes[] = {"f32", "f16", "bf16", "f64"};

TEST(ShaderStructure, ElementwiseKernelsInlineTheirOpSwitchOncePerPath) {
  for (const char* dtype : kDtypes) {
    for (const char* suffix : {"", "_cmp", "_table", "_special"}) {
      std::string name = std::string("elementwise_") + dtype + suffix;
      const ShaderBlob* blob = find_shader(name);
      if (!blob) continue;  // a variant this dtype does not have
      SpirvShape s = shape_of(*blob);
      // One switch for the elementwise path, one more where four elements go at once.
      bool quads = std::string(suffix) != "_special" && std::string(suffix) != "_cmp" &&
                   std::string(dtype) != "f64";
      EXPECT_EQ(s.op_switches, quads ? 2 : 1) << name;
    }
  }
}

TEST(ShaderStructure, SpecialFunctionTablesFoldIntoConstants) {
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    std::string name = std::string("elementwise_") + dtype + "_special";
    const ShaderBlob* blob = find_shader(name);
    ASSERT_NE(blob, nullptr) << name;
    // What remains indexes by a value, not a counter: zeta's early-exit sum, polygamma's
    // coefficient scratch.
    EXPECT_LE(shape_of(*blob).function_arrays, 4) << name;
  }
}

}  // namespace
}  // namespace vkml::test
