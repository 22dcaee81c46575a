// Indexing: index_select, gather, scatter (src / value / reduce), scatter_add,
// scatter_reduce, index_add, index_copy, index_reduce, index_fill, masked_fill,
// index.Tensor, index_put_, take, put_, embedding_dense_backward (flip and roll
// live with the remap ops, ops_remap.cpp).
//
// Index validation (index_bounds.cpp): out-of-range indices raise the exception
// PyTorch's CPU kernels raise. The kernels never touch memory outside their
// operands even without the check (a gather reads 0, a scatter skips the element).
#include <ATen/Context.h>
#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/Resize.h>
#include <c10/util/bit_cast.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "fallback.h"
#include "index_bounds.h"
#include "op_helpers.h"
#include "value_bounds.h"
#include "vkml/ops/index.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

// The CPU's aliasing checks (ATen/MemoryOverlap.h): an op may not write where it also
// reads, nor through a tensor whose elements share memory; a kernel would race there.
// (index_put_ and index_fill_ write through self's shared elements on the CPU: they skip
// the internal check, as there.)
void check_writes(const at::Tensor& written, std::initializer_list<const at::Tensor*> read,
                  bool internal = true) {
  if (internal) at::assert_no_internal_overlap(written);
  for (const at::Tensor* t : read) {
    if (t != nullptr && t->defined()) at::assert_no_overlap(written, *t);
  }
}

using vkml::ops::IndexMode;
using vkml::ops::IndexReduce;
using Sizes = std::vector<int64_t>;

// --------------------------------------------------------------------------
// Helpers
// --------------------------------------------------------------------------

