#include "vkml/ops/scan.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"

namespace vkml::ops {

namespace {

struct Push {
  uint64_t in, out, idx;
  uint32_t outer, n, inner;
};
static_assert(sizeof(Push) <= 128);

// Rows (inner == 1) at least this long get a workgroup each; shorter lines a thread.
constexpr int64_t kRowMinLength = 64;

}  // namespace

void scan(Device& dev, const ScanArgs& a) {
  DType dt = a.dtype == DType::b8 ? DType::u8 : a.dtype;
  const char* suffix = variant_suffix(dt);
  VKML_CHECK_ARG(suffix != nullptr, std::string("scan: unsupported dtype ") + dtype_name(a.dtype));
  VKML_CHECK_ARG(dt != DType::f16 || dev.info().supports_fp16,
                 "float16 is not supported on " + dev.info().name);
  VKML_CHECK_ARG(a.op != ScanOp::LogSumExp || is_floating(dt),
                 "scan: logcumsumexp needs a floating dtype");
  bool with_idx = a.op == ScanOp::Max || a.op == ScanOp::Min;
  VKML_CHECK_ARG(!with_idx || a.indices != 0, "scan: cummax/cummin need an indices buffer");
  VKML_CHECK_ARG(a.outer >= 0 && a.n >= 0 && a.inner >= 0, "scan: negative size");
  int64_t numel = a.outer * a.n * a.inner;
  if (numel == 0) return;
  check_32bit_indexing(numel, numel, "scan");
  bool row = a.inner == 1 && a.n >= kRowMinLength;
  uint32_t wg = row ? 128 : 256;
  while (wg > 64 && wg > dev.info().max_workgroup_invocations) wg /= 2;
  VkPipeline pipeline = dev.pipelines().get(std::string("scan_") + suffix,
                                            {int(a.op), row ? 1 : 0, int32_t(wg)});
  Push p{a.in, a.out, a.indices, uint32_t(a.outer), uint32_t(a.n), uint32_t(a.inner)};
  if (row) {
    uint64_t groups = uint64_t(a.outer);
    uint64_t max_x = std::min<uint64_t>(dev.info().max_workgroup_count[0], 65535);
    uint32_t gx = uint32_t(std::min(groups, max_x));
    uint32_t gy = uint32_t((groups + gx - 1) / gx);
    dev.stream().dispatch(pipeline, &p, sizeof(p), gx, gy, 1);
  } else {
    dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(a.outer * a.inner), wg);
  }
}

}  // namespace vkml::ops
