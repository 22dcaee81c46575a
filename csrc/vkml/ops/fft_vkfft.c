#include "vkml/ops/fft_vkfft.h"

#include <stdlib.h>

// VkFFT calls Vulkan by the entry points' global names; this build has no
// prototypes (the loader is opened at run time), so here they are pointers, set once.
#define VKML_FFT_POINTER(name) static PFN_##name name;
VKML_VKFFT_FUNCS(VKML_FFT_POINTER)
#undef VKML_FFT_POINTER

#define VKFFT_BACKEND 0
#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>  // the build's copy of vkFFT.h uses its limits
#include <vkFFT.h>

_Static_assert(VKML_VKFFT_UNSUPPORTED_RADIX == VKFFT_ERROR_UNSUPPORTED_RADIX, "VkFFT's codes");
_Static_assert(VKML_VKFFT_UNSUPPORTED_LENGTH == VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH,
               "VkFFT's codes");
_Static_assert(VKML_VKFFT_UNSUPPORTED_LENGTH_R2C == VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C,
               "VkFFT's codes");

struct VkmlFftPlan {
  // VkFFT keeps pointers to these for the plan's life.
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  VkCommandPool command_pool;
  VkFence fence;
  VkBuffer complex_buffer, real_buffer;
  uint64_t complex_bytes, real_bytes;
  int inverse;
  VkFFTApplication app;
};

int vkml_vkfft_initialize(const VkmlFftFunctions* f) {
#define VKML_FFT_SET(name) name = f->name;
  VKML_VKFFT_FUNCS(VKML_FFT_SET)
#undef VKML_FFT_SET
  return glslang_initialize_process() ? 0 : 1;
}

int vkml_vkfft_plan_create(const VkmlFftProblem* p, VkmlFftPlan** out) {
  VkmlFftPlan* plan = (VkmlFftPlan*)calloc(1, sizeof(VkmlFftPlan));
  if (!plan) return VKFFT_ERROR_MALLOC_FAILED;
  plan->physical = p->physical;
  plan->device = p->device;
  plan->queue = p->queue;
  plan->command_pool = p->command_pool;
  plan->fence = p->fence;
  plan->complex_buffer = p->complex_buffer;
  plan->real_buffer = p->real_buffer;
  plan->complex_bytes = p->complex_bytes;
  plan->real_bytes = p->real_bytes;
  plan->inverse = p->kind == VKML_FFT_C2R || (p->kind == VKML_FFT_C2C && p->inverse);

  VkFFTConfiguration c = {0};
  c.FFTdim = (uint64_t)p->rank;
  for (int i = 0; i < 3; ++i) c.size[i] = i < p->rank ? p->size[i] : 1;
  c.numberBatches = p->batch;
  c.physicalDevice = &plan->physical;
  c.device = &plan->device;
  c.queue = &plan->queue;
  c.commandPool = &plan->command_pool;
  c.fence = &plan->fence;
  c.isCompilerInitialized = 1;
  c.doublePrecision = p->double_precision ? 1 : 0;
  // The buffers are named at the first launch, not here: VkFFT 1.2.26 writes a plan's
  // descriptor sets before it has made its Bluestein buffers (sizes with prime factors
  // over 13), which then stay unbound. Launched with the same pointers, later launches
  // write nothing.
  c.bufferSize = &plan->complex_bytes;
  if (p->kind != VKML_FFT_C2C) {
    // The real data lives unpadded in a buffer of its own: R2C reads it, C2R writes
    // its result back there.
    c.performR2C = 1;
    c.isInputFormatted = 1;
    c.inverseReturnToInputBuffer = 1;
    c.inputBufferSize = &plan->real_bytes;
    c.inputBufferStride[0] = c.size[0];
    // C2R of two signals merged into one complex transform mixes their results where
    // a spectrum is not hermitian (imaginary zero and Nyquist bins), which PyTorch
    // reads as if those parts were zero.
    if (p->kind == VKML_FFT_C2R) c.disableMergeSequencesR2C = 1;
  }
  VkFFTResult r = initializeVkFFT(&plan->app, c);
  if (r != VKFFT_SUCCESS) {  // initializeVkFFT cleaned up after itself
    free(plan);
    return (int)r;
  }
  *out = plan;
  return 0;
}

int vkml_vkfft_plan_record(VkmlFftPlan* plan, VkCommandBuffer cb) {
  VkFFTLaunchParams launch = {0};
  launch.commandBuffer = &cb;
  launch.buffer = &plan->complex_buffer;
  if (plan->real_buffer) launch.inputBuffer = &plan->real_buffer;
  return (int)VkFFTAppend(&plan->app, plan->inverse ? 1 : -1, &launch);
}

void vkml_vkfft_plan_destroy(VkmlFftPlan* plan) {
  if (!plan) return;
  deleteVkFFT(&plan->app);
  free(plan);
}