at::Tensor meta(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// Gathers and assignments move bits, so dtypes of the same size share a kernel.
vkml::DType kernel_dtype(const char* name, at::ScalarType t, bool reduce) {
  switch (t) {
    case at::kFloat:
    case at::kHalf:
    case at::kBFloat16:
    case at::kInt:
    case at::kLong:
    case at::kShort:
    case at::kChar:
    case at::kByte:
    case at::kBool:
      return to_vkml(t);
    case at::kDouble:  // moves as int64 bits; reductions in order (serial)
      return reduce ? vkml::DType::f64 : vkml::DType::i64;
    case at::kComplexFloat:  // a pair of floats moves as one 8-byte element
      if (!reduce) return vkml::DType::i64;
      break;
    default:
      break;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, name, " on vkml does not support ", t,
                              reduce ? " with a reduction" : "", " yet");
  return vkml::DType::f32;
}

vkml::TensorRef view_ref(const at::Tensor& t, const Sizes& sizes, const Sizes& strides,
                         vkml::DType dtype) {
  vkml::TensorRef r;
  r.address = t.defined() ? addr(t) : 0;
  r.dtype = dtype;
  TORCH_CHECK(sizes.size() <= size_t(vkml::kMaxDims), "vkml supports tensors of up to ",
              vkml::kMaxDims, " dims");
  r.ndim = int(sizes.size());
  for (int d = 0; d < r.ndim; ++d) {
    r.sizes[d] = sizes[d];
    r.strides[d] = strides[d];
  }
  return r;
}

Sizes sizes_of(const at::Tensor& t) {
  return t.dim() == 0 ? Sizes{1} : Sizes(t.sizes().begin(), t.sizes().end());
}
Sizes strides_of(const at::Tensor& t) {
  return t.dim() == 0 ? Sizes{1} : Sizes(t.strides().begin(), t.strides().end());
}
Sizes zeros(size_t n) { return Sizes(n, 0); }

// Index tensors as the kernel reads them: int64 or int32, anywhere.
at::Tensor kernel_index(const at::Tensor& index) {
  if (index.scalar_type() == at::kLong || index.scalar_type() == at::kInt) return index;
  return index.to(at::kLong);
}

struct Launch {
  IndexMode mode = IndexMode::Gather;
  IndexReduce reduce = IndexReduce::Assign;
  Sizes iter;
  at::Tensor dst, src, idx;
  Sizes dst_strides, src_strides, idx_strides;
  at::Scalar value = 0;
  int64_t dim_stride = 0, dim_size = 0;
  bool wrap = false;
  std::optional<int64_t> skip;
  bool serial = false;
};

void launch(const char* name, const Launch& l) {
  for (int64_t s : l.iter)
    if (s == 0) return;
  bool reduce = l.mode == IndexMode::Scatter && l.reduce != IndexReduce::Assign;
  // Lanes add; complex products take the CPU route before here (complex_product), and
  // complex values have no order (the CPU raises for amax / amin too).
  TORCH_CHECK_NOT_IMPLEMENTED(!(reduce && l.dst.is_complex() && l.reduce != IndexReduce::Add), name,
                              " on vkml: no ", l.reduce == IndexReduce::Mul ? "product" : "order",
                              " reduction of ", l.dst.scalar_type(), " values");
  // Complex tensors that accumulate, or take a fill value, go as two float lanes: the
  // real parts, then the imaginary ones (strides in floats, the value's part per lane);
  // so do complex128 moves (16-byte elements, which no kernel moves whole).
  const bool lanes = l.dst.is_complex() &&
                     (reduce || !l.src.defined() || l.dst.scalar_type() == at::kComplexDouble);
  const at::ScalarType element =
      !lanes ? l.dst.scalar_type()
             : (l.dst.scalar_type() == at::kComplexDouble ? at::kDouble : at::kFloat);
  const int64_t scale = lanes ? 2 : 1;
  auto scaled = [&](const Sizes& strides) {
    Sizes out = strides;
    for (int64_t& v : out) v *= scale;
    return out;
  };
  for (int lane = 0; lane < (lanes ? 2 : 1); ++lane) {
    vkml::ops::IndexArgs a;
    a.mode = l.mode;
    a.reduce = l.reduce;
    a.dtype = kernel_dtype(name, element, reduce);
    const uint64_t lane_offset = uint64_t(lane) * at::elementSize(element);
    a.dst = view_ref(l.dst, l.iter, scaled(l.dst_strides), a.dtype);
    a.dst.address += lane_offset;
    if (l.src.defined()) {
      a.src = view_ref(l.src, l.iter, scaled(l.src_strides), a.dtype);
      a.src.address += lane_offset;
    } else {
      a.src = view_ref(at::Tensor(), l.iter, zeros(l.iter.size()), a.dtype);
    }
    a.idx = view_ref(l.idx, l.iter, l.idx_strides, to_vkml(l.idx.scalar_type()));
    if (lanes || l.dst.is_floating_point()) {
      const c10::complex<double> v = l.value.toComplexDouble();
      const double part = lane ? v.imag() : v.real();
      // float64 moves as 8-byte integers: the value goes as its bits.
      a.value = a.dtype == vkml::DType::i64 && element == at::kDouble
                    ? vkml::Scalar::of_int(c10::bit_cast<int64_t>(part))
                    : vkml::Scalar::of(part);
    } else {
      a.value = vkml::Scalar::of_int(l.value.toLong());
    }
    a.dim_stride = l.dim_stride * scale;
    a.dim_size = l.dim_size;
    a.wrap_negative = l.wrap;
    a.skip = l.skip.has_value();
    a.skip_value = l.skip.value_or(0);
    // Atomic float sums depend on the order threads arrive in, and so does which of
    // several sources copied to one index lands last; under
    // torch.use_deterministic_algorithms the serial path gives the CPU's order.
    const bool collisions_race = reduce || (l.mode == IndexMode::Scatter && l.src.defined());
    a.serial = l.serial || (collisions_race && at::globalContext().deterministicAlgorithms());
    guarded([&] { vkml::ops::index_op(vkml_device(l.dst), a); });
  }
}

// --------------------------------------------------------------------------
// Along one dim: index_select, gather, scatter*, index_add/copy/fill
// --------------------------------------------------------------------------

// self viewed with at least one dim (0-dim tensors act as [1]).
struct DimView {
  Sizes sizes, strides;
  int64_t dim;
};
DimView dim_view(const at::Tensor& t, int64_t dim) {
  return {sizes_of(t), strides_of(t), at::maybe_wrap_dim(dim, t.dim())};
}

at::Tensor select_impl(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool check) {
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  at::Tensor shape = at::index_select(meta(self), dim, meta(index));
  at::Tensor out = at::empty(shape.sizes(), self.options());
  DimView v = dim_view(self, dim);
  int64_t n = index.numel();
  if (check) check_ranges({{index, v.sizes[v.dim], v.dim}}, false, Style::InSelf);
  Launch l;
  l.mode = IndexMode::Gather;
  l.iter = v.sizes;
  l.iter[v.dim] = n;
  l.dst = out;
  l.dst_strides = at::detail::defaultStrides(l.iter);
  l.src = self;
  l.src_strides = v.strides;
  l.src_strides[v.dim] = 0;
  l.idx = kernel_index(index);
  l.idx_strides = zeros(l.iter.size());
  l.idx_strides[v.dim] = l.idx.dim() == 0 ? 0 : l.idx.stride(0);
  l.dim_stride = v.strides[v.dim];
  l.dim_size = v.sizes[v.dim];
  launch("index_select", l);
  note_gathered(out, self, check && index_checks_enabled());
  return out;
}
at::Tensor vk_index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  return select_impl(self, dim, index, true);
}
at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             at::Tensor& out) {
  check_writes(out, {&self, &index});
  return write_out_exact(out, vk_index_select(self, dim, index));
}

at::Tensor vk_gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse) {
  at::Tensor shape = at::gather(meta(self), dim, meta(index), sparse);
  at::Tensor out = at::empty(shape.sizes(), self.options());
  if (index.numel() == 0) return out;
  DimView v = dim_view(self, dim);
  check_ranges({{index, v.sizes[v.dim], v.dim}}, false, Style::Bounds);
  Launch l;
  l.mode = IndexMode::Gather;
  l.iter = sizes_of(index);
  l.dst = out;
  l.dst_strides = at::detail::defaultStrides(l.iter);
  l.src = self;
  l.src_strides = v.strides;
  l.src_strides[v.dim] = 0;
  l.idx = index;
  l.idx_strides = strides_of(index);
  l.dim_stride = v.strides[v.dim];
  l.dim_size = v.sizes[v.dim];
  launch("gather", l);
  note_gathered(out, self, index_checks_enabled());
  return out;
}
at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse,
                       at::Tensor& out) {
  check_writes(out, {&self});
  return write_out_exact(out, vk_gather(self, dim, index, sparse));
}

