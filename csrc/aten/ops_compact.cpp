// Data-dependent shapes: nonzero (and nonzero_static), masked_select, and masked_scatter_. Each
// scans the 0/1 flags into an int32 prefix sum on the device, reads the count
// back once where it is the result's size (masked_scatter_ checks it on the device),
// then compacts in one kernel. Also count_nonzero (bincount lives with the
// histogram ops in ops_search.cpp).
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <limits>

#include "op_helpers.h"
#include "vkml/ops/compact.h"
#include "vkml/ops/index.h"
#include "vkml/ops/scan.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// Inclusive prefix sum of (t != 0) over t's elements in row-major order.
at::Tensor flag_prefix(const at::Tensor& t) {
  TORCH_CHECK(t.numel() < std::numeric_limits<int32_t>::max(),
              "vkml: nonzero / masked ops support fewer than 2^31 elements");
  at::Tensor flags = (t.scalar_type() == at::kBool ? t : t.ne(0)).to(at::kInt).contiguous();
  at::Tensor prefix = at::empty({t.numel()}, flags.options());
  vkml::ops::ScanArgs a;
  a.op = vkml::ops::ScanOp::Sum;
  a.dtype = vkml::DType::i32;
  a.in = addr(flags);
  a.out = addr(prefix);
  a.n = t.numel();
  guarded([&] { vkml::ops::scan(vkml_device(t), a); });
  return prefix;
}

int64_t last_count(const at::Tensor& prefix) {
  return prefix.numel() == 0 ? 0 : prefix.select(0, prefix.numel() - 1).item<int64_t>();
}

at::Tensor vk_nonzero(const at::Tensor& self) {
  int64_t nd = self.dim();
  if (self.numel() == 0) return at::empty({0, nd}, self.options().dtype(at::kLong));
  if (nd > vkml::kMaxDims) {
    // The kernel writes at most 12 coordinates: take flat positions and unravel them.
    at::Tensor pos = vk_nonzero(self.reshape({-1})).select(1, 0);
    std::vector<at::Tensor> coords(static_cast<size_t>(nd));
    int64_t stride = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      coords[size_t(d)] = pos.div(stride, "trunc").remainder(self.size(d));
      stride *= self.size(d);
    }
    return at::stack(coords, 0).t();  // column-major, as below
  }
  at::Tensor prefix = flag_prefix(self);
  int64_t count = last_count(prefix);
  // Column-major, as the CPU's and CUDA's nonzero: each column (as_tuple's, where's) is
  // contiguous, and code that views one relies on it.
  at::Tensor out = at::empty({nd, count}, self.options().dtype(at::kLong)).t();
  if (count == 0 || nd == 0) return out;
  vkml::ops::CompactArgs a;
  a.mode = vkml::ops::CompactMode::Coordinates;
  a.prefix = addr(prefix);
  a.dst = addr(out);
  a.n = self.numel();
  a.limit = count;
  a.sizes = self.sizes().vec();
  guarded([&] { vkml::ops::compact(vkml_device(self), a); });
  return out;
}

// nonzero never casts into its out tensor (the CPU's checks and messages).
void check_nonzero_out(const char* name, const at::Tensor& self, const at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong, name,
              ": Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  TORCH_CHECK(out.device() == self.device(), "expected self and out to be on the same device, ",
              "but got out on ", out.device(), " and self on ", self.device());
}

// nonzero_static: the first `size` coordinates of nonzero(), padded with rows of
// fill_value to a fixed shape.
at::Tensor vk_nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value) {
  TORCH_CHECK(size >= 0,
              "nonzero_static: 'size' must be an non-negative integer, but got size: ", size);
  at::Tensor out = at::full({size, self.dim()}, fill_value, self.options().dtype(at::kLong));
  at::Tensor nz = vk_nonzero(self);
  int64_t rows = std::min(size, nz.size(0));
  if (rows > 0) out.narrow(0, 0, rows).copy_(nz.narrow(0, 0, rows));
  return out;
}
at::Tensor& nonzero_static_out(const at::Tensor& self, int64_t size, int64_t fill_value,
                               at::Tensor& out) {
  check_nonzero_out("nonzero_static", self, out);
  return write_out(out, vk_nonzero_static(self, size, fill_value));
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  check_nonzero_out("nonzero", self, out);
  return write_out(out, vk_nonzero(self));
}

void check_mask(const char* name, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, name, ": expected BoolTensor for mask");
}

at::Tensor vk_masked_select(const at::Tensor& self, const at::Tensor& mask) {
  check_mask("masked_select", mask);
  // 16-byte elements (complex128) move as their two 8-byte halves, each selected.
  if (self.element_size() == 16) {
    at::Tensor halves = vk_masked_select(at::view_as_real(self.resolve_conj()), mask.unsqueeze(-1));
    return at::view_as_complex(halves.view({-1, 2}));
  }
  auto [s, m] = at::expand_outplace(self, mask);
  at::Tensor prefix = flag_prefix(*m);
  int64_t count = last_count(prefix);
  at::Tensor out = at::empty({count}, self.options());
  if (count == 0) return out;
  at::Tensor src = s->contiguous();
  vkml::ops::CompactArgs a;
  a.mode = vkml::ops::CompactMode::Select;
  a.prefix = addr(prefix);
  a.src = addr(src);
  a.dst = addr(out);
  a.n = src.numel();
  a.elem_size = int64_t(src.element_size());
  guarded([&] { vkml::ops::compact(vkml_device(self), a); });
  return out;
}
at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  return write_out_exact(out, vk_masked_select(self, mask));
}

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter_: expected self and source to have same dtypes but got",
              self.scalar_type(), " and ", source.scalar_type());
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  if (self.element_size() == 16 && self.numel()) {  // as masked_select: two 8-byte halves
    at::Tensor work = self.is_conj() ? self.resolve_conj() : self;
    at::Tensor halves = at::view_as_real(work);
    masked_scatter_(halves, mask.expand(self.sizes()).unsqueeze(-1),
                    at::view_as_real(source.resolve_conj().contiguous()));
    if (!work.is_same(self)) self.copy_(work);
    return self;
  }
  at::Tensor m = mask.expand(self.sizes());
  if (self.numel() == 0) return self;
  at::Tensor prefix = flag_prefix(m);
  // The count stays on the device, as on CUDA: a mask with more ones than the source
  // raises at the next read of the device; the kernel skips the ones past the source.
  check_range_later(prefix.narrow(0, prefix.numel() - 1, 1), 0, source.numel(),
                    "Number of elements of source < number of ones in mask");
  at::Tensor work = self.is_contiguous() ? self : self.contiguous();
  at::Tensor src = source.contiguous();
  vkml::ops::CompactArgs a;
  a.mode = vkml::ops::CompactMode::Scatter;
  a.prefix = addr(prefix);
  a.src = addr(src);
  a.dst = addr(work);
  a.n = work.numel();
  a.elem_size = int64_t(work.element_size());
  a.limit = src.numel();
  guarded([&] { vkml::ops::compact(vkml_device(self), a); });
  if (!work.is_same(self)) self.copy_(work);
  return self;
}

at::Tensor vk_count_nonzero(const at::Tensor& self, at::IntArrayRef dims) {
  return at::sum(self.ne(0), dims);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero", TORCH_FN(vk_nonzero));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("nonzero_static", TORCH_FN(vk_nonzero_static));
  m.impl("nonzero_static.out", TORCH_FN(nonzero_static_out));
  m.impl("masked_select", TORCH_FN(vk_masked_select));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(vk_count_nonzero));
}

}  // namespace vkml_aten
