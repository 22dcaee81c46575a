// Data movement: cat (one dispatch per output; stack builds on it), tril/triu,
// repeat_interleave's index and eye. flip, roll, padding and nearest upsampling run
// on the remap kernel (ops_remap.cpp).
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include <optional>

#include "op_helpers.h"
#include "value_bounds.h"
#include "vkml/ops/shape.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

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
  if (is_complex_storage(out.scalar_type())) {  // the float pairs, joined along the same dim
    std::vector<at::Tensor> pairs;
    for (const auto& t : tensors)
      if (!skipped(t)) pairs.push_back(at::view_as_real(t.to(out.scalar_type()).resolve_conj()));
    at::Tensor out_pairs = at::view_as_real(out);
    at::cat_out(out_pairs, pairs, d);
    return out;
  }
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

// The layout of cat's result on the CPU and CUDA: the inputs' common suggested memory
// format. Channels-last where every input is channels-last (3d) and the shapes agree
// (other cases take the contiguous path, which also raises the CPU's errors).
bool channels_last_cat(const std::vector<at::Tensor>& tensors, int64_t dim) {
  const at::Tensor& t0 = tensors[0];
  if (!channels_last_layout(t0) || dim < -t0.dim() || dim >= t0.dim()) return false;
  const at::MemoryFormat format = t0.suggest_memory_format();
  const int64_t d = at::maybe_wrap_dim(dim, t0.dim());
  for (const at::Tensor& t : tensors) {
    if (t.dim() != t0.dim() || t.suggest_memory_format() != format || t.device() != t0.device())
      return false;
    for (int64_t k = 0; k < t.dim(); ++k)
      if (k != d && t.size(k) != t0.size(k)) return false;
  }
  return true;
}

at::Tensor vk_cat(const at::ITensorListRef& list, int64_t dim) {
  std::vector<at::Tensor> tensors(list.begin(), list.end());
  TORCH_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  at::Tensor out = at::empty({0}, tensors[0].options().dtype(at::native::result_type(list)));
  if (channels_last_cat(tensors, dim)) {
    // Joined in memory order (channels last), then viewed in the logical order: no copy.
    const int64_t nd = tensors[0].dim(), d = at::maybe_wrap_dim(dim, nd);
    std::vector<at::Tensor> in_memory_order;
    for (const at::Tensor& t : tensors) in_memory_order.push_back(t.movedim(1, -1));
    vk_cat_out(at::TensorList(in_memory_order), d == 0 ? 0 : d == 1 ? nd - 1 : d - 1, out);
    return out.movedim(-1, 1);
  }
  return vk_cat_out(list, dim, out);
}

// ------------------------------------------------------------ tril/triu

at::Tensor& tri_out(const char* op, const at::Tensor& self, int64_t k, bool upper,
                    at::Tensor& out) {
  TORCH_CHECK(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  if (self.is_complex()) {  // the real and imaginary parts, each a real matrix
    at::Tensor pairs = at::view_as_real(self.resolve_conj().resolve_neg());
    auto part = [&](int64_t i) {
      at::Tensor p = pairs.select(-1, i);
      return upper ? at::triu(p, k) : at::tril(p, k);
    };
    at::Tensor r = at::view_as_complex(at::stack({part(0), part(1)}, -1));
    if (!out.is_same(self)) at::native::resize_output(out, self.sizes());
    out.copy_(r);
    return out;
  }
  check_vkml_dtype(op, self);
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

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cat", TORCH_FN(vk_cat));
  m.impl("cat.out", TORCH_FN(vk_cat_out));
  m.impl("tril", TORCH_FN(vk_tril));
  m.impl("tril.out", TORCH_FN(vk_tril_out));
  m.impl("tril_", TORCH_FN(vk_tril_));
  m.impl("triu", TORCH_FN(vk_triu));
  m.impl("triu.out", TORCH_FN(vk_triu_out));
  m.impl("triu_", TORCH_FN(vk_triu_));
  m.impl("repeat_interleave.Tensor", TORCH_FN(vk_repeat_interleave));
  m.impl("eye.out", TORCH_FN(vk_eye_out));
  m.impl("eye.m_out", TORCH_FN(vk_eye_m_out));
}

}  // namespace vkml_aten