// self[... index[p] ...] (reduce)= src[p] (or value), p over index's shape.
void scatter_into(const char* name, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                  const at::Tensor* src, const at::Scalar& value, IndexReduce reduce,
                  bool check = true) {
  if (index.numel() == 0) return;
  DimView v = dim_view(self, dim);
  if (check) check_ranges({{index, v.sizes[v.dim], v.dim}}, false, Style::Bounds);
  // float16 has no atomic form here; bfloat16 has one, but PyTorch's CPU scatter
  // kernels accumulate bfloat16 in float32 and round once, so it does the same.
  if (reduce != IndexReduce::Assign &&
      (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16)) {
    at::Tensor acc = self.to(at::kFloat);
    at::Tensor src_f = src ? src->to(at::kFloat) : at::Tensor();
    scatter_into(name, acc, dim, index, src ? &src_f : nullptr, value, reduce, false);
    self.copy_(acc);
    return;
  }
  Launch l;
  l.mode = IndexMode::Scatter;
  l.reduce = reduce;
  l.iter = sizes_of(index);
  l.dst = self;
  l.dst_strides = v.strides;
  l.dst_strides[v.dim] = 0;
  if (src) {
    l.src = src->scalar_type() == self.scalar_type() ? *src : src->to(self.scalar_type());
    l.src_strides = strides_of(l.src);
  }
  l.value = value;
  l.idx = index;
  l.idx_strides = strides_of(index);
  l.dim_stride = v.strides[v.dim];
  l.dim_size = v.sizes[v.dim];
  launch(name, l);
}

// A product of complex values does not split into the (re, im) lanes the kernels reduce
// complex tensors in (launch): those take the counted CPU route.
bool complex_product(const at::Tensor& self, IndexReduce op) {
  return self.is_complex() && op == IndexReduce::Mul;
}

IndexReduce legacy_reduce(std::string_view r) {
  if (r == "add") return IndexReduce::Add;
  if (r == "multiply") return IndexReduce::Mul;
  TORCH_CHECK(false, "reduce argument must be either add or multiply.");
  return IndexReduce::Assign;
}

at::Tensor& scatter_src_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Tensor& src) {
  check_writes(self, {&index, &src});
  meta(self).scatter_(dim, meta(index), meta(src));
  scatter_into("scatter", self, dim, index, &src, 0, IndexReduce::Assign);
  return self;
}
at::Tensor& scatter_value_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Scalar& value) {
  check_writes(self, {&index});
  meta(self).scatter_(dim, meta(index), value);
  check_scalar_fits(value, self.scalar_type());
  scatter_into("scatter", self, dim, index, nullptr, value, IndexReduce::Assign);
  return self;
}
at::Tensor& scatter_reduce_legacy_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce) {
  check_writes(self, {&index, &src});
  if (complex_product(self, legacy_reduce(reduce)))
    return cpu_route<at::_ops::scatter__reduce>(self, dim, index, src, reduce);
  meta(self).scatter_(dim, meta(index), meta(src), reduce);
  scatter_into("scatter", self, dim, index, &src, 0, legacy_reduce(reduce));
  return self;
}
at::Tensor& scatter_value_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                  const at::Scalar& value, c10::string_view reduce) {
  check_writes(self, {&index});
  if (complex_product(self, legacy_reduce(reduce)))
    return cpu_route<at::_ops::scatter__value_reduce>(self, dim, index, value, reduce);
  meta(self).scatter_(dim, meta(index), value, reduce);
  check_scalar_fits(value, self.scalar_type());
  scatter_into("scatter", self, dim, index, nullptr, value, legacy_reduce(reduce));
  return self;
}
at::Tensor& scatter_add_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Tensor& src) {
  check_writes(self, {&index, &src});
  meta(self).scatter_add_(dim, meta(index), meta(src));
  scatter_into("scatter_add", self, dim, index, &src, 0, IndexReduce::Add);
  return self;
}

at::Tensor scatter_src(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                       const at::Tensor& src) {
  at::Tensor out = self.clone();
  return scatter_src_(out, dim, index, src);
}
at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  return write_out_exact(out, scatter_src(self, dim, index, src));
}
at::Tensor scatter_value(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Scalar& value) {
  at::Tensor out = self.clone();
  return scatter_value_(out, dim, index, value);
}
at::Tensor& scatter_value_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Scalar& value, at::Tensor& out) {
  return write_out_exact(out, scatter_value(self, dim, index, value));
}
at::Tensor scatter_reduce_legacy(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                 const at::Tensor& src, c10::string_view reduce) {
  at::Tensor out = self.clone();
  return scatter_reduce_legacy_(out, dim, index, src, reduce);
}
at::Tensor& scatter_reduce_legacy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                      const at::Tensor& src, c10::string_view reduce,
                                      at::Tensor& out) {
  return write_out_exact(out, scatter_reduce_legacy(self, dim, index, src, reduce));
}
at::Tensor scatter_value_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                const at::Scalar& value, c10::string_view reduce) {
  at::Tensor out = self.clone();
  return scatter_value_reduce_(out, dim, index, value, reduce);
}
at::Tensor& scatter_value_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                     const at::Scalar& value, c10::string_view reduce,
                                     at::Tensor& out) {
  return write_out_exact(out, scatter_value_reduce(self, dim, index, value, reduce));
}
at::Tensor vk_scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& src) {
  at::Tensor out = self.clone();
  return scatter_add_(out, dim, index, src);
}
at::Tensor& scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  return write_out_exact(out, vk_scatter_add(self, dim, index, src));
}

