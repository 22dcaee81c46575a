// Device enumeration and the runtime's error reporting.
#include <cstdlib>
#include <string>

#include "vkml/runtime/physical_device.h"
#include "vkml_test.h"

namespace vkml::test {
namespace {

using RuntimeTest = VkmlTest;

int type_rank(const std::string& t) {
  if (t == "discrete") return 0;
  if (t == "integrated") return 1;
  if (t == "virtual") return 2;
  if (t == "cpu") return 3;
  return 4;
}

TEST_F(RuntimeTest, EnumeratesUsableDevices) {
  Runtime& rt = Runtime::get();
  ASSERT_GE(rt.device_count(), 1);
  EXPECT_TRUE(rt.unavailable_reason().empty());
  for (int i = 0; i < rt.device_count(); ++i) {
    const DeviceInfo& info = rt.info(i);
    SCOPED_TRACE(info.name);
    EXPECT_FALSE(info.name.empty());
    EXPECT_FALSE(info.vendor.empty());
    EXPECT_FALSE(info.driver_name.empty());
    EXPECT_NE(type_rank(info.device_type), 4) << info.device_type;
    EXPECT_GE(info.api_version, uint32_t(VK_API_VERSION_1_2));
    EXPECT_TRUE(info.unsupported_reason.empty());
    EXPECT_FALSE(info.heaps.empty());
    EXPECT_GT(info.total_memory, 0u);
    EXPECT_GT(info.subgroup_size, 0u);
    EXPECT_GE(info.max_workgroup_invocations, 128u);
    EXPECT_GE(info.max_shared_memory, 16384u);
    for (int d = 0; d < 3; ++d) EXPECT_GE(info.max_workgroup_count[d], 65535u);
    EXPECT_GT(info.max_storage_buffer_range, 0u);
    EXPECT_TRUE(info.supports_int64);
  }
}

TEST_F(RuntimeTest, ValidationLayerIsOnWhenAsked) {
  const char* v = std::getenv("TORCH_VKML_VALIDATION");
  if (!v || !*v || std::string(v) == "0") GTEST_SKIP() << "TORCH_VKML_VALIDATION is not set";
  EXPECT_TRUE(Runtime::get().validation_enabled());
}

TEST_F(RuntimeTest, DevicesAreRankedByType) {
  const char* visible = std::getenv("TORCH_VKML_VISIBLE_DEVICES");
  if (visible && *visible) GTEST_SKIP() << "TORCH_VKML_VISIBLE_DEVICES sets the order";
  Runtime& rt = Runtime::get();
  for (int i = 1; i < rt.device_count(); ++i)
    EXPECT_LE(type_rank(rt.info(i - 1).device_type), type_rank(rt.info(i).device_type));
}

TEST_F(RuntimeTest, DeviceIsCreatedOnce) {
  Device& a = Runtime::get().device(0);
  Device& b = Runtime::get().device(0);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(a.index(), 0);
  EXPECT_FALSE(a.lost());
}

void expect_invalid_index(int index) {
  try {
    Runtime::get().device(index);
    ADD_FAILURE() << "device(" << index << ") did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

TEST_F(RuntimeTest, BadIndexThrowsInvalidArgument) {
  expect_invalid_index(-1);
  expect_invalid_index(Runtime::get().device_count());
  expect_invalid_index(1000);
  EXPECT_THROW(Runtime::get().info(Runtime::get().device_count()), Error);
}

// A misspelt variant no longer compiles (Shader is generated from the shaders' own
// declarations); what is left to fail at run time is no variant or an unbuilt one.
TEST_F(RuntimeTest, MissingShaderIsAnError) {
  EXPECT_THROW(dev().pipelines().get(Shader::none), Error);
  EXPECT_EQ(shader_blob(Shader::none), nullptr);
  EXPECT_EQ(find_shader("no_such_shader"), nullptr);
}

// The enum, the name table and the embedded blobs agree: every variant glslc compiles
// is built, under its own name, and only cooperative-matrix variants may be missing.
TEST_F(RuntimeTest, EveryDeclaredShaderIsEmbeddedUnderItsName) {
  size_t built = 0;
  for (size_t i = 0; i < kShaderCount; ++i) {
    const Shader s = Shader(i);
    const ShaderBlob* blob = shader_blob(s);
    const std::string name = shader_name(s);
    if (!blob) {
      EXPECT_EQ(name.rfind("gemm_coopmat_", 0), 0u) << name << " was not built";
      continue;
    }
    ++built;
    EXPECT_EQ(name, blob->name);
    EXPECT_EQ(find_shader(name), blob);
    EXPECT_GT(blob->bytes, 0u);
  }
  EXPECT_EQ(built, all_shaders().size());
  EXPECT_EQ(shaders::elementwise(DType::b8), Shader::elementwise_u8);  // bool stores as u8
  EXPECT_EQ(shaders::reduce(DType::bf16), Shader::none);
  EXPECT_EQ(shaders::cat(2), Shader::cat_b2);
  EXPECT_EQ(shaders::cat(3), Shader::none);
}

// Cooperative matrices turn the Vulkan memory model on; device-scope atomics (in
// most reductions and scatters) are then invalid unless its device-scope feature is
// on too (a validation error on every device with matrix units before this held).
TEST_F(RuntimeTest, MatrixUnitsEnableTheMemoryModelWithDeviceScope) {
  DeviceInfo info = dev().info();
  info.coopmat_m = info.coopmat_n = info.coopmat_k = 16;
  EnabledFeatures with;
  choose_features(dev().physical(), info, with);
  EXPECT_TRUE(with.v12.vulkanMemoryModel);
  EXPECT_TRUE(with.v12.vulkanMemoryModelDeviceScope);
  EXPECT_TRUE(with.coopmat.cooperativeMatrix);
  EXPECT_EQ(with.v12.pNext,
            dev().info().subgroup_size_control ? (void*)&with.v13 : (void*)&with.coopmat);

  info.coopmat_m = info.coopmat_n = info.coopmat_k = 0;
  EnabledFeatures without;
  choose_features(dev().physical(), info, without);
  EXPECT_FALSE(without.v12.vulkanMemoryModel);
  EXPECT_FALSE(without.coopmat.cooperativeMatrix);
}

}  // namespace
}  // namespace vkml::test
