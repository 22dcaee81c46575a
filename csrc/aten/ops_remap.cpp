// Gathers whose source index is a per-dim function of the output index (the core's
// remap): flip, roll, reflection/replication padding and nearest upsampling (1-3d),
// with their backward passes.
#include <ATen/Context.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "op_helpers.h"
#include "vkml/ops/remap.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::RemapDim;

// ---------------------------------------------------------------- remap

// The identity map for every dim of t; callers change the dims they transform.
std::vector<RemapDim> identity_dims(const at::Tensor& t) {
  std::vector<RemapDim> dims(t.dim());
  for (int64_t k = 0; k < t.dim(); ++k) {
    dims[k].out_size = dims[k].in_size = t.size(k);
    dims[k].in_stride = t.stride(k);
  }
  return dims;
}

at::Tensor run_remap(const char* op, const at::Tensor& self, const std::vector<RemapDim>& dims) {
  if (self.is_complex()) {
    // The same map over the float pairs: every dim's stride counts real elements, and the
    // pair is one more dim, kept as it is. (dims' strides are self's: the forward ops
    // describe self's own layout.)
    at::Tensor pairs = at::view_as_real(self.resolve_conj().resolve_neg());
    std::vector<RemapDim> real_dims = dims;
    for (size_t k = 0; k < real_dims.size(); ++k) real_dims[k].in_stride = pairs.stride(int64_t(k));
    RemapDim pair;
    pair.out_size = pair.in_size = 2;
    real_dims.push_back(pair);
    return at::view_as_complex(run_remap(op, pairs, real_dims));
  }
  check_vkml_dtype(op, self);
  // A channels-last input gives a channels-last result, as on the CPU and CUDA: the map
  // runs over the dims in memory order (channels last) into a contiguous result, which
  // is then viewed in the logical order, with no copy.
  if (channels_last_layout(self)) {
    std::vector<RemapDim> in_memory_order{dims[0]};
    in_memory_order.insert(in_memory_order.end(), dims.begin() + 2, dims.end());
    in_memory_order.push_back(dims[1]);
    return run_remap(op, self.movedim(1, -1), in_memory_order).movedim(-1, 1);
  }
  std::vector<int64_t> shape;
  for (const RemapDim& d : dims) shape.push_back(d.out_size);
  at::Tensor out = at::empty(shape, self.options());
  if (out.numel() == 0) return out;
  guarded([&] {
    vkml::ops::remap(vkml_device(self), to_vkml(self.scalar_type()), addr(out), addr(self), dims);
  });
  return out;
}

// grad_input (dtype of the forward input, sizes in_sizes) of a remap whose dims
// are `dims` (in_stride ignored: recomputed for the contiguous grad). The kernel adds
// in float32; float64 takes the index_add form in double.
at::Tensor run_remap_backward(const char* op, const at::Tensor& grad_out, at::IntArrayRef in_sizes,
                              std::vector<RemapDim> dims, at::ScalarType dtype) {
  if (at::isComplexType(dtype)) {  // the sums are linear: the two parts apart
    const at::ScalarType real = c10::toRealValueType(dtype);
    return at::complex(run_remap_backward(op, at::real(grad_out), in_sizes, dims, real),
                       run_remap_backward(op, at::imag(grad_out), in_sizes, dims, real));
  }
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_storage(dtype) || dtype == at::kDouble, op,
                              " on vkml supports float32, float16, bfloat16 and float64, got ",
                              dtype);
  const bool f64 = dtype == at::kDouble;
  at::Tensor g = grad_out.to(f64 ? at::kDouble : at::kFloat).contiguous();
  at::Tensor gi = at::zeros(in_sizes, g.options());
  int64_t stride = 1;
  for (int64_t k = int64_t(dims.size()) - 1; k >= 0; --k) {
    dims[k].in_stride = stride;
    stride *= dims[k].in_size;
  }
  if (gi.numel() > 0 && g.numel() > 0) {
    if (f64 || at::globalContext().deterministicAlgorithms()) {
      // The kernel's atomic adds sum in the order threads arrive, in float32. Under
      // torch.use_deterministic_algorithms, and for float64, each gradient element's
      // source (the forward map of an arange) feeds index_add, whose deterministic path
      // sums in order.
      at::Tensor source = at::arange(gi.numel(), g.options().dtype(at::kLong)).view(in_sizes);
      gi.view({-1}).index_add_(0, run_remap(op, source, dims).reshape({-1}), g.reshape({-1}));
    } else {
      guarded([&] { vkml::ops::remap_backward(vkml_device(g), addr(gi), addr(g), dims); });
    }
  }
  return gi.scalar_type() == dtype ? gi : gi.to(dtype);
}