// The kernel op and the identity of a scatter_reduce / index_reduce reduction.
std::pair<IndexReduce, at::Scalar> reduction_of(std::string_view reduce, const at::Tensor& self) {
  bool is_float = self.is_floating_point();
  at::ScalarType t = self.scalar_type();
  if (reduce == "sum" || reduce == "mean") return {IndexReduce::Add, 0};
  if (reduce == "prod") return {IndexReduce::Mul, 1};
  bool is_max = reduce == "amax";
  at::Scalar id;
  if (is_float) {
    id =
        is_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  } else if (t == at::kBool) {
    id = is_max ? 0 : 1;
  } else {  // the dtype's extremes: the kernels store the identity in self's dtype
    AT_DISPATCH_INTEGRAL_TYPES(t, "reduction_of", [&] {
      id = is_max ? int64_t(std::numeric_limits<scalar_t>::lowest())
                  : int64_t(std::numeric_limits<scalar_t>::max());
    });
  }
  return {is_max ? IndexReduce::Max : IndexReduce::Min, id};
}

// Mean after a sum: divide by the number of contributions (plus self's).
template <class Scatter>
void divide_by_count(const at::Tensor& self, bool include_self, Scatter&& scatter_ones) {
  at::Tensor count = include_self ? at::ones_like(self) : at::zeros_like(self);
  scatter_ones(count);
  count.masked_fill_(count == 0, 1);
  if (self.is_floating_point() || self.is_complex()) {  // complex: true division, as the CPU
    self.div_(count);
  } else {
    self.copy_(self.div(count, "floor"));
  }
}

// scatter_reduce.two: sum, prod, mean, amax, amin, with or without self's values.
at::Tensor& scatter_reduce_two_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                const at::Tensor& src, c10::string_view reduce, bool include_self) {
  check_writes(self, {&index, &src});
  if (complex_product(self, reduction_of(reduce, self).first))
    return cpu_route<at::_ops::scatter_reduce__two>(self, dim, index, src, reduce, include_self);
  meta(self).scatter_reduce_(dim, meta(index), meta(src), reduce, include_self);
  if (index.numel() == 0) return self;
  DimView v = dim_view(self, dim);
  check_ranges({{index, v.sizes[v.dim], v.dim}}, false, Style::Bounds);
  auto [op, identity] = reduction_of(reduce, self);
  if (!include_self)
    scatter_into("scatter_reduce", self, dim, index, nullptr, identity, IndexReduce::Assign, false);
  scatter_into("scatter_reduce", self, dim, index, &src, 0, op, false);
  if (reduce == "mean")
    divide_by_count(self, include_self, [&](const at::Tensor& count) {
      scatter_into("scatter_reduce", count, dim, index, nullptr, 1, IndexReduce::Add, false);
    });
  return self;
}
at::Tensor scatter_reduce_two(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Tensor& src, c10::string_view reduce, bool include_self) {
  at::Tensor out = self.clone();
  return scatter_reduce_two_(out, dim, index, src, reduce, include_self);
}
at::Tensor& scatter_reduce_two_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce,
                                   bool include_self, at::Tensor& out) {
  return write_out_exact(out, scatter_reduce_two(self, dim, index, src, reduce, include_self));
}

// self[..., index[j], ...] (reduce)= source[..., j, ...] (or value), j along dim.
void index_scatter(const char* name, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                   const at::Tensor* source, const at::Scalar& value, IndexReduce reduce, bool wrap,
                   Style style, bool check = true) {
  int64_t n = index.numel();
  if (n == 0) return;
  DimView v = dim_view(self, dim);
  if (check) check_ranges({{index, v.sizes[v.dim], v.dim}}, wrap, style);
  if (reduce != IndexReduce::Assign && self.scalar_type() == at::kHalf) {
    at::Tensor acc = self.to(at::kFloat);
    at::Tensor src_f = source ? source->to(at::kFloat) : at::Tensor();
    index_scatter(name, acc, dim, index, source ? &src_f : nullptr, value, reduce, wrap, style,
                  false);
    self.copy_(acc);
    return;
  }
  Launch l;
  l.mode = IndexMode::Scatter;
  l.reduce = reduce;
  l.iter = v.sizes;
  l.iter[v.dim] = n;
  l.dst = self;
  l.dst_strides = v.strides;
  l.dst_strides[v.dim] = 0;
  if (source) {
    l.src = source->scalar_type() == self.scalar_type() ? *source : source->to(self.scalar_type());
    l.src_strides = strides_of(l.src);
  }
  l.value = value;
  l.idx = kernel_index(index);
  l.idx_strides = zeros(l.iter.size());
  l.idx_strides[v.dim] = l.idx.dim() == 0 ? 0 : l.idx.stride(0);
  l.dim_stride = v.strides[v.dim];
  l.dim_size = v.sizes[v.dim];
  l.wrap = wrap;
  launch(name, l);
}

