#include "value_bounds.h"

#include <limits>

#include "vkml/ops/launch.h"
#include "vkml_tensor.h"

namespace vkml_aten {

namespace {

bool is_index_dtype(at::ScalarType t) { return t == at::kLong || t == at::kInt; }

}  // namespace

void note_values(const at::Tensor& t, int64_t lo, int64_t hi) {
  if (t.numel() == 0 || !is_index_dtype(t.scalar_type()) || !t.is_contiguous()) return;
  // Beyond int32 the kernels' values wrap: nothing is known then.
  if (t.scalar_type() == at::kInt &&
      (lo < std::numeric_limits<int32_t>::min() || hi > std::numeric_limits<int32_t>::max()))
    return;
  vkml::DType dt = to_vkml(t.scalar_type());
  vkml_device(t).value_bounds().note(vkml::ops::span_elems(addr(t), t.numel(), vkml::itemsize(dt)),
                                     dt, vkml::IntRange{lo, hi});
}

void note_uploaded(const at::Tensor& dst, const at::Tensor& src) {
  if (src.numel() == 0 || !is_index_dtype(src.scalar_type()) || !dst.is_contiguous()) return;
  // One pass over data the host just copied: cheaper than a read-back later.
  auto [lo, hi] = at::aminmax(src);
  note_values(dst, lo.item<int64_t>(), hi.item<int64_t>());
}

std::optional<vkml::IntRange> known_values(const at::Tensor& t) {
  if (t.numel() == 0 || !is_index_dtype(t.scalar_type())) return std::nullopt;
  // The memory the tensor spans, from its own sizes and strides (any number of dims).
  const vkml::DType dt = to_vkml(t.scalar_type());
  const auto span = vkml::ops::span_of(addr(t), vkml::itemsize(dt), int(t.dim()), t.sizes().data(),
                                       t.strides().data());
  return vkml_device(t).value_bounds().lookup(span, dt);
}

void note_gathered(const at::Tensor& out, const at::Tensor& src, bool checked) {
  std::optional<vkml::IntRange> r = known_values(src);
  if (!r) return;
  if (!checked) *r = vkml::join(*r, {0, 0});
  note_values(out, r->lo, r->hi);
}

void note_joined(const at::Tensor& out, const std::vector<at::Tensor>& inputs) {
  std::optional<vkml::IntRange> joined;
  for (const at::Tensor& t : inputs) {
    std::optional<vkml::IntRange> r = known_values(t);
    if (!r) return;
    joined = joined ? vkml::join(*joined, *r) : *r;
  }
  if (joined) note_values(out, joined->lo, joined->hi);
}

}  // namespace vkml_aten
