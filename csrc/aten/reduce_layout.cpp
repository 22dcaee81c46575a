#include "reduce_layout.h"

#include <ATen/WrapDimUtils.h>

#include <algorithm>

namespace vkml_aten {

std::vector<int64_t> reduce_dims(const at::Tensor& self, at::OptionalIntArrayRef dims) {
  std::vector<int64_t> out;
  int64_t nd = self.dim();
  if (!dims.has_value() || dims->empty()) {
    for (int64_t d = 0; d < nd; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : *dims) {
    int64_t w = at::maybe_wrap_dim(d, std::max<int64_t>(nd, 1));
    TORCH_CHECK(std::find(out.begin(), out.end(), w) == out.end(), "dim ", w,
                " appears multiple times in the list of dims");
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  if (nd == 0) out.clear();  // a 0-dim tensor reduces over nothing
  return out;
}

std::vector<int64_t> reduced_shape(const at::Tensor& self, const std::vector<int64_t>& dims,
                                   bool keepdim) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced)
      shape.push_back(self.size(d));
    else if (keepdim)
      shape.push_back(1);
  }
  return shape;
}

ReduceLayout reduce_layout(const at::Tensor& self, std::vector<int64_t> dims) {
  ReduceLayout l;
  int64_t nd = self.dim();
  for (int64_t d = 0; d < nd; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) l.kept_sizes.push_back(self.size(d));
  bool block = !dims.empty() && dims.back() - dims.front() + 1 == int64_t(dims.size());
  if (dims.empty()) {
    l.input = self.contiguous();
    l.outer = self.numel();
    return l;
  }
  if (block) {
    l.input = self.contiguous();
    for (int64_t d = 0; d < dims.front(); ++d) l.outer *= self.size(d);
    for (int64_t d : dims) l.r *= self.size(d);
    for (int64_t d = dims.back() + 1; d < nd; ++d) l.inner *= self.size(d);
    return l;
  }
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < nd; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) perm.push_back(d);
  for (int64_t d : dims) perm.push_back(d);
  l.input = self.permute(perm).contiguous();
  for (int64_t s : l.kept_sizes) l.outer *= s;
  for (int64_t d : dims) l.r *= self.size(d);
  return l;
}

}  // namespace vkml_aten