at::Tensor& index_add_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                       const at::Tensor& source, const at::Scalar& alpha) {
  check_writes(self, {&index, &source});
  meta(self).index_add_(dim, meta(index), meta(source), alpha);
  at::Tensor src = source;
  bool unit = (alpha.isIntegral(true) && alpha.toLong() == 1) ||
              (alpha.isFloatingPoint() && alpha.toDouble() == 1.0);
  bool bf16 = self.scalar_type() == at::kBFloat16;
  // For bfloat16 the CPU rounds alpha and then alpha * source to bfloat16.
  if (!unit)
    src = bf16 ? source.mul(double(float(c10::BFloat16(float(alpha.toDouble())))))
               : source.mul(alpha);
  // The source's dim sizes must line up with self's (0-dim sources act as [1]).
  if (bf16 && unit) {
    // PyTorch's CPU index_add sums bfloat16 in float32 and rounds once when alpha
    // is 1 and rounds every step otherwise (as the kernel does; its index_reduce,
    // index_put_ and put_ do too).
    at::Tensor acc = self.to(at::kFloat), src_f = src.to(at::kFloat);
    index_scatter("index_add", acc, dim, index, &src_f, 0, IndexReduce::Add, false, Style::Bounds);
    self.copy_(acc);
    return self;
  }
  index_scatter("index_add", self, dim, index, &src, 0, IndexReduce::Add, false, Style::Bounds);
  return self;
}
at::Tensor vk_index_add(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& source, const at::Scalar& alpha) {
  at::Tensor out = self.clone();
  return index_add_(out, dim, index, source, alpha);
}
at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, const at::Scalar& alpha, at::Tensor& out) {
  return write_out_exact(out, vk_index_add(self, dim, index, source, alpha));
}

at::Tensor& index_copy_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& source) {
  check_writes(self, {&index, &source});
  meta(self).index_copy_(dim, meta(index), meta(source));
  index_scatter("index_copy", self, dim, index, &source, 0, IndexReduce::Assign, false,
                Style::BoundsIdx);
  return self;
}
at::Tensor vk_index_copy(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Tensor& source) {
  at::Tensor out = self.clone();
  return index_copy_(out, dim, index, source);
}
at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Tensor& source, at::Tensor& out) {
  return write_out_exact(out, vk_index_copy(self, dim, index, source));
}

// index_reduce: prod, mean, amax, amin of source slices into self's slices.
at::Tensor& index_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, c10::string_view reduce, bool include_self) {
  check_writes(self, {&index, &source});
  if (complex_product(self, reduction_of(reduce, self).first))
    return cpu_route<at::_ops::index_reduce_>(self, dim, index, source, reduce, include_self);
  meta(self).index_reduce_(dim, meta(index), meta(source), reduce, include_self);
  if (index.numel() == 0) return self;
  DimView v = dim_view(self, dim);
  check_ranges({{index, v.sizes[v.dim], v.dim}}, false, Style::InSelf);
  auto [op, identity] = reduction_of(reduce, self);
  if (!include_self)
    index_scatter("index_reduce", self, dim, index, nullptr, identity, IndexReduce::Assign, false,
                  Style::InSelf, false);
  index_scatter("index_reduce", self, dim, index, &source, 0, op, false, Style::InSelf, false);
  if (reduce == "mean")
    divide_by_count(self, include_self, [&](const at::Tensor& count) {
      index_scatter("index_reduce", count, dim, index, nullptr, 1, IndexReduce::Add, false,
                    Style::InSelf, false);
    });
  return self;
}
at::Tensor vk_index_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Tensor& source, c10::string_view reduce, bool include_self) {
  at::Tensor out = self.clone();
  return index_reduce_(out, dim, index, source, reduce, include_self);
}
at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             const at::Tensor& source, c10::string_view reduce, bool include_self,
                             at::Tensor& out) {
  return write_out_exact(out, vk_index_reduce(self, dim, index, source, reduce, include_self));
}

void check_index_fill(const at::Tensor& self, const at::Tensor& index) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong,
                    "index_fill_(): Expected dtype int64 for index.");
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector");
}
at::Tensor& index_fill_scalar_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Scalar& value) {
  check_writes(self, {&index}, /*internal=*/false);
  check_index_fill(self, index);
  at::maybe_wrap_dim(dim, self.dim());
  check_scalar_fits(value, self.scalar_type());
  index_scatter("index_fill", self, dim, index, nullptr, value, IndexReduce::Assign, true,
                Style::BoundsIdx);
  return self;
}
at::Tensor& index_fill_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Tensor& value) {
  check_writes(self, {&index}, /*internal=*/false);
  TORCH_CHECK(value.dim() == 0,
              "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  check_index_fill(self, index);
  if (value.device().is_cpu()) return index_fill_scalar_(self, dim, index, value.item());
  int64_t n = index.numel();
  if (n == 0) return self;
  // A device value is read by the kernel as a source with all strides 0: no sync.
  DimView v = dim_view(self, dim);
  Sizes iter = v.sizes;
  iter[v.dim] = n;
  at::Tensor src = value.to(self.scalar_type()).reshape({1}).expand(iter);
  index_scatter("index_fill", self, dim, index, &src, 0, IndexReduce::Assign, true,
                Style::BoundsIdx);
  return self;
}

// where() does the work; the value becomes a 0-dim device tensor of self's dtype.
void masked_fill_impl(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  meta(self).masked_fill_(meta(mask), at::empty({}, value.options().device(at::kMeta)));
  if (self.numel() == 0) return;
  at::Tensor m = mask.device() == self.device() ? mask : mask.to(self.device());
  self.copy_(at::where(m, value, self));
}
at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0,
              "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  at::Tensor v = value.device().is_cpu() ? at::scalar_tensor(value.item(), self.options())
                                         : value.to(self.scalar_type());
  masked_fill_impl(self, mask, v);
  return self;
}
at::Tensor& masked_fill_scalar_(at::Tensor& self, const at::Tensor& mask, const at::Scalar& value) {
  masked_fill_impl(self, mask, at::scalar_tensor(value, self.options()));
  return self;
}

