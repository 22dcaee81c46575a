// Sorting and selection: sort (always stable), topk, kthvalue, median, nanmedian,
// unique, randperm; built on one row-sort kernel over the last dim of a permuted
// contiguous copy.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <limits>
#include <tuple>

#include "fallback.h"
#include "op_helpers.h"
#include "sort_keys.h"
#include "value_bounds.h"
#include "vkml/ops/sort.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using TensorPair = std::tuple<at::Tensor, at::Tensor>;
using TensorRefPair = std::tuple<at::Tensor&, at::Tensor&>;

// Keys are sorted as float32 (floating dtypes: exact for float16 and bfloat16) or int64
// (integers, and float64 through f64_keys).
at::ScalarType sort_key_type(const char* op, at::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kBFloat16 ||
                                  t == at::kDouble || t == at::kLong || t == at::kInt ||
                                  t == at::kShort || t == at::kChar || t == at::kByte ||
                                  t == at::kBool,
                              op, " on vkml does not support ", t);
  return at::isFloatingType(t) && t != at::kDouble ? at::kFloat : at::kLong;
}

// Sorted keys (float32 or int64) and int64 indices, with `dim` moved last.
TensorPair sort_keys_last(const char* op, const at::Tensor& self, int64_t dim, bool descending) {
  at::ScalarType kt = sort_key_type(op, self.scalar_type());
  at::Tensor x = self.dim() == 0 ? self.reshape({1}) : self.movedim(dim, -1);
  int64_t n = x.dim() == 0 ? 1 : x.size(-1);
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  TORCH_CHECK(n < (int64_t(1) << 31), op, ": rows of 2^31 or more elements are not supported");
  at::Tensor keys;
  if (self.scalar_type() == at::kDouble) {
    keys = f64_keys(x);
  } else {
    keys = at::empty(x.sizes(), x.options().dtype(kt));
    keys.copy_(x);
  }
  at::Tensor out_keys = at::empty(x.sizes(), keys.options());
  at::Tensor out_idx = at::empty(x.sizes(), keys.options().dtype(at::kLong));
  if (x.numel() > 0)
    guarded([&] {
      vkml::ops::sort_rows(vkml_device(keys), to_vkml(kt), addr(keys), addr(out_keys),
                           addr(out_idx), rows, n, descending);
    });
  note_values(out_idx, 0, n - 1);  // positions in a row (topk, randperm, ... copy them on)
  return {out_keys, out_idx};
}

// Sorted values (self's dtype) and int64 indices, with `dim` moved last.
TensorPair sort_last(const char* op, const at::Tensor& self, int64_t dim, bool descending) {
  auto [keys, idx] = sort_keys_last(op, self, dim, descending);
  if (self.scalar_type() == at::kDouble) {  // the values themselves, -0.0 and NaNs as they were
    at::Tensor x = self.dim() == 0 ? self.reshape({1}) : self.movedim(dim, -1);
    return {x.gather(-1, idx), idx};
  }
  at::Tensor values = keys.scalar_type() == self.scalar_type() ? keys : keys.to(self.scalar_type());
  return {values, idx};
}

// Back to self's layout: the last dim returns to `dim` (a view).
at::Tensor restore(const at::Tensor& t, const at::Tensor& self, int64_t dim) {
  return self.dim() == 0 ? t.reshape({}) : t.movedim(-1, dim);
}

void no_bool(const char* op, const at::Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool, "\"", op,
                              "\" not implemented for 'Bool'");
}

void check_out_dtypes(const char* op, const at::Tensor& self, const at::Tensor& values,
                      const at::Tensor& indices) {
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), op, ": expected values dtype ",
              self.scalar_type(), " but got ", values.scalar_type());
  TORCH_CHECK(indices.scalar_type() == at::kLong, op, ": expected indices dtype int64 but got ",
              indices.scalar_type());
}

TensorRefPair write_pair(const at::Tensor& v, const at::Tensor& i, at::Tensor& values,
                         at::Tensor& indices) {
  check_out_device(values);
  check_out_device(indices);
  write_out(values, v);
  write_out(indices, i);
  return {values, indices};
}

// ----------------------------------------------------------------- sort

TensorRefPair vk_sort_stable_out(const at::Tensor& self, std::optional<bool> /*stable*/,
                                 int64_t dim, bool descending, at::Tensor& values,
                                 at::Tensor& indices) {
  int64_t d = at::maybe_wrap_dim(dim, self.dim());
  check_out_dtypes("sort", self, values, indices);
  auto [v, i] = sort_last("sort", self, d, descending);
  return write_pair(restore(v, self, d), restore(i, self, d), values, indices);
}

