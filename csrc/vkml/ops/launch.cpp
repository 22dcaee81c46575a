#include "vkml/ops/launch.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "vkml/core/error.h"

namespace vkml::ops {

namespace {
std::atomic<bool> g_gpu_choices{false};
}  // namespace

bool gpu_choices(const Device& dev) {
  return g_gpu_choices.load(std::memory_order_relaxed) || dev.info().device_type != "cpu";
}
void set_gpu_choices(bool on) { g_gpu_choices.store(on); }

int64_t k_splits(const Device& dev, int64_t tiles, int64_t k, int64_t outputs) {
  constexpr int64_t kMinSliceK = 256, kMaxSplits = 64;
  constexpr uint64_t kMaxScratch = 64ull << 20;
  const int64_t target = gpu_choices(dev) ? 1024 : 256;
  if (tiles >= 128 || k < 2 * kMinSliceK) return 1;
  int64_t s = std::min({ceil_div(target, tiles), k / kMinSliceK, kMaxSplits});
  while (s > 1 && uint64_t(s * outputs) * 4 > kMaxScratch) --s;
  return s * outputs >= (int64_t(1) << 31) ? 1 : s;
}

void dispatch_1d(Device& dev, VkPipeline pipeline, const void* push, uint32_t push_size,
                 uint64_t threads, uint32_t wg, const Access* access) {
  if (threads == 0) return;
  dispatch_groups(dev, pipeline, push, push_size, (threads + wg - 1) / wg, access);
}

void dispatch_groups(Device& dev, VkPipeline pipeline, const void* push, uint32_t push_size,
                     uint64_t groups, const Access* access) {
  if (groups == 0) return;
  // As few rows as fit, of equal width: 65536 groups as 2 x 32768, not 2 x 65535 of
  // which 65534 do nothing (the H200 ran 64M-element adds at 0.83x CUDA's bandwidth,
  // 16M and 256M ones at 0.93-0.96x).
  uint64_t max_x = std::min<uint64_t>(dev.info().max_workgroup_count[0], 65535);
  uint64_t rows = (groups + max_x - 1) / max_x;
  uint32_t gx = uint32_t((groups + rows - 1) / rows);
  dev.stream().dispatch(pipeline, push, push_size, gx, uint32_t(rows), 1, access);
}

Span span_of(uint64_t address, size_t itemsize, int ndim, const int64_t* sizes,
             const int64_t* strides) {
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 0) return Span{};
    int64_t reach = (sizes[d] - 1) * strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  return Span{address + uint64_t(lo * int64_t(itemsize)),
              address + uint64_t((hi + 1) * int64_t(itemsize))};
}

Span span_of(const TensorRef& t) {
  return span_of(t.address, itemsize(t.dtype), t.ndim, t.sizes, t.strides);
}

void check_32bit_indexing(int64_t numel, int64_t max_offset, const char* op) {
  if (numel >= (int64_t(1) << 31) || max_offset >= (int64_t(1) << 31)) {
    fail(ErrorKind::InvalidArgument,
         std::string(op) + ": tensors with 2^31 or more elements are not supported yet");
  }
}

void check_float_dtype(Device& dev, DType t, const char* op, bool with_f64) {
  if (with_f64 && t == DType::f64) {
    if (!dev.info().supports_fp64)
      fail(ErrorKind::InvalidArgument,
           std::string(op) + ": float64 is not supported on " + dev.info().name);
    return;
  }
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
    fail(ErrorKind::InvalidArgument, std::string(op) + ": unsupported dtype " + dtype_name(t));
  if (t != DType::f32 && !dev.info().supports_fp16)
    fail(ErrorKind::InvalidArgument,
         std::string(op) + ": " + dtype_name(t) + " is not supported on " + dev.info().name);
}

}  // namespace vkml::ops