// ----------------------------------------------------------- flip, roll

at::Tensor vk_flip(const at::Tensor& self, at::IntArrayRef dims) {
  auto dims_ = identity_dims(self);
  std::vector<bool> seen(std::max<int64_t>(self.dim(), 1));
  for (int64_t d0 : dims) {
    int64_t d = at::maybe_wrap_dim(d0, self.dim());
    TORCH_CHECK(!seen[d], "dim ", d, " appears multiple times in the list of dims");
    seen[d] = true;
    if (self.dim() > 0) dims_[d].mode = REMAP_FLIP;
  }
  return run_remap("flip", self, dims_);
}
at::Tensor& vk_flip_out(const at::Tensor& self, at::IntArrayRef dims, at::Tensor& out) {
  return write_out(out, vk_flip(self, dims));
}

at::Tensor vk_roll(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    at::Tensor flat = self.reshape({-1});
    return vk_roll(flat, shifts, {0}).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(),
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  if (self.numel() == 0) return self.clone();
  auto dims_ = identity_dims(self);
  for (size_t n = 0; n < dims.size(); ++n) {
    int64_t d = at::maybe_wrap_dim(dims[n], self.dim());
    RemapDim& r = dims_[d];
    // Rolling one dim twice adds the shifts.
    int64_t prev = r.mode == REMAP_ROLL ? r.param : 0;
    r.mode = REMAP_ROLL;
    r.param = ((prev + shifts[n]) % r.in_size + r.in_size) % r.in_size;
  }
  return run_remap("roll", self, dims_);
}
at::Tensor& vk_roll_out(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims,
                        at::Tensor& out) {
  return write_out(out, vk_roll(self, shifts, dims));
}

// -------------------------------------------------------------- padding

// Padding of the last `nd` dims of x; padding lists (before, after) from the last
// dim backwards, as F.pad does.
std::vector<RemapDim> pad_dims(const char* op, const at::Tensor& x, at::IntArrayRef padding,
                               int64_t nd, int mode) {
  TORCH_CHECK(int64_t(padding.size()) == 2 * nd, op, ": padding size is expected to be ", 2 * nd,
              ", but got: ", padding.size());
  int64_t dim = x.dim();
  // ATen's padding check, in its words (no op name).
  bool valid = dim == nd + 1 || dim == nd + 2;
  for (int64_t k = std::max<int64_t>(dim - nd - 1, 0); valid && k < dim; ++k)
    valid = x.size(k) != 0;
  TORCH_CHECK(valid, "Expected ", nd + 1, "D or ", nd + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions "
              "for input, but got: ",
              x.sizes());
  auto dims = identity_dims(x);
  for (int64_t j = 0; j < nd; ++j) {
    int64_t d = dim - 1 - j;
    int64_t before = padding[2 * j], after = padding[2 * j + 1];
    RemapDim& r = dims[d];
    if (mode == REMAP_REFLECT)
      TORCH_CHECK(before < r.in_size && after < r.in_size,
                  "Argument #4: Padding size should be less than the corresponding input "
                  "dimension, but got: padding (",
                  before, ", ", after, ") at dimension ", d, " of input ", x.sizes());
    r.out_size = r.in_size + before + after;
    TORCH_CHECK(r.out_size >= 1, op, ": input (", x.sizes(),
                ") is too small. Calculated output "
                "size along dim ",
                d, " is ", r.out_size);
    r.mode = mode;
    r.param = before;
  }
  return dims;
}