TensorPair vk_sort_stable(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                          bool descending) {
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  vk_sort_stable_out(self, stable, dim, descending, values, indices);
  return {values, indices};
}

TensorRefPair vk_sort_out(const at::Tensor& self, int64_t dim, bool descending, at::Tensor& values,
                          at::Tensor& indices) {
  return vk_sort_stable_out(self, false, dim, descending, values, indices);
}

TensorPair vk_sort(const at::Tensor& self, int64_t dim, bool descending) {
  return vk_sort_stable(self, false, dim, descending);
}

// ----------------------------------------------------------------- topk

TensorRefPair vk_topk_out(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
                          bool /*sorted*/, at::Tensor& values, at::Tensor& indices) {
  int64_t d = at::maybe_wrap_dim(dim, self.dim());
  int64_t n = self.dim() == 0 ? 1 : self.size(d);
  TORCH_CHECK(k >= 0 && k <= n, "selected index k out of range");
  TORCH_CHECK(self.scalar_type() != at::kBool, "topk does not support bool dtypes on vkml");
  check_out_dtypes("topk", self, values, indices);
  auto [v, i] = sort_last("topk", self, d, largest);
  return write_pair(restore(v.narrow(-1, 0, k), self, d), restore(i.narrow(-1, 0, k), self, d),
                    values, indices);
}

TensorPair vk_topk(const at::Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  vk_topk_out(self, k, dim, largest, sorted, values, indices);
  return {values, indices};
}

// ----------------------------------------------- kthvalue and median

// The element at sorted position pos of each row (keepdim: dim stays, size 1).
TensorRefPair select_out(const at::Tensor& self, const at::Tensor& v, const at::Tensor& i,
                         int64_t pos, int64_t dim, bool keepdim, at::Tensor& values,
                         at::Tensor& indices) {
  at::Tensor sv = v.select(-1, pos), si = i.select(-1, pos);
  if (self.dim() > 0 && keepdim) {
    sv = sv.unsqueeze(dim);
    si = si.unsqueeze(dim);
  } else if (self.dim() == 0) {
    sv = sv.reshape({});
    si = si.reshape({});
  }
  return write_pair(sv, si, values, indices);
}

TensorRefPair vk_kthvalue_out(const at::Tensor& self, int64_t k, int64_t dim, bool keepdim,
                              at::Tensor& values, at::Tensor& indices) {
  int64_t d = at::maybe_wrap_dim(dim, self.dim());
  int64_t n = self.dim() == 0 ? 1 : self.size(d);
  TORCH_CHECK_INDEX(n > 0, "kthvalue(): Expected reduction dim ", d, " to have non-zero size.");
  TORCH_CHECK(k >= 1 && k <= n, "kthvalue(): selected number k out of range for dimension ", d);
  no_bool("kthvalue", self);
  check_out_dtypes("kthvalue", self, values, indices);
  auto [v, i] = sort_last("kthvalue", self, d, false);
  return select_out(self, v, i, k - 1, d, keepdim, values, indices);
}

TensorPair vk_kthvalue(const at::Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  vk_kthvalue_out(self, k, dim, keepdim, values, indices);
  return {values, indices};
}

// The lower median; a row with NaN gives its first NaN. Sorting descending puts
// the NaNs first, in input order, and the lower median at position n / 2.
TensorPair median_last(const at::Tensor& self, int64_t d) {
  no_bool("median", self);
  auto [v, i] = sort_last("median", self, d, true);
  int64_t n = v.size(-1);
  at::Tensor mv = v.select(-1, n / 2), mi = i.select(-1, n / 2);
  if (at::isFloatingType(self.scalar_type())) {
    at::Tensor first = v.select(-1, 0);
    at::Tensor nan = first.isnan();
    mv = at::where(nan, first, mv);
    mi = at::where(nan, i.select(-1, 0), mi);
  }
  return {mv, mi};
}