at::Tensor vk_take(const at::Tensor& self, const at::Tensor& index) {
  TORCH_CHECK(index.scalar_type() == at::kLong,
              "take(): Expected a long tensor for index, but got ", index.scalar_type());
  at::Tensor out = at::empty(index.sizes(), self.options());
  if (index.numel() == 0) return out;
  TORCH_CHECK_INDEX(self.numel() > 0, "take(): tried to take from an empty tensor");
  check_ranges({{index, self.numel(), 0}}, true, Style::Take);
  at::Tensor flat = self.contiguous();
  Launch l;
  l.mode = IndexMode::Gather;
  l.iter = sizes_of(index);
  l.dst = out;
  l.dst_strides = at::detail::defaultStrides(l.iter);
  l.src = flat;
  l.src_strides = zeros(l.iter.size());
  l.idx = index;
  l.idx_strides = strides_of(index);
  l.dim_stride = 1;
  l.dim_size = self.numel();
  l.wrap = true;
  launch("take", l);
  note_gathered(out, flat, index_checks_enabled());
  return out;
}
// put_: self.flatten()[index] (+)= source, on a contiguous copy when self is not.
at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source,
                 bool accumulate) {
  check_writes(self, {&index, &source});
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong,
                    "put_(): Expected a long tensor for index, but got ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "put_(): self and source expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(index.numel() == source.numel(),
              "put_(): Expected source and index to have the "
              "same number of elements, but got source.numel() = ",
              source.numel(), ", index.numel() = ", index.numel());
  int64_t n = index.numel();
  if (n == 0) return self;
  TORCH_CHECK_INDEX(self.numel() > 0, "put_(): Tried to put elements into an empty tensor");
  check_ranges({{index, self.numel(), 0}}, true, Style::Take);
  bool half_acc = accumulate && self.scalar_type() == at::kHalf;
  at::Tensor work = half_acc ? self.to(at::kFloat).contiguous()
                             : (self.is_contiguous() ? self : self.contiguous());
  at::Tensor src = source.reshape({n}).to(work.scalar_type());
  at::Tensor idx = index.reshape({n});
  Launch l;
  l.mode = IndexMode::Scatter;
  l.reduce = accumulate ? IndexReduce::Add : IndexReduce::Assign;
  l.iter = {n};
  l.dst = work;
  l.dst_strides = {0};
  l.src = src;
  l.src_strides = {src.stride(0)};
  l.idx = idx;
  l.idx_strides = {idx.stride(0)};
  l.dim_stride = 1;
  l.dim_size = self.numel();
  l.wrap = true;
  launch("put_", l);
  if (!work.is_same(self)) self.copy_(work);
  return self;
}

at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  check_writes(out, {&self, &index});
  return write_out_exact(out, vk_take(self, index));
}

// --------------------------------------------------------------------------
// Advanced indexing: index.Tensor, index_put_
// --------------------------------------------------------------------------

// What PyTorch's AdvancedIndex holds: self restrided so that the indexed dims
// are replaced by the broadcast index shape (stride 0), and the indices viewed
// in that shape. The kernel gets one index: the sum of index * stride over the
// indexed dims, computed here with elementwise ops (negatives wrapped).
struct Advanced {
  at::Tensor src;     // restrided self
  at::Tensor offset;  // int64, broadcast to src's shape, or a single index (below)
  int64_t dim_stride = 1, dim_size = 0;
  bool wrap = false;
};