template <int kDims, int kMode>
at::Tensor vk_pad(const at::Tensor& self, at::IntArrayRef padding) {
  const char* op = kMode == REMAP_REFLECT ? "reflection_pad" : "replication_pad";
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool, "\"", op, kDims,
                              "d\" not implemented for 'Bool'");
  return run_remap(op, self, pad_dims(op, self, padding, kDims, kMode));
}
template <int kDims, int kMode>
at::Tensor& vk_pad_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out) {
  return write_out(out, vk_pad<kDims, kMode>(self, padding));
}
template <int kDims, int kMode>
at::Tensor vk_pad_backward(const at::Tensor& grad, const at::Tensor& self,
                           at::IntArrayRef padding) {
  const char* op = kMode == REMAP_REFLECT ? "reflection_pad_backward" : "replication_pad_backward";
  auto dims = pad_dims(op, self, padding, kDims, kMode);
  for (size_t k = 0; k < dims.size(); ++k)
    TORCH_CHECK(grad.size(k) == dims[k].out_size, op, ": grad_output size ", k, " should be ",
                dims[k].out_size, ", but got ", grad.size(k));
  // In the input's layout, as the CPU's.
  return in_layout_of(run_remap_backward(op, grad, self.sizes(), dims, self.scalar_type()), self);
}
template <int kDims, int kMode>
at::Tensor& vk_pad_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                at::IntArrayRef padding, at::Tensor& out) {
  return write_out(out, vk_pad_backward<kDims, kMode>(grad, self, padding));
}

// ------------------------------------------------------------- upsample

// The source-index rule of PyTorch's CPU kernels (UpSample.h: nearest_idx).
RemapDim nearest_dim(int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  RemapDim r;
  r.in_size = in;
  r.out_size = out;
  float s = (scale && *scale > 0) ? float(1.0 / *scale) : float(in) / float(out);
  if (!exact && out == in) {
    r.mode = REMAP_IDENTITY;
  } else if (!exact && out == 2 * in) {
    r.mode = REMAP_DIV;
    r.param = 2;
  } else {
    r.mode = exact ? REMAP_NEAREST_EXACT : REMAP_NEAREST;
    r.scale = s;
  }
  return r;
}

std::vector<RemapDim> nearest_dims(const char* op, at::IntArrayRef in_sizes,
                                   at::IntArrayRef output_size,
                                   std::initializer_list<std::optional<double>> scales,
                                   bool exact) {
  int64_t nd = int64_t(output_size.size());
  TORCH_CHECK(int64_t(in_sizes.size()) == nd + 2, op, ": expected ", nd + 2,
              "D input, but got input with sizes ", in_sizes);
  std::vector<RemapDim> dims(in_sizes.size());
  int64_t stride = 1;
  for (int64_t k = int64_t(in_sizes.size()) - 1; k >= 0; --k) {
    dims[k].in_size = dims[k].out_size = in_sizes[k];
    dims[k].in_stride = stride;
    stride *= in_sizes[k];
  }
  auto sc = scales.begin();
  for (int64_t j = 0; j < nd; ++j, ++sc) {
    int64_t d = 2 + j;
    TORCH_CHECK(in_sizes[d] > 0 && output_size[j] > 0, op,
                ": input and output sizes should be "
                "greater than 0, but got input ",
                in_sizes, " and output ", output_size);
    RemapDim r = nearest_dim(in_sizes[d], output_size[j], *sc, exact);
    r.in_stride = dims[d].in_stride;
    dims[d] = r;
  }
  return dims;
}

at::Tensor nearest_forward(const char* op, const at::Tensor& self, at::IntArrayRef output_size,
                           std::initializer_list<std::optional<double>> scales, bool exact) {
  auto dims = nearest_dims(op, self.sizes(), output_size, scales, exact);
  for (int64_t k = 0; k < self.dim(); ++k) dims[k].in_stride = self.stride(k);
  return run_remap(op, self, dims);
}

at::Tensor nearest_backward(const char* op, const at::Tensor& grad, at::IntArrayRef output_size,
                            at::IntArrayRef input_size,
                            std::initializer_list<std::optional<double>> scales, bool exact) {
  auto dims = nearest_dims(op, input_size, output_size, scales, exact);
  TORCH_CHECK(grad.dim() == int64_t(dims.size()), op, ": grad_output has wrong rank");
  for (size_t k = 0; k < dims.size(); ++k)
    TORCH_CHECK(grad.size(k) == dims[k].out_size, op, ": grad_output size ", k, " should be ",
                dims[k].out_size, ", but got ", grad.size(k));
  return run_remap_backward(op, grad, input_size, dims, grad.scalar_type());
}

using OptD = std::optional<double>;