// median / nanmedian along a dim: `pick` reduces the wrapped dim d, this puts
// the dim back (keepdim) or squeezes a 0-dim input's result.
template <class Pick>
TensorRefPair median_dim_out(const char* name, Pick pick, const at::Tensor& self, int64_t dim,
                             bool keepdim, at::Tensor& values, at::Tensor& indices) {
  int64_t d = at::maybe_wrap_dim(dim, self.dim());
  check_out_dtypes(name, self, values, indices);
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) > 0, name, "(): Expected reduction dim ", d,
                    " to have non-zero size.");
  auto [mv, mi] = pick(self, d);
  if (self.dim() > 0 && keepdim) {
    mv = mv.unsqueeze(d);
    mi = mi.unsqueeze(d);
  } else if (self.dim() == 0) {
    mv = mv.reshape({});
    mi = mi.reshape({});
  }
  return write_pair(mv, mi, values, indices);
}

TensorRefPair vk_median_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                at::Tensor& values, at::Tensor& indices) {
  return median_dim_out("median", median_last, self, dim, keepdim, values, indices);
}

// The functional form of median_dim_out.
template <class Pick>
TensorPair median_dim(const char* name, Pick pick, const at::Tensor& self, int64_t dim,
                      bool keepdim) {
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  median_dim_out(name, pick, self, dim, keepdim, values, indices);
  return {values, indices};
}

TensorPair vk_median_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return median_dim("median", median_last, self, dim, keepdim);
}

// The median of nothing: NaN, converted to self's dtype as the CPU does (for
// integers that conversion is the CPU's, so the value matches it).
at::Tensor empty_median(const at::Tensor& self) {
  sort_key_type("median", self.scalar_type());
  at::Tensor nan = at::full({}, std::numeric_limits<double>::quiet_NaN(), at::kDouble);
  return nan.to(self.scalar_type()).to(self.device());
}

// The median (or nanmedian) of all of self.
template <class Pick>
at::Tensor median_all(const char* name, Pick pick, const at::Tensor& self) {
  if (self.numel() == 0) {
    no_bool(name, self);
    return empty_median(self);
  }
  return std::get<0>(pick(self.reshape({-1}), 0)).reshape({});
}

at::Tensor vk_median(const at::Tensor& self) { return median_all("median", median_last, self); }

// The lower median of the non-NaN values (NaN only for an all-NaN row). Sorting
// ascending puts the NaNs last; the position (count - 1) / 2 differs per row, so it
// is gathered (no arithmetic on the value: -0.0 and subnormals come back as they are).
TensorPair nanmedian_last(const at::Tensor& self, int64_t d) {
  no_bool("nanmedian", self);
  if (!at::isFloatingType(self.scalar_type())) return median_last(self, d);
  auto [v, i] = sort_last("nanmedian", self, d, false);
  int64_t n = v.size(-1);
  at::Tensor count = v.isnan().logical_not().sum(-1, true);
  at::Tensor pos = (count - 1).clamp_min(0).div(2, "floor").clamp_max(n - 1);
  return {v.gather(-1, pos).squeeze(-1), i.gather(-1, pos).squeeze(-1)};
}

TensorRefPair vk_nanmedian_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                   at::Tensor& values, at::Tensor& indices) {
  return median_dim_out("nanmedian", nanmedian_last, self, dim, keepdim, values, indices);
}

TensorPair vk_nanmedian_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return median_dim("nanmedian", nanmedian_last, self, dim, keepdim);
}

at::Tensor vk_nanmedian(const at::Tensor& self) {
  return median_all("nanmedian", nanmedian_last, self);
}

// --------------------------------------------------------------- unique

// The groups of equal neighbours in `keys` (the flattened input in key dtype `kt`, in
// the order `perm` gives): the values, each input's group (inverse, if asked) and each
// group's size (counts, if asked). The group count is read back: it sizes the outputs.
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_groups_of(
    const at::Tensor& self, const at::Tensor& keys, const at::Tensor& perm, at::ScalarType kt,
    at::Tensor inverse, bool return_inverse, bool return_counts) {
  const int64_t n = keys.numel();
  const at::TensorOptions lopt = self.options().dtype(at::kLong);
  at::Tensor ids = at::empty({n}, self.options().dtype(at::kInt));
  guarded(
      [&] { vkml::ops::unique_groups(vkml_device(keys), to_vkml(kt), addr(keys), addr(ids), n); });
  int64_t count = ids.select(0, n - 1).item<int64_t>();
  at::Tensor uniq = at::empty({count}, keys.options());
  at::Tensor start = at::empty({count}, lopt);
  at::Tensor counts = at::empty({return_counts ? count : 0}, lopt);
  guarded([&] {
    vkml::ops::unique_write(vkml_device(keys), to_vkml(kt), addr(keys), addr(perm), addr(ids), n,
                            count, addr(uniq), addr(start), return_inverse ? addr(inverse) : 0,
                            return_counts ? addr(counts) : 0);
  });
  at::Tensor out = kt == self.scalar_type()            ? uniq
                   : self.scalar_type() == at::kDouble ? f64_from_keys(uniq)
                                                       : uniq.to(self.scalar_type());
  return {out, inverse, counts};
}

