#include "vkml/ops/im2col.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"

namespace vkml::ops {

namespace {

struct Push {
  uint64_t src, dst;
  int32_t H, W, kh, kw, ph, pw, sh, sw, dh, dw, oh, ow;
  uint32_t numel;
};
static_assert(sizeof(Push) <= 128);

void launch(Device& dev, DType dtype, int mode, uint64_t src, uint64_t dst, const Im2colShape& s) {
  const std::string name = std::string("im2col_") + float_variant(dev, dtype, "im2col/col2im");
  int64_t image = s.planes * s.H * s.W;
  int64_t cols = s.planes * s.kh * s.kw * s.oh * s.ow;
  int64_t numel = mode == 0 ? cols : image;
  if (numel == 0) return;
  check_32bit_indexing(std::max(image, cols), std::max(image, cols), "im2col");
  Push p{src,           dst,           int32_t(s.H),  int32_t(s.W),  int32_t(s.kh),
         int32_t(s.kw), int32_t(s.ph), int32_t(s.pw), int32_t(s.sh), int32_t(s.sw),
         int32_t(s.dh), int32_t(s.dw), int32_t(s.oh), int32_t(s.ow), uint32_t(numel)};
  VkPipeline pipeline = dev.pipelines().get(name, {mode});
  const size_t esize = itemsize(dtype);
  Access access;  // one thread per destination element, which it writes whole
  access.read(span_elems(src, mode == 0 ? image : cols, esize));
  access.write(span_elems(dst, numel, esize));
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), kWorkgroup, &access);
}

}  // namespace

void im2col(Device& dev, DType dtype, uint64_t image, uint64_t columns, const Im2colShape& s) {
  launch(dev, dtype, 0, image, columns, s);
}

void col2im(Device& dev, DType dtype, uint64_t columns, uint64_t image, const Im2colShape& s) {
  launch(dev, dtype, 1, columns, image, s);
}

}  // namespace vkml::ops