template <bool kExact>
at::Tensor up_nearest1d(const at::Tensor& self, at::IntArrayRef os, OptD s) {
  return nearest_forward("upsample_nearest1d", self, os, {s}, kExact);
}
template <bool kExact>
at::Tensor& up_nearest1d_out(const at::Tensor& self, at::IntArrayRef os, OptD s, at::Tensor& out) {
  return write_out(out, up_nearest1d<kExact>(self, os, s));
}
template <bool kExact>
at::Tensor up_nearest2d(const at::Tensor& self, at::IntArrayRef os, OptD sh, OptD sw) {
  return nearest_forward("upsample_nearest2d", self, os, {sh, sw}, kExact);
}
template <bool kExact>
at::Tensor& up_nearest2d_out(const at::Tensor& self, at::IntArrayRef os, OptD sh, OptD sw,
                             at::Tensor& out) {
  return write_out(out, up_nearest2d<kExact>(self, os, sh, sw));
}
template <bool kExact>
at::Tensor up_nearest1d_bwd(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is, OptD s) {
  return nearest_backward("upsample_nearest1d_backward", g, os, is, {s}, kExact);
}
template <bool kExact>
at::Tensor& up_nearest1d_bwd_out(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is,
                                 OptD s, at::Tensor& out) {
  return write_out(out, up_nearest1d_bwd<kExact>(g, os, is, s));
}
template <bool kExact>
at::Tensor up_nearest2d_bwd(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is, OptD sh,
                            OptD sw) {
  return nearest_backward("upsample_nearest2d_backward", g, os, is, {sh, sw}, kExact);
}
template <bool kExact>
at::Tensor& up_nearest2d_bwd_out(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is,
                                 OptD sh, OptD sw, at::Tensor& out) {
  return write_out(out, up_nearest2d_bwd<kExact>(g, os, is, sh, sw));
}

