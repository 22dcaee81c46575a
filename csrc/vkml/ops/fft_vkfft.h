#pragma once
// VkFFT plans behind a small C interface. VkFFT is a C header (thirty thousand
// lines) and is compiled as C, in fft_vkfft.c alone: read as C++ it rejects Debian's
// glslang, whose resource-limits struct has grown fields since VkFFT's release
// (CMakeLists.txt builds against a copy of the header that takes glslang's limits).
#include <stdint.h>
#include <vulkan/vulkan_core.h>

#ifdef __cplusplus
extern "C" {
#endif

// The Vulkan entry points VkFFT calls, which the runtime loads (vk_api.h).
#define VKML_VKFFT_FUNCS(X)              \
  X(vkAllocateCommandBuffers)            \
  X(vkAllocateDescriptorSets)            \
  X(vkAllocateMemory)                    \
  X(vkBeginCommandBuffer)                \
  X(vkBindBufferMemory)                  \
  X(vkCmdBindDescriptorSets)             \
  X(vkCmdBindPipeline)                   \
  X(vkCmdCopyBuffer)                     \
  X(vkCmdDispatch)                       \
  X(vkCmdPipelineBarrier)                \
  X(vkCmdPushConstants)                  \
  X(vkCreateBuffer)                      \
  X(vkCreateComputePipelines)            \
  X(vkCreateDescriptorPool)              \
  X(vkCreateDescriptorSetLayout)         \
  X(vkCreatePipelineLayout)              \
  X(vkCreateShaderModule)                \
  X(vkDestroyBuffer)                     \
  X(vkDestroyDescriptorPool)             \
  X(vkDestroyDescriptorSetLayout)        \
  X(vkDestroyPipeline)                   \
  X(vkDestroyPipelineLayout)             \
  X(vkDestroyShaderModule)               \
  X(vkEndCommandBuffer)                  \
  X(vkFreeCommandBuffers)                \
  X(vkFreeMemory)                        \
  X(vkGetBufferMemoryRequirements)       \
  X(vkGetPhysicalDeviceMemoryProperties) \
  X(vkGetPhysicalDeviceProperties)       \
  X(vkMapMemory)                         \
  X(vkQueueSubmit)                       \
  X(vkResetFences)                       \
  X(vkUnmapMemory)                       \
  X(vkUpdateDescriptorSets)              \
  X(vkWaitForFences)

typedef struct VkmlFftFunctions {
#define VKML_FFT_FIELD(name) PFN_##name name;
  VKML_VKFFT_FUNCS(VKML_FFT_FIELD)
#undef VKML_FFT_FIELD
} VkmlFftFunctions;

// Sets VkFFT's entry points and its compiler (glslang) up, once per process.
// Returns 0, or non-zero when glslang fails.
int vkml_vkfft_initialize(const VkmlFftFunctions* functions);

enum { VKML_FFT_C2C = 0, VKML_FFT_R2C = 1, VKML_FFT_C2R = 2 };

typedef struct VkmlFftProblem {
  int kind;     // VKML_FFT_*
  int inverse;  // C2C: the +i exponent (C2R is always inverse, R2C forward)
  int double_precision;
  int rank;          // 1..3
  uint64_t size[3];  // VkFFT's order: innermost (x) first; R2C/C2R: real lengths
  uint64_t batch;
  // Set-up submissions (twiddle tables, Bluestein kernels) go to `queue`, which the
  // caller holds to itself, and are waited for on `fence`.
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  VkCommandPool command_pool;
  VkFence fence;
  // The complex data (C2C in place; R2C's output, C2R's input) and the real data
  // (R2C's input, C2R's output; null for C2C), bound to the plan for its life.
  VkBuffer complex_buffer;
  uint64_t complex_bytes;
  VkBuffer real_buffer;
  uint64_t real_bytes;
} VkmlFftProblem;

typedef struct VkmlFftPlan VkmlFftPlan;

// VkFFT's error codes for lengths it has no kernels for (checked against its enum in
// fft_vkfft.c): 1.2.26 plans no real transform of an odd length that takes it more
// than one pass over memory.
enum {
  VKML_VKFFT_UNSUPPORTED_RADIX = 3001,
  VKML_VKFFT_UNSUPPORTED_LENGTH = 3002,
  VKML_VKFFT_UNSUPPORTED_LENGTH_R2C = 3003,
};

// Returns VkFFT's error code: 0 and *plan on success.
int vkml_vkfft_plan_create(const VkmlFftProblem* problem, VkmlFftPlan** plan);
// Appends the transform to `cb`; it fences its own steps. Returns VkFFT's code.
int vkml_vkfft_plan_record(VkmlFftPlan* plan, VkCommandBuffer cb);
void vkml_vkfft_plan_destroy(VkmlFftPlan* plan);

#ifdef __cplusplus
}
#endif