// Sorted unique values of the flattened input; the group count is read back once
// (the output shape depends on it).
std::tuple<at::Tensor, at::Tensor, at::Tensor> vk_unique2(const at::Tensor& self, bool /*sorted*/,
                                                          bool return_inverse, bool return_counts) {
  at::ScalarType kt = sort_key_type("unique", self.scalar_type());
  at::TensorOptions lopt = self.options().dtype(at::kLong);
  int64_t n = self.numel();
  at::Tensor inverse = at::empty(return_inverse ? self.sizes() : at::IntArrayRef{0}, lopt);
  if (n == 0) return {at::empty({0}, self.options()), inverse, at::empty({0}, lopt)};
  auto [keys, perm] = sort_keys_last("unique", self.reshape({-1}), 0, false);
  return unique_groups_of(self, keys, perm, kt, inverse, return_inverse, return_counts);
}

// _unique (index_fill's backward, older callers): _unique2 without counts.
TensorPair vk_unique(const at::Tensor& self, bool sorted, bool return_inverse) {
  auto [values, inverse, counts] = vk_unique2(self, sorted, return_inverse, false);
  return {values, inverse};
}

// Runs of equal neighbours of the flattened input (no sort: the identity
// permutation maps positions back for the inverse).
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive_flat(const at::Tensor& self,
                                                                       bool return_inverse,
                                                                       bool return_counts) {
  at::ScalarType kt = sort_key_type("unique_consecutive", self.scalar_type());
  at::TensorOptions lopt = self.options().dtype(at::kLong);
  int64_t n = self.numel();
  at::Tensor inverse = at::empty(return_inverse ? self.sizes() : at::IntArrayRef{0}, lopt);
  if (n == 0) return {at::empty({0}, self.options()), inverse, at::empty({0}, lopt)};
  at::Tensor keys;
  if (self.scalar_type() == at::kDouble) {
    keys = f64_keys(self.reshape({-1}));
  } else {
    keys = at::empty({n}, self.options().dtype(kt));
    keys.copy_(self.reshape({-1}));
  }
  at::Tensor perm = at::arange(n, lopt);
  return unique_groups_of(self, keys, perm, kt, inverse, return_inverse, return_counts);
}

// Unique slices along `dim` (torch.unique(x, dim=d), unique_consecutive(x, dim=d)): the
// slices as rows, put in lexicographic order (sorted) by one stable sort per column from
// the last, then grouped where a row differs from the one before. The group count is
// read back once (it sizes the outputs), as on CUDA.
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_slices(const char* op, const at::Tensor& self,
                                                             int64_t dim, bool sorted,
                                                             bool return_inverse,
                                                             bool return_counts) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  const at::TensorOptions lopt = self.options().dtype(at::kLong);
  const int64_t n = self.size(dim);
  if (self.numel() == 0) {
    TORCH_CHECK(n == 0, "There are 0 sized dimensions, and they aren't selected, so ", op,
                " cannot be applied");
    return {self.clone(), at::empty({0}, lopt), at::empty({0}, lopt)};
  }
  at::Tensor moved = self.movedim(dim, 0);
  at::Tensor rows = moved.reshape({n, -1});
  // Bool rows compare and sort as bytes; -0.0 as 0.0 (the sort's keys tell them apart,
  // which would part equal rows).
  if (rows.scalar_type() == at::kBool) rows = rows.to(at::kByte);
  if (rows.is_floating_point()) rows = rows + 0.0;
  at::Tensor perm = at::arange(n, lopt);
  if (sorted) {
    for (int64_t c = rows.size(1) - 1; c >= 0; --c) {
      at::Tensor order = std::get<1>(rows.select(1, c).index_select(0, perm).sort(true, 0, false));
      perm = perm.index_select(0, order);
    }
    rows = rows.index_select(0, perm);
  }
  // A group starts at row 0 and wherever a row differs from the one before.
  at::Tensor starts_mask = at::ones({n}, self.options().dtype(at::kBool));
  if (n > 1)
    starts_mask.narrow(0, 1, n - 1)
        .copy_(rows.narrow(0, 1, n - 1).ne(rows.narrow(0, 0, n - 1)).any(1));
  at::Tensor starts = starts_mask.nonzero().squeeze(1);  // the one read-back
  const int64_t count = starts.size(0);
  at::Tensor values = moved.index_select(0, perm.index_select(0, starts)).movedim(0, dim);
  at::Tensor inverse = at::empty({return_inverse ? n : 0}, lopt);
  if (return_inverse) inverse.index_copy_(0, perm, starts_mask.to(at::kLong).cumsum(0).sub_(1));
  at::Tensor counts = at::empty({return_counts ? count : 0}, lopt);
  if (return_counts)
    counts.copy_(at::cat({starts.narrow(0, 1, count - 1), at::full({1}, n, lopt)}) - starts);
  return {values.contiguous(), inverse, counts};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> vk_unique_dim(const at::Tensor& self, int64_t dim,
                                                             bool /*sorted*/, bool return_inverse,
                                                             bool return_counts) {
  return unique_slices("unique", self, dim, true, return_inverse, return_counts);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> vk_unique_dim_consecutive(const at::Tensor& self,
                                                                         int64_t dim,
                                                                         bool return_inverse,
                                                                         bool return_counts) {
  return unique_slices("unique_consecutive", self, dim, false, return_inverse, return_counts);
}

// Boxed: the optional dim picks the flattened form or the slices'.
void unique_consecutive_boxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  size_t n = stack->size();
  at::Tensor self = (*stack)[n - 4].toTensor();
  bool inverse = (*stack)[n - 3].toBool(), counts = (*stack)[n - 2].toBool();
  const c10::IValue dim = (*stack)[n - 1];
  auto [a, b, c] = dim.isNone() ? unique_consecutive_flat(self, inverse, counts)
                                : vk_unique_dim_consecutive(self, dim.toInt(), inverse, counts);
  torch::jit::drop(*stack, 4);
  torch::jit::push(*stack, a, b, c);
}

