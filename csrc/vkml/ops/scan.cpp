#include "vkml/ops/scan.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/scan_push.h"

namespace vkml::ops {

namespace {

using Push = scan_detail::Push;

// Rows (inner == 1) at least this long get workgroups; shorter lines a thread.
constexpr int64_t kRowMinLength = 64;
// Tiles of WG elements per workgroup in row mode: long rows are cut into
// chunks, scanned independently, and joined by a scan of the chunk totals.
constexpr int64_t kTilesPerChunk = 16;

enum Mode { kLine = SCAN_LINE, kChunks = SCAN_CHUNKS, kCarry = SCAN_CARRY };

uint32_t workgroup(Device& dev, uint32_t wg) {
  while (wg > 64 && wg > dev.info().max_workgroup_invocations) wg /= 2;
  return wg;
}

VkPipeline pipeline_for(Device& dev, DType dt, ScanOp op, Mode mode, uint32_t wg) {
  // float32 logcumsumexp carries fp64 where it can (see shaders/scan.comp).
  bool acc64 = dt == DType::f32 && op == ScanOp::LogSumExp && dev.info().supports_fp64;
  return dev.pipelines().get(acc64 ? shaders::scan_acc64(dt) : shaders::scan(dt),
                             {int(op), int(mode), int32_t(wg)});
}

// A device temporary released when it goes out of scope: a freed chunk may be
// reused by a later dispatch at once, since dispatches run in order.
struct Temp {
  Device& dev;
  uint64_t address = 0;
  Temp(Device& d, uint64_t bytes) : dev(d) {
    if (bytes) address = d.memory().allocate(bytes).address;
  }
  ~Temp() {
    if (address) dev.memory().free(address);
  }
};

// in -> out (and indices), `numel` elements each.
Access line_access(const ScanArgs& a, DType dt, int64_t numel) {
  Access access;
  access.read(span_elems(a.in, numel, itemsize(dt)));
  access.write(span_elems(a.out, numel, itemsize(dt)));
  if (a.op == ScanOp::Max || a.op == ScanOp::Min) access.write(span_elems(a.indices, numel, 8));
  return access;
}

void scan_rows(Device& dev, const ScanArgs& a, DType dt) {
  uint32_t wg = workgroup(dev, 128);
  int64_t chunk = int64_t(wg) * kTilesPerChunk;
  int64_t nchunks = (a.n + chunk - 1) / chunk;
  bool with_idx = a.op == ScanOp::Max || a.op == ScanOp::Min;
  DType pdt =
      dt == DType::f16 || dt == DType::bf16 ? DType::f32 : dt;  // chunk totals keep fp32 precision
  int64_t slots = nchunks > 1 ? a.outer * nchunks : 0;
  Temp part(dev, slots * itemsize(pdt)), scanned(dev, slots * itemsize(pdt));
  Temp part_idx(dev, with_idx ? slots * 8 : 0), scanned_idx(dev, with_idx ? slots * 8 : 0);
  Push p{.in_ptr = a.in,
         .out_ptr = a.out,
         .idx_ptr = a.indices,
         .part = part.address,
         .part_idx = part_idx.address,
         .scanned = scanned.address,
         .scanned_idx = scanned_idx.address,
         .outer = uint32_t(a.outer),
         .n = uint32_t(a.n),
         .inner = 1u,
         .chunk = uint32_t(chunk),
         .nchunks = uint32_t(nchunks)};
  uint64_t groups = uint64_t(a.outer * nchunks);
  const int64_t numel = a.outer * a.n;
  Access chunks = line_access(a, dt, numel);  // and the chunk totals
  chunks.write(span_elems(part.address, slots, itemsize(pdt)));
  chunks.write(span_elems(part_idx.address, with_idx ? slots : 0, 8));
  dispatch_groups(dev, pipeline_for(dev, dt, a.op, kChunks, wg), &p, sizeof(p), groups, &chunks);
  if (nchunks == 1) return;
  ScanArgs totals;
  totals.op = a.op;
  totals.dtype = pdt;
  totals.in = part.address;
  totals.out = scanned.address;
  totals.indices = scanned_idx.address;  // chunk numbers of the winners (max / min)
  totals.outer = a.outer;
  totals.n = nchunks;
  scan(dev, totals);
  p.in_ptr = a.out;  // the carry pass folds into the chunk-local results
  Access carry;
  carry.read(span_elems(scanned.address, slots, itemsize(pdt)));
  carry.read(span_elems(scanned_idx.address, with_idx ? slots : 0, 8));
  carry.read(span_elems(part_idx.address, with_idx ? slots : 0, 8));  // the winners' positions
  carry.update(span_elems(a.out, numel, itemsize(dt)));
  carry.update(span_elems(with_idx ? a.indices : 0, numel, 8));
  uint32_t cwg = workgroup(dev, 256);
  dispatch_1d(dev, pipeline_for(dev, dt, a.op, kCarry, cwg), &p, sizeof(p), uint64_t(numel), cwg,
              &carry);
}

}  // namespace

void scan(Device& dev, const ScanArgs& a) {
  DType dt = a.dtype == DType::b8 ? DType::u8 : a.dtype;
  VKML_CHECK_ARG(shaders::scan(dt) != Shader::none,
                 std::string("scan: unsupported dtype ") + dtype_name(a.dtype));
  VKML_CHECK_ARG((dt != DType::f16 && dt != DType::bf16) || dev.info().supports_fp16,
                 std::string(dtype_name(dt)) + " is not supported on " + dev.info().name);
  VKML_CHECK_ARG(dt != DType::f64 || dev.info().supports_fp64,
                 "scan: float64 is not supported on " + dev.info().name);
  VKML_CHECK_ARG(a.op != ScanOp::LogSumExp || is_floating(dt),
                 "scan: logcumsumexp needs a floating dtype");
  bool with_idx = a.op == ScanOp::Max || a.op == ScanOp::Min;
  VKML_CHECK_ARG(!with_idx || a.indices != 0, "scan: cummax/cummin need an indices buffer");
  VKML_CHECK_ARG(a.outer >= 0 && a.n >= 0 && a.inner >= 0, "scan: negative size");
  int64_t numel = a.outer * a.n * a.inner;
  if (numel == 0) return;
  check_32bit_indexing(numel, numel, "scan");
  if (a.inner == 1 && a.n >= kRowMinLength) {
    scan_rows(dev, a, dt);
    return;
  }
  uint32_t wg = workgroup(dev, 256);
  Push p{.in_ptr = a.in,
         .out_ptr = a.out,
         .idx_ptr = a.indices,
         .part = 0,
         .part_idx = 0,
         .scanned = 0,
         .scanned_idx = 0,
         .outer = uint32_t(a.outer),
         .n = uint32_t(a.n),
         .inner = uint32_t(a.inner),
         .chunk = 0,
         .nchunks = 1};
  const Access access = line_access(a, dt, numel);
  dispatch_1d(dev, pipeline_for(dev, dt, a.op, kLine, wg), &p, sizeof(p),
              uint64_t(a.outer * a.inner), wg, &access);
}

}  // namespace vkml::ops
