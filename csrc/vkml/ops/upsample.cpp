#include "vkml/ops/upsample.h"

#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/bilinear_push.h"
#include "vkml/shaders/interp_push.h"

namespace vkml::ops {

namespace {

using Push = bilinear_detail::Push;

// Forward: src [planes, ih, iw] -> dst [planes, oh, ow] of `esize`-byte floats.
// Backward (float32): src is grad_out [planes, oh, ow], dst grad_in [planes, ih, iw].
void launch(Device& dev, Shader shader, uint64_t src, uint64_t dst, const BilinearShape& s,
            size_t esize, bool backward) {
  int64_t numel = s.planes * s.oh * s.ow;
  if (numel == 0 || s.ih == 0 || s.iw == 0) return;
  check_32bit_indexing(numel, s.planes * s.ih * s.iw, "upsample_bilinear2d");
  Push p{.src = src,
         .dst = dst,
         .ih = uint32_t(s.ih),
         .iw = uint32_t(s.iw),
         .oh = uint32_t(s.oh),
         .ow = uint32_t(s.ow),
         .scale_h = s.scale_h,
         .scale_w = s.scale_w,
         .align_corners = s.align_corners ? 1u : 0u,
         .numel = uint32_t(numel)};
  const int64_t small = s.planes * s.ih * s.iw;
  Access access;
  access.read(span_elems(src, backward ? numel : small, esize));
  const Span out = span_elems(dst, backward ? small : numel, esize);
  backward ? access.update(out) : access.write(out);  // backward accumulates into it
  dispatch_1d(dev, dev.pipelines().get(shader), &p, sizeof(p), uint64_t(numel), BILINEAR_WG,
              &access);
}

}  // namespace

void upsample_bilinear(Device& dev, DType dtype, uint64_t in, uint64_t out,
                       const BilinearShape& s) {
  check_float_dtype(dev, dtype, "upsample_bilinear2d");
  launch(dev, shaders::bilinear(dtype), in, out, s, itemsize(dtype), false);
}

void upsample_bilinear_backward(Device& dev, uint64_t grad_out, uint64_t grad_in,
                                const BilinearShape& s) {
  launch(dev, Shader::bilinear_bwd, grad_out, grad_in, s, sizeof(float), true);
}

namespace {

using InterpPush = interp_detail::InterpPush;

// Forward: src [outer, in, inner] -> dst [outer, out, inner]; backward: src is
// grad_out [outer, out, inner], accumulated into dst, grad_in [outer, in, inner].
void interp_launch(Device& dev, Shader shader, uint64_t src, uint64_t dst, const InterpPass& p,
                   bool backward) {
  VKML_CHECK_ARG(p.outer >= 0 && p.in > 0 && p.out > 0 && p.inner >= 0,
                 "interpolate: sizes must be positive");
  int64_t numel = p.outer * p.out * p.inner;
  if (numel == 0) return;
  check_32bit_indexing(numel, p.outer * p.in * p.inner, "interpolate");
  bool aa = p.mode == InterpMode::AaLinear || p.mode == InterpMode::AaCubic;
  // The filter's half-width: the interpolation size (2 or 4 taps) / 2, widened by
  // the scale when downsampling so that every source pixel contributes.
  float half = p.mode == InterpMode::AaCubic ? 2.0f : 1.0f;
  float support = aa ? (p.scale >= 1.0f ? half * p.scale : half) : 0.0f;
  InterpPush push{.src = src,
                  .dst = dst,
                  .in_size = uint32_t(p.in),
                  .out_size = uint32_t(p.out),
                  .inner = uint32_t(p.inner),
                  .scale = p.scale,
                  .support = support,
                  .mode = uint32_t(p.mode),
                  .align_corners = p.align_corners ? 1u : 0u,
                  .numel = uint32_t(numel)};
  const int64_t small = p.outer * p.in * p.inner;
  Access access;
  access.read(span_elems(src, backward ? numel : small, sizeof(float)));
  const Span out = span_elems(dst, backward ? small : numel, sizeof(float));
  backward ? access.update(out) : access.write(out);
  dispatch_1d(dev, dev.pipelines().get(shader), &push, sizeof(push), uint64_t(numel), INTERP_WG,
              &access);
}

}  // namespace

void interp_pass(Device& dev, uint64_t in, uint64_t out, const InterpPass& p) {
  interp_launch(dev, Shader::interp_fwd, in, out, p, false);
}

void interp_pass_backward(Device& dev, uint64_t grad_out, uint64_t grad_in, const InterpPass& p) {
  interp_launch(dev, Shader::interp_bwd, grad_out, grad_in, p, true);
}

}  // namespace vkml::ops
