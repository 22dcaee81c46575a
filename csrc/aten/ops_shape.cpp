// Data movement: cat (one dispatch per output; stack builds on it), flip, roll,
// tril/triu, eye, reflection/replication padding and nearest upsampling (1-3d) with
// their backward passes.
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include <optional>

#include "value_bounds.h"
#include "vkml/ops/remap.h"
#include "vkml/ops/shape.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::RemapDim;

at::Tensor& write_out(at::Tensor& out, const at::Tensor& r) {
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// The stride of dims [from, to) of t seen as one dim, if they collapse (size-1 dims
// are free). An empty range collapses to stride 0.
std::optional<int64_t> collapsed_stride(const at::Tensor& t, int64_t from, int64_t to) {
  std::optional<int64_t> stride;
  int64_t expected = 0;
  for (int64_t k = to - 1; k >= from; --k) {
    if (t.size(k) == 1) continue;
    if (!stride) {
      stride = t.stride(k);
    } else if (t.stride(k) != expected) {
      return std::nullopt;
    }
    expected = t.stride(k) * t.size(k);
  }
  return stride.value_or(0);
}

// ------------------------------------------------------------------ cat

// Legacy rule shared with the CPU kernel: 1-D empty tensors are skipped.
bool skipped(const at::Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

at::Tensor& vk_cat_out(const at::ITensorListRef& list, int64_t dim, at::Tensor& out) {
  std::vector<at::Tensor> tensors(list.begin(), list.end());
  TORCH_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  const at::Tensor* ref_t = nullptr;
  for (const auto& t : tensors)
    if (!skipped(t)) {
      ref_t = &t;
      break;
    }
  at::ScalarType dtype = at::native::result_type(list);
  TORCH_CHECK(at::canCast(dtype, out.scalar_type()),
              "torch.cat(): input types can't be cast to "
              "the desired output type ",
              out.scalar_type());
  if (!ref_t) {
    at::native::resize_output(out, {0});
    return out;
  }
  int64_t d = at::maybe_wrap_dim(dim, ref_t->dim());
  std::vector<int64_t> shape = ref_t->sizes().vec();
  int64_t total = 0;
  for (size_t n = 0; n < tensors.size(); ++n) {
    const at::Tensor& t = tensors[n];
    if (skipped(t)) continue;
    TORCH_CHECK(t.dim() == ref_t->dim(), "Tensors must have same number of dimensions: got ",
                ref_t->dim(), " and ", t.dim());
    for (int64_t k = 0; k < t.dim(); ++k)
      TORCH_CHECK(k == d || t.size(k) == ref_t->size(k),
                  "Sizes of tensors must match except in "
                  "dimension ",
                  d, ". Expected size ", ref_t->size(k), " but got size ", t.size(k),
                  " for tensor number ", n, " in the list.");
    TORCH_CHECK(t.device() == out.device(),
                "torch.cat(): all input tensors must be on the same "
                "device. Received ",
                t.device(), " and ", out.device());
    total += t.size(d);
  }
  shape[d] = total;
  for (const auto& t : tensors) {
    TORCH_CHECK(!out.is_same(t), "torch.cat(): the output tensor must not alias an input");
    if (out.numel() > 0 && t.numel() > 0) at::assert_no_overlap(out, t);
  }
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  TORCH_CHECK_NOT_IMPLEMENTED(has_vkml_dtype(out.scalar_type()), "cat on vkml: unsupported dtype ",
                              out.scalar_type());
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= shape[k];
  for (int64_t k = d + 1; k < int64_t(shape.size()); ++k) inner *= shape[k];
  std::vector<at::Tensor> keep;  // converted / compacted inputs stay alive until recorded
  std::vector<vkml::ops::CatInput> inputs;
  for (const auto& t0 : tensors) {
    if (skipped(t0) || t0.size(d) == 0) continue;
    at::Tensor t = t0.scalar_type() == out.scalar_type() ? t0 : t0.to(out.scalar_type());
    auto so = collapsed_stride(t, 0, d), si = collapsed_stride(t, d + 1, t.dim());
    if (!so || !si) {
      t = t.contiguous();
      so = collapsed_stride(t, 0, d);
      si = collapsed_stride(t, d + 1, t.dim());
    }
    inputs.push_back({addr(t), t.size(d), *so, t.stride(d), *si});
    keep.push_back(t);
  }
  at::Tensor target = out.is_contiguous() ? out : at::empty(shape, out.options());
  guarded([&] {
    vkml::ops::cat(vkml_device(target), to_vkml(target.scalar_type()), addr(target), inputs, outer,
                   inner);
  });
  note_joined(target, keep);
  if (!target.is_same(out)) out.copy_(target);
  return out;
}

at::Tensor vk_cat(const at::ITensorListRef& list, int64_t dim) {
  std::vector<at::Tensor> tensors(list.begin(), list.end());
  TORCH_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  at::Tensor out = at::empty({0}, tensors[0].options().dtype(at::native::result_type(list)));
  return vk_cat_out(list, dim, out);
}

// ---------------------------------------------------------------- remap

void check_dtype(const char* op, const at::Tensor& t) {
  TORCH_CHECK_NOT_IMPLEMENTED(has_vkml_dtype(t.scalar_type()), op, " on vkml: unsupported dtype ",
                              t.scalar_type());
}

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
  check_dtype(op, self);
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
// are `dims` (in_stride ignored: recomputed for the contiguous float32 grad).
at::Tensor run_remap_backward(const char* op, const at::Tensor& grad_out, at::IntArrayRef in_sizes,
                              std::vector<RemapDim> dims, at::ScalarType dtype) {
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_storage(dtype), op,
                              " on vkml supports float32, float16 and bfloat16, got ", dtype);
  at::Tensor g = grad_out.to(at::kFloat).contiguous();
  at::Tensor gi = at::zeros(in_sizes, g.options());
  int64_t stride = 1;
  for (int64_t k = int64_t(dims.size()) - 1; k >= 0; --k) {
    dims[k].in_stride = stride;
    stride *= dims[k].in_size;
  }
  if (gi.numel() > 0 && g.numel() > 0)
    guarded([&] { vkml::ops::remap_backward(vkml_device(g), addr(gi), addr(g), dims); });
  return dtype == at::kFloat ? gi : gi.to(dtype);
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

// ------------------------------------------------------------ tril/triu

at::Tensor& tri_out(const char* op, const at::Tensor& self, int64_t k, bool upper,
                    at::Tensor& out) {
  TORCH_CHECK(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  check_dtype(op, self);
  if (!out.is_same(self)) {
    at::native::resize_output(out, self.sizes());
    TORCH_CHECK(out.scalar_type() == self.scalar_type(), op, ": expected out dtype ",
                self.scalar_type(), " but got ", out.scalar_type());
  }
  if (self.numel() == 0) return out;
  int64_t nd = self.dim();
  at::Tensor src = self;
  auto sb = collapsed_stride(src, 0, nd - 2);
  if (!sb) {
    src = self.contiguous();
    sb = collapsed_stride(src, 0, nd - 2);
  }
  at::Tensor dst = out;
  auto db = collapsed_stride(dst, 0, nd - 2);
  if (!db) {
    dst = at::empty(self.sizes(), self.options());
    db = collapsed_stride(dst, 0, nd - 2);
  }
  int64_t rows = self.size(nd - 2), cols = self.size(nd - 1);
  vkml::ops::MatrixRef d{addr(dst), {*db, dst.stride(nd - 2), dst.stride(nd - 1)}};
  vkml::ops::MatrixRef s{addr(src), {*sb, src.stride(nd - 2), src.stride(nd - 1)}};
  guarded([&] {
    vkml::ops::tri(vkml_device(src), to_vkml(src.scalar_type()), d, s, self.numel() / (rows * cols),
                   rows, cols, k, upper);
  });
  if (!dst.is_same(out)) out.copy_(dst);
  return out;
}

at::Tensor& vk_tril_out(const at::Tensor& self, int64_t k, at::Tensor& out) {
  return tri_out("tril", self, k, false, out);
}
at::Tensor& vk_triu_out(const at::Tensor& self, int64_t k, at::Tensor& out) {
  return tri_out("triu", self, k, true, out);
}
at::Tensor vk_tril(const at::Tensor& self, int64_t k) {
  at::Tensor out = at::empty(self.sizes(), self.options());
  return tri_out("tril", self, k, false, out);
}
at::Tensor vk_triu(const at::Tensor& self, int64_t k) {
  at::Tensor out = at::empty(self.sizes(), self.options());
  return tri_out("triu", self, k, true, out);
}
at::Tensor& vk_tril_(at::Tensor& self, int64_t k) { return tri_out("tril", self, k, false, self); }
at::Tensor& vk_triu_(at::Tensor& self, int64_t k) { return tri_out("triu", self, k, true, self); }

// ---------------------------------------------------- repeat_interleave

// The index tensor of repeat_interleave(repeats); the int form of the op is
// composite, and the tensor form gathers with these indices (index_select).
at::Tensor vk_repeat_interleave(const at::Tensor& repeats, std::optional<int64_t> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
              "repeats has to be Long or Int tensor");
  int64_t n = repeats.size(0);
  if (n == 0) return at::empty({0}, repeats.options());
  at::Tensor r = repeats.contiguous();
  int64_t total;
  if (output_size) {
    total = *output_size;
  } else {
    // The output length depends on the data: one read of (sum, min).
    at::Tensor sm = at::stack({r.sum(), r.min().to(at::kLong)}).cpu();
    total = sm[0].item<int64_t>();
    TORCH_CHECK(sm[1].item<int64_t>() >= 0, "repeats can not be negative");
  }
  at::Tensor out = at::empty({total}, repeats.options());
  at::Tensor cum = at::empty({n}, repeats.options().dtype(at::kInt));
  guarded([&] {
    vkml::ops::repeat_index(vkml_device(r), addr(r), addr(cum), addr(out), n, total,
                            r.scalar_type() == at::kInt);
  });
  return out;
}

// ------------------------------------------------------------------ eye

at::Tensor& vk_eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  at::native::resize_output(out, {n, m});
  out.zero_();
  if (n > 0 && m > 0) out.diagonal().fill_(1);
  return out;
}
at::Tensor& vk_eye_out(int64_t n, at::Tensor& out) { return vk_eye_m_out(n, n, out); }

// -------------------------------------------------------------- padding

// Padding of the last `nd` dims of x; padding lists (before, after) from the last
// dim backwards, as F.pad does.
std::vector<RemapDim> pad_dims(const char* op, const at::Tensor& x, at::IntArrayRef padding,
                               int64_t nd, int mode) {
  TORCH_CHECK(int64_t(padding.size()) == 2 * nd, op, ": padding size is expected to be ", 2 * nd,
              ", but got: ", padding.size());
  int64_t dim = x.dim();
  TORCH_CHECK(dim == nd + 1 || dim == nd + 2, op, ": expected ", nd + 1, "D or ", nd + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions "
              "for input, but got: ",
              x.sizes());
  for (int64_t k = dim - nd - 1; k < dim; ++k)
    TORCH_CHECK(x.size(k) != 0, op, ": expected ", nd + 1, "D or ", nd + 2,
                "D (batch mode) tensor with possibly 0 batch size and other non-zero "
                "dimensions for input, but got: ",
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
  return run_remap_backward(op, grad, self.sizes(), dims, self.scalar_type());
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
  m.impl("cat", TORCH_FN(vk_cat));
  m.impl("cat.out", TORCH_FN(vk_cat_out));
  m.impl("flip", TORCH_FN(vk_flip));
  m.impl("flip.out", TORCH_FN(vk_flip_out));
  m.impl("roll", TORCH_FN(vk_roll));
  m.impl("roll.out", TORCH_FN(vk_roll_out));
  m.impl("tril", TORCH_FN(vk_tril));
  m.impl("tril.out", TORCH_FN(vk_tril_out));
  m.impl("tril_", TORCH_FN(vk_tril_));
  m.impl("triu", TORCH_FN(vk_triu));
  m.impl("triu.out", TORCH_FN(vk_triu_out));
  m.impl("triu_", TORCH_FN(vk_triu_));
  m.impl("repeat_interleave.Tensor", TORCH_FN(vk_repeat_interleave));
  m.impl("eye.out", TORCH_FN(vk_eye_out));
  m.impl("eye.m_out", TORCH_FN(vk_eye_m_out));
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