Advanced advanced_index(const char* name, at::Tensor self,
                        const c10::List<std::optional<at::Tensor>>& orig) {
  TORCH_CHECK_INDEX(orig.size() <= size_t(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", orig.size(), ")");
  at::native::checkIndexTensorTypes(orig, /*allow_int=*/true);
  // Range checks on the indices as given: CPU ones where they are (no sync),
  // device ones in one transfer; indices made from masks are valid by construction.
  std::vector<RangeCheck> checks;
  int64_t pos = 0;
  for (size_t k = 0; k < orig.size(); ++k) {
    std::optional<at::Tensor> o = orig.get(k);
    if (!o || !o->defined()) {
      ++pos;
    } else if (o->scalar_type() == at::kBool || o->scalar_type() == at::kByte) {
      pos += o->dim();
    } else {
      // Any index into an empty dimension is out of bounds, whatever its value: raised
      // before the value checks are queued (ATen's AdvancedIndex raises it first too).
      TORCH_CHECK_INDEX(pos >= self.dim() || self.size(pos) > 0 || o->numel() == 0,
                        "index is out of bounds for dimension with size 0");
      if (pos < self.dim()) checks.push_back({*o, self.size(pos), pos});
      ++pos;
    }
  }
  check_ranges(checks, true, Style::BoundsIdx);
  auto indices = at::native::expandTensors(self, orig, /*ensure_same_device=*/true);
  try {
    indices = at::expand_outplace(indices);
  } catch (std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together");
  }
  while (indices.size() < size_t(self.dim())) indices.emplace_back();
  if (!at::native::hasContiguousSubspace(indices))
    std::tie(self, indices) = at::native::transposeToFront(self, indices);

  int64_t before = 0, after = 0;
  Sizes index_shape;
  std::vector<int64_t> isizes, istrides;
  std::vector<at::Tensor> used;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (indices[d].defined()) {
      isizes.push_back(self.size(int64_t(d)));
      istrides.push_back(self.stride(int64_t(d)));
      used.push_back(indices[d]);
      index_shape = indices[d].sizes().vec();
    } else if (used.empty()) {
      ++before;
    } else {
      ++after;
    }
  }
  int64_t nidx = int64_t(used.size());
  Sizes shape(self.sizes().begin(), self.sizes().begin() + before);
  Sizes strides(self.strides().begin(), self.strides().begin() + before);
  for (int64_t s : index_shape) {
    shape.push_back(s);
    strides.push_back(0);
  }
  for (int64_t d = before + nidx; d < self.dim(); ++d) {
    shape.push_back(self.size(d));
    strides.push_back(self.stride(d));
  }
  Advanced a;
  a.src = self.as_strided(shape, strides);
  at::Tensor offset;
  if (nidx == 1) {
    offset = kernel_index(used[0]);
    a.dim_stride = istrides[0];
    a.dim_size = isizes[0];
    a.wrap = true;
  } else {
    for (int64_t k = 0; k < nidx; ++k) {
      at::Tensor i = used[k].to(at::kLong);
      i = at::where(i < 0, i + isizes[k], i);
      at::Tensor term = istrides[k] == 1 ? i : i * istrides[k];
      offset = offset.defined() ? offset + term : term;
    }
    int64_t extent = 1;
    for (int64_t k = 0; k < nidx; ++k) extent += (isizes[k] - 1) * istrides[k];
    a.dim_stride = 1;
    a.dim_size = extent;
  }
  // View the index in the restrided shape: dims before and after are broadcast.
  Sizes view_shape(size_t(before), 1);
  for (int64_t s : index_shape) view_shape.push_back(s);
  for (int64_t k = 0; k < after; ++k) view_shape.push_back(1);
  a.offset = offset.reshape(view_shape).expand(shape);
  return a;
}

at::Tensor index_tensor(const at::Tensor& self,
                        const c10::List<std::optional<at::Tensor>>& indices) {
  Advanced a = advanced_index("index", self, indices);
  at::Tensor out = at::empty(a.src.sizes(), self.options());
  if (out.numel() == 0) return out;
  Launch l;
  l.mode = IndexMode::Gather;
  l.iter = sizes_of(out);
  l.dst = out;
  l.dst_strides = strides_of(out);
  l.src = a.src;
  l.src_strides = strides_of(a.src);
  l.idx = a.offset;
  l.idx_strides = strides_of(a.offset);
  l.dim_stride = a.dim_stride;
  l.dim_size = a.dim_size;
  l.wrap = a.wrap;
  launch("index", l);
  note_gathered(out, a.src, index_checks_enabled());
  return out;
}
at::Tensor& index_tensor_out(const at::Tensor& self,
                             const c10::List<std::optional<at::Tensor>>& indices, at::Tensor& out) {
  return write_out(out, index_tensor(self, indices));
}

at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& values, bool accumulate, bool unsafe) {
  check_writes(self, {&values}, /*internal=*/false);
  for (const std::optional<at::Tensor>& idx : indices) {
    if (idx.has_value()) check_writes(self, {&*idx}, /*internal=*/false);
  }
  TORCH_CHECK_INDEX(indices.size() <= size_t(self.dim()),
                    "too many indices for tensor of dimension ", self.dim(), " (got ",
                    indices.size(), ")");
  auto check_dtype = [&] {
    TORCH_CHECK(values.scalar_type() == self.scalar_type(),
                "Index put requires the source and destination dtypes match, got ",
                self.scalar_type(), " for the destination and ", values.scalar_type(),
                " for the source.");
  };
  if (accumulate && self.scalar_type() == at::kHalf) {
    check_dtype();
    at::Tensor acc = self.to(at::kFloat);
    index_put_impl_(acc, indices, values.to(at::kFloat), true, unsafe);
    self.copy_(acc);
    return self;
  }
  // The CPU's order: the shape, then the dtype.
  Advanced a = advanced_index("index_put_", self, indices);
  TORCH_CHECK(at::is_expandable_to(values.sizes(), a.src.sizes()),
              "shape mismatch: value tensor of shape ", values.sizes(),
              " cannot be broadcast to indexing result of shape ", a.src.sizes());
  check_dtype();
  if (a.src.numel() == 0) return self;
  at::Tensor v = values.device() == self.device() ? values : values.to(self.device());
  v = v.expand(a.src.sizes());
  Launch l;
  l.mode = IndexMode::Scatter;
  l.reduce = accumulate ? IndexReduce::Add : IndexReduce::Assign;
  l.iter = sizes_of(a.src);
  l.dst = self;  // addressed through the restrided view's strides (same data pointer)
  l.dst_strides = strides_of(a.src);
  l.src = v;
  l.src_strides = strides_of(v);
  l.idx = a.offset;
  l.idx_strides = strides_of(a.offset);
  l.dim_stride = a.dim_stride;
  l.dim_size = a.dim_size;
  l.wrap = a.wrap;
  launch("index_put_", l);
  return self;
}

