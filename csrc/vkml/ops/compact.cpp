#include "vkml/ops/compact.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/compact_push.h"

namespace vkml::ops {

namespace {

using Push = compact_detail::Push;

}  // namespace

void compact(Device& dev, const CompactArgs& a) {
  if (a.n == 0) return;
  check_32bit_indexing(a.n, a.n, "compact");
  // Coordinates are int64; other modes move elements of their own size as bits.
  const size_t width = a.mode == CompactMode::Coordinates ? sizeof(int64_t) : a.elem_size;
  const Shader shader = shaders::compact(width);
  VKML_CHECK_ARG(shader != Shader::none, "compact: unsupported element size");
  VKML_CHECK_ARG(width != 2 || dev.info().supports_fp16,
                 "16-bit elements are not supported on " + dev.info().name);
  VKML_CHECK_ARG(a.sizes.size() <= 12, "compact: at most 12 dims");
  Push p{};
  p.prefix = a.prefix;
  p.src = a.src;
  p.dst = a.dst;
  p.n = uint32_t(a.n);
  p.ndim = int32_t(a.sizes.size());
  p.limit = uint32_t(std::min<int64_t>(a.limit, INT32_MAX));
  for (size_t d = 0; d < a.sizes.size(); ++d) p.size[d] = int32_t(a.sizes[d]);
  VkPipeline pipeline = dev.pipelines().get(shader, {int(a.mode)});
  // At most n outputs: the declared ranges may reach past the real count.
  Access access;
  access.read(span_elems(a.prefix, a.n, sizeof(int32_t)));
  switch (a.mode) {
    case CompactMode::Coordinates:
      access.write(span_elems(a.dst, a.n * int64_t(a.sizes.size()), sizeof(int64_t)));
      break;
    case CompactMode::Select:
      access.read(span_elems(a.src, a.n, size_t(a.elem_size)));
      access.write(span_elems(a.dst, a.n, size_t(a.elem_size)));
      break;
    case CompactMode::Scatter:
      access.read(span_elems(a.src, std::min(a.limit, a.n), size_t(a.elem_size)));
      access.write(span_elems(a.dst, a.n, size_t(a.elem_size)));
      break;
  }
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(a.n), COMPACT_WG, &access);
}

}  // namespace vkml::ops