// -------------------------------------------------------------- randperm

// Sorting random 63-bit keys: the indices are a uniform permutation up to key
// collisions (ties keep index order), negligible for any n that fits in memory.
at::Tensor& vk_randperm_gen_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  TORCH_CHECK_NOT_IMPLEMENTED(has_vkml_dtype(out.scalar_type()) && out.scalar_type() != at::kBool,
                              "randperm on vkml does not support ", out.scalar_type());
  at::native::resize_output(out, {n});
  if (n == 0) return out;
  at::Tensor keys = at::empty({n}, out.options().dtype(at::kLong));
  keys.random_(gen);
  auto [sorted, idx] = sort_keys_last("randperm", keys, 0, false);
  out.copy_(idx);
  return out;
}

at::Tensor& vk_randperm_out(int64_t n, at::Tensor& out) {
  return vk_randperm_gen_out(n, std::nullopt, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sort", TORCH_FN(vk_sort));
  m.impl("sort.values", TORCH_FN(vk_sort_out));
  m.impl("sort.stable", TORCH_FN(vk_sort_stable));
  m.impl("sort.values_stable", TORCH_FN(vk_sort_stable_out));
  m.impl("topk", TORCH_FN(vk_topk));
  m.impl("topk.values", TORCH_FN(vk_topk_out));
  m.impl("kthvalue", TORCH_FN(vk_kthvalue));
  m.impl("kthvalue.values", TORCH_FN(vk_kthvalue_out));
  m.impl("median", TORCH_FN(vk_median));
  m.impl("median.dim", TORCH_FN(vk_median_dim));
  m.impl("median.dim_values", TORCH_FN(vk_median_dim_out));
  m.impl("nanmedian", TORCH_FN(vk_nanmedian));
  m.impl("nanmedian.dim", TORCH_FN(vk_nanmedian_dim));
  m.impl("nanmedian.dim_values", TORCH_FN(vk_nanmedian_dim_out));
  m.impl("_unique2", TORCH_FN(vk_unique2));
  m.impl("_unique", TORCH_FN(vk_unique));
  m.impl("unique_dim", TORCH_FN(vk_unique_dim));
  m.impl("unique_dim_consecutive", TORCH_FN(vk_unique_dim_consecutive));
  m.impl("unique_consecutive",
         torch::CppFunction::makeFromBoxedFunction<&unique_consecutive_boxed>());
  m.impl("randperm.generator_out", TORCH_FN(vk_randperm_gen_out));
  m.impl("randperm.out", TORCH_FN(vk_randperm_out));
}

}  // namespace vkml_aten
