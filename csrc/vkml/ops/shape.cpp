#include "vkml/ops/shape.h"

#include <algorithm>
#include <cstdlib>

#include "vkml/core/error.h"
#include "vkml/ops/copy.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/cat_push.h"
#include "vkml/shaders/repeat_index_push.h"
#include "vkml/shaders/tri_push.h"

namespace vkml::ops {

namespace {

using cat_detail::CatEntry;
using cat_detail::CatPush;

using TriPush = tri_detail::TriPush;

int64_t reach(int64_t n, int64_t stride) { return n > 0 ? (n - 1) * std::abs(stride) : 0; }

using RepeatPush = repeat_index_detail::RepeatPush;

}  // namespace

void repeat_index(Device& dev, uint64_t repeats, uint64_t cum, uint64_t dst, int64_t n,
                  int64_t total, bool i32) {
  if (n == 0 || total == 0) return;
  check_32bit_indexing(std::max(n, total), std::max(n, total), "repeat_interleave");
  RepeatPush p{.repeats = repeats,
               .cum = cum,
               .dst = dst,
               .n = uint32_t(n),
               .total = uint32_t(total),
               .i32 = i32 ? 1u : 0u};
  const size_t isize = i32 ? 4 : 8;
  const Span rep = span_elems(repeats, n, isize), sums = span_elems(cum, n, 4);
  Access counts, scan, fill;  // repeats -> cum, prefix sums of cum in place, cum -> dst
  counts.read(rep);
  counts.write(sums);
  scan.update(sums);
  fill.read(sums);
  fill.write(span_elems(dst, total, isize));
  int32_t wg = int32_t(kWorkgroup);
  dispatch_1d(dev, dev.pipelines().get(Shader::repeat_index, {REPEAT_INDEX_COUNTS, wg}), &p,
              sizeof(p), uint64_t(n), wg, &counts);
  uint32_t scan_wg = 256;
  while (scan_wg > 64 && scan_wg > dev.info().max_workgroup_invocations) scan_wg /= 2;
  dev.stream().dispatch(
      dev.pipelines().get(Shader::repeat_index, {REPEAT_INDEX_PREFIX_SUM, int32_t(scan_wg)}), &p,
      sizeof(p), 1, 1, 1, &scan);
  dispatch_1d(dev, dev.pipelines().get(Shader::repeat_index, {REPEAT_INDEX_SEARCH, wg}), &p,
              sizeof(p), uint64_t(total), wg, &fill);
}

void cat(Device& dev, DType dtype, uint64_t dst, const std::vector<CatInput>& inputs, int64_t outer,
         int64_t inner) {
  std::vector<CatEntry> table;
  int64_t total = 0;
  for (const CatInput& in : inputs) {
    VKML_CHECK_ARG(in.size >= 0, "cat: negative size");
    if (in.size == 0) continue;
    check_32bit_indexing(outer * in.size * inner,
                         reach(outer, in.stride_outer) + reach(in.size, in.stride_dim) +
                             reach(inner, in.stride_inner),
                         "cat");
    table.push_back(CatEntry{
        .address = in.address,
        .start = int32_t(total),
        .size = int32_t(in.size),
        .stride = {int32_t(in.stride_outer), int32_t(in.stride_dim), int32_t(in.stride_inner)},
        .pad = 0});
    total += in.size;
  }
  int64_t numel = outer * total * inner;
  if (numel == 0) return;
  check_32bit_indexing(numel, numel, "cat");
  // More inputs than Access holds: it overflows, and the dispatch is fenced.
  Access access;
  access.write(span_elems(dst, numel, itemsize(dtype)));
  for (const CatInput& in : inputs) {
    if (in.size == 0) continue;
    const int64_t sizes[3] = {outer, in.size, inner};
    const int64_t strides[3] = {in.stride_outer, in.stride_dim, in.stride_inner};
    access.read(span_of(in.address, itemsize(dtype), 3, sizes, strides));
  }
  uint64_t bytes = table.size() * sizeof(CatEntry);
  uint64_t table_address = dev.memory().allocate(bytes).address;
  upload(dev, table_address, table.data(), bytes);
  CatPush p{.dst = dst,
            .table = table_address,
            .count = uint32_t(table.size()),
            .total = uint32_t(total),
            .inner = uint32_t(inner),
            .numel = uint32_t(numel)};
  access.read(span_elems(table_address, int64_t(bytes), 1));
  VkPipeline pipeline = dev.pipelines().get(shaders::cat(itemsize(dtype)));
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), CAT_WG, &access);
  // The table's read is declared: whatever reuses the chunk next is ordered after it.
  dev.memory().free(table_address);
}

void tri(Device& dev, DType dtype, MatrixRef dst, MatrixRef src, int64_t batch, int64_t rows,
         int64_t cols, int64_t k, bool upper) {
  int64_t numel = batch * rows * cols;
  if (numel == 0) return;
  int64_t max_off = 0;
  for (const MatrixRef* m : {&dst, &src})
    max_off = std::max(max_off, reach(batch, m->stride[0]) + reach(rows, m->stride[1]) +
                                    reach(cols, m->stride[2]));
  check_32bit_indexing(numel, max_off, "tril/triu");
  // Diagonals beyond the matrix behave like the nearest one that is outside it.
  int64_t kk = std::clamp<int64_t>(k, -rows - 1, cols + 1);
  TriPush p{.dst = dst.address,
            .src = src.address,
            .dst_stride = {int32_t(dst.stride[0]), int32_t(dst.stride[1]), int32_t(dst.stride[2])},
            .src_stride = {int32_t(src.stride[0]), int32_t(src.stride[1]), int32_t(src.stride[2])},
            .rows = uint32_t(rows),
            .cols = uint32_t(cols),
            .numel = uint32_t(numel),
            .k = int32_t(kk),
            .upper = upper ? 1 : 0};
  VkPipeline pipeline = dev.pipelines().get(shaders::tri(itemsize(dtype)));
  const int64_t sizes[3] = {batch, rows, cols};
  Access access;
  access.read(span_of(src.address, itemsize(dtype), 3, sizes, src.stride));
  access.write(span_of(dst.address, itemsize(dtype), 3, sizes, dst.stride));
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), TRI_WG, &access);
}

}  // namespace vkml::ops
