#include "vkml/ops/pool.h"

#include <algorithm>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/ops/window.h"
#include "vkml/shaders/pool_push.h"

namespace vkml::ops {

namespace {

using Push = pool_detail::Push;

void launch(Device& dev, DType dtype, int mode, uint64_t x, uint64_t y, uint64_t idx,
            const PoolShape& s) {
  check_float_dtype(dev, dtype, "pool", /*with_f64=*/true);
  int64_t ispat = s.in[0] * s.in[1] * s.in[2], ospat = s.out[0] * s.out[1] * s.out[2];
  int64_t threads = s.planes * (mode < POOL_MAX_BACKWARD ? ospat : ispat);
  if (threads == 0) return;
  check_32bit_indexing(std::max(s.planes * ispat, s.planes * ospat), 0, "pool");
  Push p{.x = x, .y = y, .idx = idx, .planes = uint32_t(s.planes)};
  fill_window(p, s);
  p.count_include_pad = s.count_include_pad ? 1 : 0;
  p.divisor = int32_t(s.divisor);
  p.round_steps = s.round_steps ? 1 : 0;
  uint32_t wg = 64;
  VkPipeline pipeline =
      dev.pipelines().get(shaders::pool(dtype), {mode, s.adaptive ? 1 : 0, int32_t(wg)});
  // Forward modes read x over the input and write y (and max's indices) over
  // the output; backward ones read grad_out (and indices) and write grad_in.
  const size_t is = itemsize(dtype);
  const bool forward = mode < POOL_MAX_BACKWARD;
  Access a;
  a.read(span_elems(x, s.planes * (forward ? ispat : ospat), is));
  a.write(span_elems(y, s.planes * (forward ? ospat : ispat), is));
  if (idx) {
    Span span = span_elems(idx, s.planes * ospat, 8);
    forward ? a.write(span) : a.read(span);
  }
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(threads), wg, &a);
}

}  // namespace

void max_pool(Device& dev, DType dtype, uint64_t x, uint64_t y, uint64_t indices,
              const PoolShape& s) {
  launch(dev, dtype, POOL_MAX_FORWARD, x, y, indices, s);
}
void avg_pool(Device& dev, DType dtype, uint64_t x, uint64_t y, const PoolShape& s) {
  launch(dev, dtype, POOL_AVG_FORWARD, x, y, 0, s);
}
void max_pool_backward(Device& dev, DType dtype, uint64_t grad_out, uint64_t indices,
                       uint64_t grad_in, const PoolShape& s) {
  launch(dev, dtype, POOL_MAX_BACKWARD, grad_out, grad_in, indices, s);
}
void avg_pool_backward(Device& dev, DType dtype, uint64_t grad_out, uint64_t grad_in,
                       const PoolShape& s) {
  launch(dev, dtype, POOL_AVG_BACKWARD, grad_out, grad_in, 0, s);
}

}  // namespace vkml::ops
