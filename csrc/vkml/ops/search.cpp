#include "vkml/ops/search.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/histogram_push.h"
#include "vkml/shaders/search_push.h"

namespace vkml::ops {

namespace {

using SearchPush = search_detail::SearchPush;

using HistPush = histogram_detail::HistPush;

// Counting into zeroed bins: read and written, by atomics.
Access counting(uint64_t src, size_t src_item, uint64_t weights, int64_t numel, uint64_t bins,
                int64_t nbins) {
  Access a;
  a.read(span_elems(src, numel, src_item));
  if (weights) a.read(span_elems(weights, numel, sizeof(float)));
  a.update(span_elems(bins, nbins, 4));
  return a;
}

}  // namespace

void searchsorted(Device& dev, DType key_dtype, uint64_t boundaries, uint64_t values,
                  uint64_t sorter, uint64_t dst, int64_t m, int64_t per_row, int64_t numel,
                  bool right, bool out_i32) {
  VKML_CHECK_ARG(key_dtype == DType::f32 || key_dtype == DType::i64,
                 std::string("searchsorted: unsupported key dtype ") + dtype_name(key_dtype));
  if (numel == 0) return;
  VKML_CHECK_ARG(per_row > 0 && numel % per_row == 0, "searchsorted: bad row size");
  check_32bit_indexing(numel, numel / per_row * m, "searchsorted");
  SearchPush p{.boundaries = boundaries,
               .values = values,
               .sorter = sorter,
               .dst = dst,
               .m = uint32_t(m),
               .per_row = uint32_t(per_row),
               .numel = uint32_t(numel),
               .right = right ? 1u : 0u,
               .out_i32 = out_i32 ? 1u : 0u};
  VkPipeline pipeline = dev.pipelines().get(shaders::search(key_dtype));
  const int64_t rows_m = numel / per_row * m;
  Access access;
  access.read(span_elems(boundaries, rows_m, itemsize(key_dtype)));
  access.read(span_elems(values, numel, itemsize(key_dtype)));
  if (sorter) access.read(span_elems(sorter, rows_m, sizeof(int64_t)));
  access.write(span_elems(dst, numel, out_i32 ? 4 : 8));
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), SEARCH_WG, &access);
}

void histc(Device& dev, uint64_t src, int64_t numel, uint64_t bins, int64_t nbins, float lo,
           float hi) {
  if (numel == 0 || nbins == 0) return;
  check_32bit_indexing(numel, std::max(numel, nbins), "histc");
  HistPush p{.src = src,
             .weights = 0,
             .bins = bins,
             .lo = lo,
             .hi = hi,
             .nbins = uint32_t(nbins),
             .numel = uint32_t(numel)};
  const Access access = counting(src, sizeof(float), 0, numel, bins, nbins);
  dispatch_1d(dev, dev.pipelines().get(Shader::histogram, {HISTOGRAM_HISTC}), &p, sizeof(p),
              uint64_t(numel), HISTOGRAM_WG, &access);
}

void bincount(Device& dev, uint64_t src, uint64_t weights, int64_t numel, uint64_t bins,
              int64_t nbins) {
  if (numel == 0 || nbins == 0) return;
  check_32bit_indexing(numel, std::max(numel, nbins), "bincount");
  HistPush p{.src = src,
             .weights = weights,
             .bins = bins,
             .lo = 0.0f,
             .hi = 0.0f,
             .nbins = uint32_t(nbins),
             .numel = uint32_t(numel)};
  const Access access = counting(src, sizeof(int64_t), weights, numel, bins, nbins);
  dispatch_1d(dev,
              dev.pipelines().get(Shader::histogram,
                                  {weights ? HISTOGRAM_WEIGHTED_BINCOUNT : HISTOGRAM_BINCOUNT}),
              &p, sizeof(p), uint64_t(numel), HISTOGRAM_WG, &access);
}

}  // namespace vkml::ops
