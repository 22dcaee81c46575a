#include "vkml/ops/remap.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/remap_push.h"

namespace vkml::ops {

namespace {

using Push = remap_detail::Push;

// Size-1 dims vanish, identity dims merge with an identity neighbour when the
// input steps through them as one.
std::vector<RemapDim> simplify(const std::vector<RemapDim>& dims) {
  std::vector<RemapDim> out;
  for (const RemapDim& d : dims) {
    if (d.out_size == 1 && d.in_size == 1 && remap_index(d, 0) == 0) continue;
    if (!out.empty() && d.mode == REMAP_IDENTITY && out.back().mode == REMAP_IDENTITY &&
        out.back().in_stride == d.in_stride * d.in_size) {
      out.back().out_size *= d.out_size;
      out.back().in_size *= d.in_size;
      out.back().in_stride = d.in_stride;
      continue;
    }
    out.push_back(d);
  }
  return out;
}

int32_t param_bits(const RemapDim& d) {
  if (d.mode == REMAP_NEAREST || d.mode == REMAP_NEAREST_EXACT) {
    int32_t bits;
    std::memcpy(&bits, &d.scale, 4);
    return bits;
  }
  if (d.mode == REMAP_ROLL) return int32_t(((d.param % d.in_size) + d.in_size) % d.in_size);
  return int32_t(d.param);
}

// dims outermost first; dst contiguous over them. Splits outer dims on the host
// beyond six.
void launch(Device& dev, VkPipeline pipeline, uint64_t dst, uint64_t src,
            const std::vector<RemapDim>& dims, size_t dst_item, size_t src_item, bool bwd) {
  int64_t numel = 1;
  for (const RemapDim& d : dims) numel *= d.out_size;
  if (numel == 0) return;
  if (dims.size() > size_t(REMAP_DIMS)) {
    const RemapDim& d0 = dims[0];
    std::vector<RemapDim> rest(dims.begin() + 1, dims.end());
    int64_t inner = numel / d0.out_size;
    for (int64_t i = 0; i < d0.out_size; ++i) {
      int64_t j = remap_index(d0, i);
      // Forward: dst is the contiguous output. Backward: dst is grad_in (strided by
      // in_stride) and src is the contiguous grad_out.
      uint64_t out_off = uint64_t(i * inner);
      if (j < 0) {
        VKML_CHECK_ARG(bwd, "remap: constant padding beyond six dims");
        continue;
      }
      uint64_t in_off = uint64_t(j * d0.in_stride);
      if (bwd)
        launch(dev, pipeline, dst + in_off * dst_item, src + out_off * src_item, rest, dst_item,
               src_item, bwd);
      else
        launch(dev, pipeline, dst + out_off * dst_item, src + in_off * src_item, rest, dst_item,
               src_item, bwd);
    }
    return;
  }
  Push p{};
  p.dst = dst;
  p.src = src;
  int64_t max_off = 0;
  int nd = int(dims.size());
  for (int k = 0; k < nd; ++k) {
    const RemapDim& d = dims[nd - 1 - k];
    p.osize[k] = int32_t(d.out_size);
    p.istride[k] = int32_t(d.in_stride);
    p.isize[k] = int32_t(d.in_size);
    p.param[k] = param_bits(d);
    p.modes |= uint32_t(d.mode) << (4 * k);
    max_off += (d.in_size - 1) * std::abs(d.in_stride);
  }
  check_32bit_indexing(numel, max_off, "remap");
  p.numel = uint32_t(numel);
  p.ndim = nd;
  // The strided side (forward: the input; backward: grad_in, accumulated into) and
  // the contiguous one.
  int64_t in_sizes[REMAP_DIMS], in_strides[REMAP_DIMS];
  for (int k = 0; k < nd; ++k) {
    in_sizes[k] = dims[k].in_size;
    in_strides[k] = dims[k].in_stride;
  }
  Access access;
  if (bwd) {
    access.read(span_elems(src, numel, src_item));
    access.update(span_of(dst, dst_item, nd, in_sizes, in_strides));
  } else {
    access.read(span_of(src, src_item, nd, in_sizes, in_strides));
    access.write(span_elems(dst, numel, dst_item));
  }
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), REMAP_WG, &access);
}

void check_dims(const std::vector<RemapDim>& dims) {
  for (const RemapDim& d : dims) {
    VKML_CHECK_ARG(d.out_size >= 0 && d.in_size >= 0, "remap: negative size");
    VKML_CHECK_ARG(d.mode != REMAP_DIV || d.param > 0, "remap: divisor must be positive");
  }
}

}  // namespace

int64_t remap_index(const RemapDim& d, int64_t i) {
  int64_t n = d.in_size, p = d.param;
  switch (d.mode) {
    case REMAP_FLIP:
      return n - 1 - i;
    case REMAP_ROLL:
      return ((i - p) % n + n) % n;
    case REMAP_CONSTANT:
      return (i - p < 0 || i - p >= n) ? -1 : i - p;
    case REMAP_REFLECT: {
      int64_t k = std::abs(i - p);
      return k >= n ? 2 * (n - 1) - k : k;
    }
    case REMAP_REPLICATE:
      return std::clamp<int64_t>(i - p, 0, n - 1);
    case REMAP_CIRCULAR:
      return ((i - p) % n + n) % n;
    case REMAP_NEAREST:
      return std::min<int64_t>(int64_t(std::floor(float(i) * d.scale)), n - 1);
    case REMAP_NEAREST_EXACT:
      return std::min<int64_t>(int64_t(std::floor((float(i) + 0.5f) * d.scale)), n - 1);
    case REMAP_DIV:
      return i / p;
    default:
      return i;
  }
}

void remap(Device& dev, DType dtype, uint64_t dst, uint64_t src, std::vector<RemapDim> dims) {
  check_dims(dims);
  std::vector<RemapDim> s = simplify(dims);
  for (const RemapDim& d : s)
    if (d.out_size == 0) return;
  for (const RemapDim& d : s)
    VKML_CHECK_ARG(d.in_size > 0 || d.mode == REMAP_CONSTANT,
                   "remap: cannot gather from an empty input");
  VkPipeline pipeline = dev.pipelines().get(shaders::remap(itemsize(dtype)));
  size_t item = itemsize(dtype);
  launch(dev, pipeline, dst, src, s, item, item, false);
}

void remap_backward(Device& dev, uint64_t grad_in, uint64_t grad_out, std::vector<RemapDim> dims) {
  check_dims(dims);
  std::vector<RemapDim> s = simplify(dims);
  for (const RemapDim& d : s)
    if (d.out_size == 0 || d.in_size == 0) return;
  VkPipeline pipeline = dev.pipelines().get(Shader::remap_bwd);
  launch(dev, pipeline, grad_in, grad_out, s, 4, 4, true);
}

}  // namespace vkml::ops
