#pragma once
// VK_KHR_cooperative_matrix, declared here for Vulkan headers older than 1.3.255
// (Debian 12 ships 1.3.239), and VK_KHR_shader_bfloat16 (1.4.311). The values are
// the registry's; newer headers define the same names and these blocks step aside.
#include <vulkan/vulkan_core.h>

#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"

constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR =
    VkStructureType(1000506000);
constexpr VkStructureType VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR =
    VkStructureType(1000506001);

enum VkComponentTypeKHR { VK_COMPONENT_TYPE_FLOAT16_KHR = 0, VK_COMPONENT_TYPE_FLOAT32_KHR = 1 };
enum VkScopeKHR { VK_SCOPE_SUBGROUP_KHR = 3 };

struct VkCooperativeMatrixPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize;
  uint32_t NSize;
  uint32_t KSize;
  VkComponentTypeKHR AType;
  VkComponentTypeKHR BType;
  VkComponentTypeKHR CType;
  VkComponentTypeKHR ResultType;
  VkBool32 saturatingAccumulation;
  VkScopeKHR scope;
};

struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
};

typedef VkResult(VKAPI_PTR* PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice physicalDevice, uint32_t* pPropertyCount,
    VkCooperativeMatrixPropertiesKHR* pProperties);
#endif

#ifndef VK_KHR_shader_bfloat16
#define VK_KHR_shader_bfloat16 1
#define VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME "VK_KHR_shader_bfloat16"

constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR =
    VkStructureType(1000141000);
constexpr VkComponentTypeKHR VK_COMPONENT_TYPE_BFLOAT16_KHR = VkComponentTypeKHR(1000141000);

struct VkPhysicalDeviceShaderBfloat16FeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 shaderBFloat16Type;
  VkBool32 shaderBFloat16DotProduct;
  VkBool32 shaderBFloat16CooperativeMatrix;
};
#endif