template <bool kExact>
at::Tensor up_nearest3d(const at::Tensor& self, at::IntArrayRef os, OptD sd, OptD sh, OptD sw) {
  return nearest_forward("upsample_nearest3d", self, os, {sd, sh, sw}, kExact);
}
template <bool kExact>
at::Tensor& up_nearest3d_out(const at::Tensor& self, at::IntArrayRef os, OptD sd, OptD sh, OptD sw,
                             at::Tensor& out) {
  return write_out(out, up_nearest3d<kExact>(self, os, sd, sh, sw));
}
template <bool kExact>
at::Tensor up_nearest3d_bwd(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is, OptD sd,
                            OptD sh, OptD sw) {
  return nearest_backward("upsample_nearest3d_backward", g, os, is, {sd, sh, sw}, kExact);
}
template <bool kExact>
at::Tensor& up_nearest3d_bwd_out(const at::Tensor& g, at::IntArrayRef os, at::IntArrayRef is,
                                 OptD sd, OptD sh, OptD sw, at::Tensor& out) {
  return write_out(out, up_nearest3d_bwd<kExact>(g, os, is, sd, sh, sw));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("flip", TORCH_FN(vk_flip));
  m.impl("flip.out", TORCH_FN(vk_flip_out));
  m.impl("roll", TORCH_FN(vk_roll));
  m.impl("roll.out", TORCH_FN(vk_roll_out));
  m.impl("reflection_pad1d", TORCH_FN((vk_pad<1, REMAP_REFLECT>)));
  m.impl("reflection_pad1d.out", TORCH_FN((vk_pad_out<1, REMAP_REFLECT>)));
  m.impl("reflection_pad2d", TORCH_FN((vk_pad<2, REMAP_REFLECT>)));
  m.impl("reflection_pad2d.out", TORCH_FN((vk_pad_out<2, REMAP_REFLECT>)));
  m.impl("reflection_pad3d", TORCH_FN((vk_pad<3, REMAP_REFLECT>)));
  m.impl("reflection_pad3d.out", TORCH_FN((vk_pad_out<3, REMAP_REFLECT>)));
  m.impl("replication_pad1d", TORCH_FN((vk_pad<1, REMAP_REPLICATE>)));
  m.impl("replication_pad1d.out", TORCH_FN((vk_pad_out<1, REMAP_REPLICATE>)));
  m.impl("replication_pad2d", TORCH_FN((vk_pad<2, REMAP_REPLICATE>)));
  m.impl("replication_pad2d.out", TORCH_FN((vk_pad_out<2, REMAP_REPLICATE>)));
  m.impl("replication_pad3d", TORCH_FN((vk_pad<3, REMAP_REPLICATE>)));
  m.impl("replication_pad3d.out", TORCH_FN((vk_pad_out<3, REMAP_REPLICATE>)));
  m.impl("reflection_pad1d_backward", TORCH_FN((vk_pad_backward<1, REMAP_REFLECT>)));
  m.impl("reflection_pad1d_backward.grad_input", TORCH_FN((vk_pad_backward_out<1, REMAP_REFLECT>)));
  m.impl("reflection_pad2d_backward", TORCH_FN((vk_pad_backward<2, REMAP_REFLECT>)));
  m.impl("reflection_pad2d_backward.grad_input", TORCH_FN((vk_pad_backward_out<2, REMAP_REFLECT>)));
  m.impl("reflection_pad3d_backward", TORCH_FN((vk_pad_backward<3, REMAP_REFLECT>)));
  m.impl("reflection_pad3d_backward.grad_input", TORCH_FN((vk_pad_backward_out<3, REMAP_REFLECT>)));
  m.impl("replication_pad1d_backward", TORCH_FN((vk_pad_backward<1, REMAP_REPLICATE>)));
  m.impl("replication_pad1d_backward.grad_input",
         TORCH_FN((vk_pad_backward_out<1, REMAP_REPLICATE>)));
  m.impl("replication_pad2d_backward", TORCH_FN((vk_pad_backward<2, REMAP_REPLICATE>)));
  m.impl("replication_pad2d_backward.grad_input",
         TORCH_FN((vk_pad_backward_out<2, REMAP_REPLICATE>)));
  m.impl("replication_pad3d_backward", TORCH_FN((vk_pad_backward<3, REMAP_REPLICATE>)));
  m.impl("replication_pad3d_backward.grad_input",
         TORCH_FN((vk_pad_backward_out<3, REMAP_REPLICATE>)));
  m.impl("upsample_nearest1d", TORCH_FN(up_nearest1d<false>));
  m.impl("upsample_nearest1d.out", TORCH_FN(up_nearest1d_out<false>));
  m.impl("upsample_nearest2d", TORCH_FN(up_nearest2d<false>));
  m.impl("upsample_nearest2d.out", TORCH_FN(up_nearest2d_out<false>));
  m.impl("_upsample_nearest_exact1d", TORCH_FN(up_nearest1d<true>));
  m.impl("_upsample_nearest_exact1d.out", TORCH_FN(up_nearest1d_out<true>));
  m.impl("_upsample_nearest_exact2d", TORCH_FN(up_nearest2d<true>));
  m.impl("_upsample_nearest_exact2d.out", TORCH_FN(up_nearest2d_out<true>));
  m.impl("upsample_nearest1d_backward", TORCH_FN(up_nearest1d_bwd<false>));
  m.impl("upsample_nearest1d_backward.grad_input", TORCH_FN(up_nearest1d_bwd_out<false>));
  m.impl("upsample_nearest2d_backward", TORCH_FN(up_nearest2d_bwd<false>));
  m.impl("upsample_nearest2d_backward.grad_input", TORCH_FN(up_nearest2d_bwd_out<false>));
  m.impl("_upsample_nearest_exact1d_backward", TORCH_FN(up_nearest1d_bwd<true>));
  m.impl("_upsample_nearest_exact1d_backward.grad_input", TORCH_FN(up_nearest1d_bwd_out<true>));
  m.impl("_upsample_nearest_exact2d_backward", TORCH_FN(up_nearest2d_bwd<true>));
  m.impl("_upsample_nearest_exact2d_backward.grad_input", TORCH_FN(up_nearest2d_bwd_out<true>));
  m.impl("upsample_nearest3d", TORCH_FN(up_nearest3d<false>));
  m.impl("upsample_nearest3d.out", TORCH_FN(up_nearest3d_out<false>));
  m.impl("_upsample_nearest_exact3d", TORCH_FN(up_nearest3d<true>));
  m.impl("_upsample_nearest_exact3d.out", TORCH_FN(up_nearest3d_out<true>));
  m.impl("upsample_nearest3d_backward", TORCH_FN(up_nearest3d_bwd<false>));
  m.impl("upsample_nearest3d_backward.grad_input", TORCH_FN(up_nearest3d_bwd_out<false>));
  m.impl("_upsample_nearest_exact3d_backward", TORCH_FN(up_nearest3d_bwd<true>));
  m.impl("_upsample_nearest_exact3d_backward.grad_input", TORCH_FN(up_nearest3d_bwd_out<true>));
}

}  // namespace vkml_aten
