#include "vkml/ops/sort.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/sort_push.h"
#include "vkml/shaders/unique_push.h"

namespace vkml::ops {

namespace {

using Push = sort_detail::Push;

constexpr uint32_t kMaxWorkgroup = 512;  // a block is 2 * WG <= 1024 elements (shared arrays)
constexpr uint32_t kMinWorkgroup = 64;

}  // namespace

void sort_rows(Device& dev, DType key_dtype, uint64_t in, uint64_t out_keys, uint64_t out_idx,
               int64_t rows, int64_t n, bool descending) {
  const Shader shader = shaders::sort(key_dtype);
  VKML_CHECK_ARG(shader != Shader::none,
                 std::string("sort: unsupported key dtype ") + dtype_name(key_dtype));
  VKML_CHECK_ARG(rows >= 0 && n >= 0, "sort: negative size");
  if (rows == 0 || n == 0) return;
  uint64_t P = 2;
  while (P < uint64_t(n)) P <<= 1;
  check_32bit_indexing(rows * int64_t(P), rows * int64_t(P), "sort");
  // Rows shorter than a block of 128 share blocks (see sort.comp).
  uint32_t wg = uint32_t(std::clamp<uint64_t>(P / 2, kMinWorkgroup, kMaxWorkgroup));
  while (wg > kMinWorkgroup && wg > dev.info().max_workgroup_invocations) wg /= 2;
  uint64_t block = 2ull * wg;
  size_t ks = itemsize(key_dtype);
  Push p{};
  p.in_keys = in;
  p.out_keys = out_keys;
  p.out_idx = out_idx;
  p.n = uint32_t(n);
  p.P = uint32_t(P);
  p.pairs = uint32_t(uint64_t(rows) * P / 2);
  p.desc = descending ? 1 : 0;
  p.last = P <= block ? 1 : 0;
  uint64_t keys = 0, idx = 0;
  if (!p.last) {
    keys = dev.memory().allocate(uint64_t(rows) * P * ks).address;
    idx = dev.memory().allocate(uint64_t(rows) * P * 4).address;
  }
  p.keys = keys;
  p.idx = idx;
  // Every pass declares the union: each depends on the one before anyway.
  Access access;
  const uint64_t padded = p.last ? 0 : uint64_t(rows) * P;
  access.read(span_elems(in, rows * n, ks));
  access.update(span_elems(keys, int64_t(padded), ks));
  access.update(span_elems(idx, int64_t(padded), 4));
  access.write(span_elems(out_keys, rows * n, ks));
  access.write(span_elems(out_idx, rows * n, 8));
  dispatch_1d(dev, dev.pipelines().get(shader, {SORT_BLOCKS, int32_t(wg)}), &p, sizeof(p), p.pairs,
              wg, &access);
  if (!p.last) {
    VkPipeline step = dev.pipelines().get(shader, {SORT_GLOBAL_STEP, int32_t(wg)});
    VkPipeline merge = dev.pipelines().get(shader, {SORT_BLOCK_MERGE, int32_t(wg)});
    for (uint64_t k = block * 2; k <= P; k <<= 1) {
      p.k = uint32_t(k);
      for (uint64_t j = k / 2; j >= block; j >>= 1) {
        p.j = uint32_t(j);
        dispatch_1d(dev, step, &p, sizeof(p), p.pairs, kWorkgroup, &access);
      }
      p.last = k == P ? 1 : 0;
      dispatch_1d(dev, merge, &p, sizeof(p), p.pairs, wg, &access);
    }
    // Later work on the stream is ordered after these dispatches.
    dev.memory().free(keys);
    dev.memory().free(idx);
  }
}

}  // namespace vkml::ops

namespace vkml::ops {

namespace {

using UniquePush = unique_detail::UniquePush;

Shader unique_shader(DType key_dtype) {
  const Shader shader = shaders::unique(key_dtype);
  VKML_CHECK_ARG(shader != Shader::none,
                 std::string("unique: unsupported key dtype ") + dtype_name(key_dtype));
  return shader;
}

}  // namespace

void unique_groups(Device& dev, DType key_dtype, uint64_t keys, uint64_t ids, int64_t n) {
  const Shader shader = unique_shader(key_dtype);
  if (n == 0) return;
  check_32bit_indexing(n, n, "unique");
  UniquePush p{.keys = keys,
               .perm = 0,
               .ids = ids,
               .uniq = 0,
               .start = 0,
               .inverse = 0,
               .counts = 0,
               .n = uint32_t(n),
               .count = 0};
  const Span group_ids = span_elems(ids, n, 4);
  Access flags, scan;  // keys -> 0/1 group starts in ids, then their prefix sums in place
  flags.read(span_elems(keys, n, itemsize(key_dtype)));
  flags.write(group_ids);
  scan.update(group_ids);
  dispatch_1d(dev, dev.pipelines().get(shader, {UNIQUE_GROUP_STARTS, int32_t(kWorkgroup)}), &p,
              sizeof(p), uint64_t(n), kWorkgroup, &flags);
  uint32_t wg = 256;
  while (wg > 64 && wg > dev.info().max_workgroup_invocations) wg /= 2;
  dev.stream().dispatch(dev.pipelines().get(shader, {UNIQUE_PREFIX_SUM, int32_t(wg)}), &p,
                        sizeof(p), 1, 1, 1, &scan);
}

void unique_write(Device& dev, DType key_dtype, uint64_t keys, uint64_t perm, uint64_t ids,
                  int64_t n, int64_t count, uint64_t uniq, uint64_t start, uint64_t inverse,
                  uint64_t counts) {
  const Shader shader = unique_shader(key_dtype);
  if (n == 0) return;
  UniquePush p{.keys = keys,
               .perm = perm,
               .ids = ids,
               .uniq = uniq,
               .start = start,
               .inverse = inverse,
               .counts = counts,
               .n = uint32_t(n),
               .count = uint32_t(count)};
  const size_t ks = itemsize(key_dtype);
  const Span starts = span_elems(start, count, 8);
  Access write, count_pass;  // the groups out, then their sizes from the starts
  write.read(span_elems(keys, n, ks));
  write.read(span_elems(ids, n, 4));
  if (inverse) write.read(span_elems(perm, n, 8));
  write.write(span_elems(uniq, count, ks));
  write.write(starts);
  if (inverse) write.write(span_elems(inverse, n, 8));
  count_pass.read(starts);
  count_pass.write(span_elems(counts, count, 8));
  dispatch_1d(dev, dev.pipelines().get(shader, {UNIQUE_WRITE, int32_t(kWorkgroup)}), &p, sizeof(p),
              uint64_t(n), kWorkgroup, &write);
  if (counts)
    dispatch_1d(dev, dev.pipelines().get(shader, {UNIQUE_COUNTS, int32_t(kWorkgroup)}), &p,
                sizeof(p), uint64_t(count), kWorkgroup, &count_pass);
}

}  // namespace vkml::ops