// --------------------------------------------------------------------------
// embedding backward
// --------------------------------------------------------------------------

at::Tensor embedding_dense_backward(const at::Tensor& grad, const at::Tensor& indices,
                                    int64_t num_weights, int64_t padding_idx,
                                    bool scale_grad_by_freq) {
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
              "embedding_backward: Expected indices to have type Long or Int but got ",
              indices.scalar_type());
  int64_t n = indices.numel();
  int64_t d = grad.dim() > 0 ? grad.size(-1) : 1;
  // 16-bit gradients accumulate in fp32: a row's sum may gather many rows.
  bool half = grad.scalar_type() == at::kHalf || grad.scalar_type() == at::kBFloat16;
  at::Tensor gw =
      at::zeros({num_weights, d}, grad.options().dtype(half ? at::kFloat : grad.scalar_type()));
  if (n == 0 || d == 0) return half ? gw.to(grad.scalar_type()) : gw;
  at::Tensor idx = kernel_index(indices).reshape({n});
  at::Tensor g = grad.reshape({n, d});
  if (half) g = g.to(at::kFloat);
  Launch l;
  l.mode = IndexMode::Scatter;
  l.reduce = IndexReduce::Add;
  l.iter = {n, d};
  l.dst = gw;
  l.dst_strides = {0, 1};
  l.src = g;
  l.src_strides = strides_of(g);
  l.idx = idx;
  l.idx_strides = {idx.stride(0), 0};
  l.dim_stride = d;
  l.dim_size = num_weights;
  if (padding_idx >= 0) l.skip = padding_idx;
  launch("embedding_dense_backward", l);
  if (scale_grad_by_freq) {
    at::Tensor count = at::zeros({num_weights}, grad.options().dtype(at::kInt));
    Launch c;
    c.mode = IndexMode::Scatter;
    c.reduce = IndexReduce::Add;
    c.iter = {n};
    c.dst = count;
    c.dst_strides = {0};
    c.value = 1;
    c.idx = idx;
    c.idx_strides = {idx.stride(0)};
    c.dim_stride = 1;
    c.dim_size = num_weights;
    launch("embedding_dense_backward", c);
    gw.div_(count.clamp_min(1).to(gw.scalar_type()).unsqueeze(1));
  }
  return half ? gw.to(grad.scalar_type()) : gw;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index_select", TORCH_FN(vk_index_select));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("gather", TORCH_FN(vk_gather));
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("scatter.src", TORCH_FN(scatter_src));
  m.impl("scatter_.src", TORCH_FN(scatter_src_));
  m.impl("scatter.src_out", TORCH_FN(scatter_src_out));
  m.impl("scatter.value", TORCH_FN(scatter_value));
  m.impl("scatter_.value", TORCH_FN(scatter_value_));
  m.impl("scatter.value_out", TORCH_FN(scatter_value_out));
  m.impl("scatter.reduce", TORCH_FN(scatter_reduce_legacy));
  m.impl("scatter_.reduce", TORCH_FN(scatter_reduce_legacy_));
  m.impl("scatter.reduce_out", TORCH_FN(scatter_reduce_legacy_out));
  m.impl("scatter.value_reduce", TORCH_FN(scatter_value_reduce));
  m.impl("scatter_.value_reduce", TORCH_FN(scatter_value_reduce_));
  m.impl("scatter.value_reduce_out", TORCH_FN(scatter_value_reduce_out));
  m.impl("scatter_add", TORCH_FN(vk_scatter_add));
  m.impl("scatter_add_", TORCH_FN(scatter_add_));
  m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
  m.impl("scatter_reduce.two", TORCH_FN(scatter_reduce_two));
  m.impl("scatter_reduce_.two", TORCH_FN(scatter_reduce_two_));
  m.impl("scatter_reduce.two_out", TORCH_FN(scatter_reduce_two_out));
  m.impl("index_add", TORCH_FN(vk_index_add));
  m.impl("index_add_", TORCH_FN(index_add_));
  m.impl("index_add.out", TORCH_FN(index_add_out));
  m.impl("index_copy", TORCH_FN(vk_index_copy));
  m.impl("index_copy_", TORCH_FN(index_copy_));
  m.impl("index_copy.out", TORCH_FN(index_copy_out));
  m.impl("index_reduce", TORCH_FN(vk_index_reduce));
  m.impl("index_reduce_", TORCH_FN(index_reduce_));
  m.impl("index_reduce.out", TORCH_FN(index_reduce_out));
  m.impl("index_fill_.int_Scalar", TORCH_FN(index_fill_scalar_));
  m.impl("index_fill_.int_Tensor", TORCH_FN(index_fill_tensor_));
  m.impl("masked_fill_.Scalar", TORCH_FN(masked_fill_scalar_));
  m.impl("masked_fill_.Tensor", TORCH_FN(masked_fill_tensor_));
  m.impl("take", TORCH_FN(vk_take));
  m.impl("put_", TORCH_FN(put_));
  m.impl("take.out", TORCH_FN(take_out));
  m.impl("index.Tensor", TORCH_FN(index_tensor));
  m.impl("index.Tensor_out", TORCH_FN(index_tensor_out));
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl_));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
}

}  // namespace vkml_aten
