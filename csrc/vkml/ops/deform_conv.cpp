#include "vkml/ops/deform_conv.h"

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/deform_conv_push.h"

namespace vkml::ops {

namespace {

enum class Step { im2col, col2im, coord };

Shader shader_of(Step step, bool f64) {
  switch (step) {
    case Step::im2col:
      return f64 ? Shader::deform_conv_im2col_f64 : Shader::deform_conv_im2col;
    case Step::col2im:
      return f64 ? Shader::deform_conv_col2im_f64 : Shader::deform_conv_col2im;
    case Step::coord:
      break;
  }
  return f64 ? Shader::deform_conv_coord_f64 : Shader::deform_conv_coord;
}

void launch(Device& dev, Step step, const DeformConvBuffers& b, uint64_t grad_input,
            uint64_t grad_offset, uint64_t grad_mask, const DeformConvShape& s) {
  VKML_CHECK_ARG(deform_conv_supports(dev, s.dtype, step != Step::im2col),
                 "deform_conv2d: no kernel for this dtype on this device");
  const int64_t kk = s.kh * s.kw, l = s.out_h * s.out_w;
  const int64_t input_numel = s.images * s.c * s.h * s.w;
  const int64_t columns_numel = s.c * kk * s.images * l;
  const int64_t offset_numel = s.images * s.offset_groups * kk * 2 * l;
  const int64_t mask_numel = offset_numel / 2;
  if (columns_numel == 0) return;
  check_32bit_indexing(input_numel, input_numel, "deform_conv2d");
  check_32bit_indexing(columns_numel, columns_numel, "deform_conv2d");
  check_32bit_indexing(offset_numel, offset_numel, "deform_conv2d");

  deform_conv_detail::Push p{};
  p.image = step == Step::col2im ? grad_input : b.input;
  p.columns = b.columns;
  p.offset = b.offset;
  p.mask = b.mask;
  p.grad_offset = grad_offset;
  p.grad_mask = grad_mask;
  p.c = uint32_t(s.c);
  p.h = uint32_t(s.h);
  p.w = uint32_t(s.w);
  p.kh = uint32_t(s.kh);
  p.kw = uint32_t(s.kw);
  p.out_h = uint32_t(s.out_h);
  p.out_w = uint32_t(s.out_w);
  p.images = uint32_t(s.images);
  p.stride_h = uint32_t(s.stride_h);
  p.stride_w = uint32_t(s.stride_w);
  p.dil_h = uint32_t(s.dil_h);
  p.dil_w = uint32_t(s.dil_w);
  p.pad_h = int32_t(s.pad_h);
  p.pad_w = int32_t(s.pad_w);
  p.offset_groups = uint32_t(s.offset_groups);
  p.use_mask = s.use_mask ? 1u : 0u;

  const size_t item = itemsize(s.dtype);
  Access access;
  access.read(span_elems(p.offset, offset_numel, item));
  if (s.use_mask) access.read(span_elems(p.mask, mask_numel, item));
  int64_t threads = columns_numel;
  switch (step) {
    case Step::im2col:
      access.read(span_elems(p.image, input_numel, item));
      access.write(span_elems(p.columns, columns_numel, item));
      break;
    case Step::col2im:
      access.read(span_elems(p.columns, columns_numel, item));
      access.update(span_elems(p.image, input_numel, item));  // accumulated into
      break;
    case Step::coord:
      access.read(span_elems(p.image, input_numel, item));
      access.read(span_elems(p.columns, columns_numel, item));
      access.write(span_elems(p.grad_offset, offset_numel, item));
      if (s.use_mask) access.write(span_elems(p.grad_mask, mask_numel, item));
      threads = offset_numel;
      break;
  }
  dispatch_1d(dev, dev.pipelines().get(shader_of(step, s.dtype == DType::f64)), &p, sizeof(p),
              uint64_t(threads), DEFORM_CONV_WG, &access);
}

}  // namespace

bool deform_conv_supports(const Device& dev, DType dtype, bool backward) {
  if (dtype == DType::f32) return true;
  return dtype == DType::f64 && dev.info().supports_fp64 &&
         (!backward || dev.info().supports_int64_atomics);
}

void deform_conv_im2col(Device& dev, const DeformConvBuffers& b, const DeformConvShape& s) {
  launch(dev, Step::im2col, b, 0, 0, 0, s);
}

void deform_conv_col2im(Device& dev, const DeformConvBuffers& b, uint64_t grad_input,
                        const DeformConvShape& s) {
  launch(dev, Step::col2im, b, grad_input, 0, 0, s);
}

void deform_conv_coord(Device& dev, const DeformConvBuffers& b, uint64_t grad_offset,
                       uint64_t grad_mask, const DeformConvShape& s) {
  launch(dev, Step::coord, b, 0, grad_offset, grad_mask, s);
}

}  // namespace vkml::ops
