#include "vkml/ops/im2col.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/im2col_push.h"

namespace vkml::ops {

namespace {

using Push = im2col_detail::Push;

void launch(Device& dev, DType dtype, int mode, uint64_t src, uint64_t dst, const Im2colShape& s) {
  check_float_dtype(dev, dtype, "im2col/col2im", /*with_f64=*/true);
  int64_t image = s.planes * s.H * s.W;
  int64_t cols = s.planes * s.kh * s.kw * s.oh * s.ow;
  int64_t numel = mode == IM2COL_IM2COL ? cols : image;
  if (numel == 0) return;
  check_32bit_indexing(std::max(image, cols), std::max(image, cols), "im2col");
  Push p{.src = src,
         .dst = dst,
         .H = int32_t(s.H),
         .W = int32_t(s.W),
         .kh = int32_t(s.kh),
         .kw = int32_t(s.kw),
         .ph = int32_t(s.ph),
         .pw = int32_t(s.pw),
         .sh = int32_t(s.sh),
         .sw = int32_t(s.sw),
         .dh = int32_t(s.dh),
         .dw = int32_t(s.dw),
         .oh = int32_t(s.oh),
         .ow = int32_t(s.ow),
         .numel = uint32_t(numel)};
  VkPipeline pipeline = dev.pipelines().get(shaders::im2col(dtype), {mode});
  const size_t esize = itemsize(dtype);
  Access access;  // one thread per destination element, which it writes whole
  access.read(span_elems(src, mode == IM2COL_IM2COL ? image : cols, esize));
  access.write(span_elems(dst, numel, esize));
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), IM2COL_WG, &access);
}

}  // namespace

void im2col(Device& dev, DType dtype, uint64_t image, uint64_t columns, const Im2colShape& s) {
  launch(dev, dtype, IM2COL_IM2COL, image, columns, s);
}

void col2im(Device& dev, DType dtype, uint64_t columns, uint64_t image, const Im2colShape& s) {
  launch(dev, dtype, IM2COL_COL2IM, columns, image, s);
}

}  // namespace vkml::ops
