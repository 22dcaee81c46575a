#pragma once
// Fast Fourier transforms through VkFFT (a vendor-neutral Vulkan FFT library that
// generates and compiles its kernels per problem at plan time). One call transforms
// up to three innermost dimensions of a contiguous batch, unnormalized; the caller
// arranges layouts, more dimensions and scaling (csrc/aten/ops_fft.cpp).
#include <cstdint>

#include "vkml/runtime/device.h"

namespace vkml::ops {

enum class FftKind : uint8_t {
  C2C,  // complex to complex, either direction
  R2C,  // real to the onesided (n/2+1 innermost) complex spectrum, forward
  C2R,  // onesided complex spectrum to real, inverse
};

struct FftArgs {
  FftKind kind = FftKind::C2C;
  bool inverse = false;  // C2C only: exp(+2 pi i ...) (R2C is forward, C2R inverse)
  bool double_precision = false;
  int rank = 1;              // signal dimensions, 1..3
  int64_t n[3] = {1, 1, 1};  // their sizes, outermost first; R2C/C2R: real lengths
  int64_t batch = 1;         // signals, one after another
  uint64_t in = 0, out = 0;  // device addresses; complex data interleaved (re, im)
};

// Whether this build has VkFFT (else fft() throws NotImplemented).
bool fft_available();
// Whether VkFFT has kernels for the transform (plans it, cached, to find out): its
// 1.2.26 lacks real transforms of odd lengths that take more than one pass over
// memory, which the caller then runs as complex ones.
bool fft_plannable(Device& dev, const FftArgs& args);
void fft(Device& dev, const FftArgs& args);

// VkFFT's plans (compiled kernels, their descriptor sets and working memory) are
// cached per device, least recently used out, as cuFFT's plans are by PyTorch.
struct FftPlanCacheInfo {
  int64_t size = 0;
  int64_t max_size = 0;
};
FftPlanCacheInfo fft_plan_cache_info(Device& dev);
void fft_plan_cache_set_max_size(Device& dev, int64_t max_size);
void fft_plan_cache_clear(Device& dev);

}  // namespace vkml::ops
