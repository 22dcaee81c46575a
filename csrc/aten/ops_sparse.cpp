// Sparse COO tensors on vkml, as far as sparse gradients take them: nn.Embedding and
// nn.EmbeddingBag with sparse=True, gradient accumulation, and the optimizers that
// accept sparse gradients (SGD, SparseAdam, Adagrad), as on CUDA. Before, the first
// sparse backward raised NotImplementedError. Also sparse @ dense products, the backward
// of torch.sparse.sum, and torch.sparse.softmax / log_softmax with their backward.
//
// A SparsePrivateUse1 tensor is PyTorch's own SparseTensorImpl around vkml tensors:
// int64 indices [sparse_dim, nnz] and values [nnz, dense dims...]. Its structure
// (construction, _indices/_values, sizes, clone, resize) is PyTorch's device-independent
// code; the arithmetic here composes vkml's dense ops on the values, with each entry's
// row-major position among the sparse dims as its key (duplicates add up).
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_to_sparse_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/unsqueeze_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <torch/library.h>

#include <limits>
#include <vector>

#include "fallback.h"
#include "op_helpers.h"

namespace vkml_aten {
namespace {

at::Tensor make_sparse(const at::Tensor& indices, const at::Tensor& values, at::IntArrayRef size,
                       bool coalesced) {
  return at::_sparse_coo_tensor_with_dims_and_tensors(
      indices.size(0), values.dim() - 1, size, indices, values,
      values.options().layout(at::kSparse), coalesced);
}

// The row-major position of each entry among the first sparse_dim dims of `size`.
at::Tensor positions(const at::Tensor& indices, at::IntArrayRef size) {
  const int64_t k = indices.size(0);
  if (k == 0) return at::zeros({indices.size(1)}, indices.options());  // one position: 0
  at::Tensor flat = indices.select(0, k - 1).clone();
  int64_t stride = size[k - 1];
  for (int64_t d = k - 2; d >= 0; --d) {
    flat.add_(indices.select(0, d), stride);
    stride *= size[d];
  }
  return flat;
}

// A dense tensor of `size` seen as [rows of the sparse dims, dense dims...].
std::vector<int64_t> row_shape(at::IntArrayRef size, int64_t sparse_dim) {
  int64_t rows = 1;
  for (int64_t d = 0; d < sparse_dim; ++d) rows *= size[d];
  std::vector<int64_t> shape{rows};
  shape.insert(shape.end(), size.begin() + sparse_dim, size.end());
  return shape;
}

// alpha * values, skipping the product when alpha is 1.
at::Tensor scaled(const at::Tensor& values, const at::Scalar& alpha) {
  const bool unit = alpha.isIntegral(false) && alpha.toLong() == 1;
  return unit ? values : values.mul(alpha);
}

// Row-major positions among the first sparse_dim dims of `size` back to [sparse_dim, n]
// indices (positions()' inverse).
at::Tensor indices_of(const at::Tensor& keys, at::IntArrayRef size, int64_t sparse_dim) {
  std::vector<at::Tensor> rows(sparse_dim);
  at::Tensor rest = keys;
  for (int64_t d = sparse_dim - 1; d >= 0; --d) {
    rows[d] = rest.remainder(size[d]);
    rest = rest.div(size[d], "floor");
  }
  return at::stack(rows, 0);
}

// Makes the sparse `out` hold `result`'s entries (the out= forms).
at::Tensor& assign_sparse(at::Tensor& out, const at::Tensor& result) {
  auto* impl = at::sparse::get_sparse_impl(out);
  impl->resize_(result.sparse_dim(), result.dense_dim(), result.sizes());
  impl->set_indices_and_values_unsafe(result._indices(), result._values());
  out._coalesced_(result.is_coalesced());
  return out;
}

// dense += alpha * sparse, in place.
void accumulate(at::Tensor& dense, const at::Tensor& sparse, const at::Scalar& alpha) {
  if (sparse._nnz() == 0) return;
  at::Tensor values = scaled(sparse._values().to(dense.scalar_type()), alpha);
  at::Tensor target = dense.is_contiguous() ? dense : dense.contiguous();
  target.view(row_shape(dense.sizes(), sparse.sparse_dim()))
      .index_add_(0, positions(sparse._indices(), sparse.sizes()), values);
  if (!target.is_same(dense)) dense.copy_(target);
}

void check_same_size(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.sizes() == other.sizes(), "add: expected 'self' and 'other' to have same size",
              ", but self has size ", self.sizes(), " while other has size ", other.sizes(),
              " (FYI: dense-sparse addition does not currently support broadcasting)");
}

void check_not_sparse_plus_dense(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(!(self.is_sparse() && !other.is_sparse()),
              "add(sparse, dense) is not supported. Use add(dense, sparse) instead.");
}

// The entries of both, uncoalesced: duplicates add up wherever they are read.
std::pair<at::Tensor, at::Tensor> joined(const at::Tensor& self, const at::Tensor& other,
                                         const at::Scalar& alpha) {
  TORCH_CHECK(self.sparse_dim() == other.sparse_dim() && self.dense_dim() == other.dense_dim(),
              "add: expected 'self' and 'other' to have the same sparse and dense dims");
  at::Tensor theirs = scaled(other._values().to(self.scalar_type()), alpha);
  return {at::cat({self._indices(), other._indices()}, 1), at::cat({self._values(), theirs}, 0)};
}

at::Tensor sparse_add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  check_not_sparse_plus_dense(self, other);
  check_same_size(self, other);
  if (!self.is_sparse()) {
    at::Tensor result =
        self.to(at::promote_types(self.scalar_type(), other.scalar_type()), false, true);
    accumulate(result, other, alpha);
    return result;
  }
  auto [indices, values] = joined(self, other, alpha);
  return make_sparse(indices, values, self.sizes(), false);
}

at::Tensor& sparse_add_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  check_not_sparse_plus_dense(self, other);
  check_same_size(self, other);
  if (!self.is_sparse()) {
    accumulate(self, other, alpha);
    return self;
  }
  auto [indices, values] = joined(self, other, alpha);
  at::sparse::get_sparse_impl(self)->set_indices_and_values_unsafe(indices, values);
  self._coalesced_(false);
  return self;
}

at::Tensor& sparse_add_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha,
                           at::Tensor& out) {
  at::Tensor result = sparse_add(self, other, alpha);
  if (out.is_sparse()) {
    TORCH_CHECK(result.is_sparse(), "add: a dense result cannot be written to a sparse tensor");
    assign_sparse(out, result);
  } else {
    out.resize_(result.sizes());
    out.copy_(result);
  }
  return out;
}

// One entry per position, in row-major order, duplicates summed (as the CPU orders them).
at::Tensor sparse_coalesce(const at::Tensor& self) {
  const int64_t k = self.sparse_dim();
  at::Tensor indices = self._indices(), values = self._values();
  if (self._nnz() < 2) return make_sparse(indices.clone(), values.clone(), self.sizes(), true);
  if (k == 0)  // every entry is the one position: their sum
    return make_sparse(indices.narrow(1, 0, 1).clone(), values.sum(0, /*keepdim=*/true),
                       self.sizes(), true);
  auto [keys, inverse, counts] =
      at::_unique2(positions(indices, self.sizes()), /*sorted=*/true, /*return_inverse=*/true,
                   /*return_counts=*/false);
  std::vector<int64_t> shape = values.sizes().vec();
  shape[0] = keys.size(0);
  at::Tensor summed = at::zeros(shape, values.options()).index_add_(0, inverse, values);
  return make_sparse(indices_of(keys, self.sizes(), k), summed, self.sizes(), true);
}

at::Tensor sparse_to_dense(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                           std::optional<bool> /*masked_grad*/) {
  at::Tensor dense =
      at::zeros(self.sizes(), self._values().options().dtype(dtype.value_or(self.scalar_type())));
  accumulate(dense, self, 1);
  return dense;
}

// self's values at mask's entries, as a sparse tensor with mask's indices.
at::Tensor dense_sparse_mask(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.sizes() == self.sizes(),
              "sparse_mask(): operands have incompatible sizes; self ", "has size ", self.sizes(),
              " but mask has size ", mask.sizes());
  at::Tensor dense = self.is_sparse() ? sparse_to_dense(self, std::nullopt, std::nullopt) : self;
  at::Tensor rows = dense.reshape(row_shape(dense.sizes(), mask.sparse_dim()));
  at::Tensor values = rows.index_select(0, positions(mask._indices(), mask.sizes()));
  return make_sparse(mask._indices().clone(), values, mask.sizes(), mask.is_coalesced());
}

// A sparse tensor times a dense scalar (0-dim, a Python number wrapped) or a dense tensor
// of its size (each entry times the dense element at its position), in either order.
at::Tensor factor_values(const at::Tensor& sparse, const at::Tensor& factor) {
  TORCH_CHECK(sparse.is_sparse() && !factor.is_sparse(),
              "vkml: a sparse tensor multiplies by a scalar or a dense tensor");
  if (factor.dim() == 0) return sparse._values().mul(factor);
  TORCH_CHECK(factor.sizes() == sparse.sizes(), "mul: a sparse tensor of size ", sparse.sizes(),
              " and a dense tensor of size ", factor.sizes(), " (vkml does not broadcast them)");
  at::Tensor rows = factor.reshape(row_shape(factor.sizes(), sparse.sparse_dim()));
  return sparse._values().mul(rows.index_select(0, positions(sparse._indices(), sparse.sizes())));
}
// What factor_values() takes: a 0-dim or same-size dense factor.
bool values_factor(const at::Tensor& sparse, const at::Tensor& factor) {
  return !factor.is_sparse() && (factor.dim() == 0 || factor.sizes() == sparse.sizes());
}
at::Tensor sparse_mul(const at::Tensor& self, const at::Tensor& other) {
  const at::Tensor& sparse = self.is_sparse() ? self : other;
  const at::Tensor& factor = self.is_sparse() ? other : self;
  // Two sparse factors, or a broadcast: the CPU's.
  if (!values_factor(sparse, factor)) return cpu_route<at::_ops::mul_Tensor>(self, other);
  return make_sparse(sparse._indices().clone(), factor_values(sparse, factor), sparse.sizes(),
                     sparse.is_coalesced());
}
at::Tensor& sparse_mul_(at::Tensor& self, const at::Tensor& other) {
  at::Tensor values = factor_values(self, other);
  self._values().copy_(values);
  return self;
}

at::Tensor& sparse_mul_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  TORCH_CHECK(out.is_sparse(), "vkml: the product of a sparse tensor is sparse");
  if (out.is_same(self) || out.is_same(other)) {  // in place (_foreach_mul_ passes it second)
    return sparse_mul_(out, out.is_same(self) ? other : self);
  }
  return assign_sparse(out, sparse_mul(self, other));
}

at::Tensor sparse_neg(const at::Tensor& self) {
  return make_sparse(self._indices().clone(), self._values().neg(), self.sizes(),
                     self.is_coalesced());
}
at::Tensor& sparse_neg_(at::Tensor& self) {
  self._values().neg_();
  return self;
}

at::Tensor sparse_sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return sparse_add(self, other, -alpha);
}
at::Tensor& sparse_sub_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return sparse_add_(self, other, -alpha);
}

at::Tensor sparse_div(const at::Tensor& self, const at::Tensor& other) {
  if (!self.is_sparse() || other.is_sparse() || other.dim() != 0)  // the CPU's
    return cpu_route<at::_ops::div_Tensor>(self, other);
  return make_sparse(self._indices().clone(), self._values().div(other), self.sizes(),
                     self.is_coalesced());
}

// sparse [n, k] @ dense [k, m]: each entry (i, j, v) adds v * dense[j] to row i.
at::Tensor sparse_dense_product(const at::Tensor& sparse, const at::Tensor& dense) {
  TORCH_CHECK(sparse.sparse_dim() == 2 && sparse.dense_dim() == 0 && dense.dim() == 2,
              "vkml: sparse matrix products take a 2-d sparse and a 2-d dense matrix");
  TORCH_CHECK(sparse.size(1) == dense.size(0), "mat1 and mat2 shapes cannot be multiplied (",
              sparse.size(0), "x", sparse.size(1), " and ", dense.size(0), "x", dense.size(1), ")");
  at::Tensor indices = sparse._indices();
  return sparse_entries_times_dense(indices.select(0, 0), indices.select(0, 1),
                                    sparse._values().to(dense.scalar_type()), dense,
                                    sparse.size(0));
}

// What sparse_dense_product() takes (others, such as hybrid or sparse @ sparse: the CPU's).
bool plain_product(const at::Tensor& sparse, const at::Tensor& dense) {
  return sparse.is_sparse() && sparse.sparse_dim() == 2 && sparse.dense_dim() == 0 &&
         !dense.is_sparse() && dense.layout() == at::kStrided && dense.dim() == 2;
}

at::Tensor sparse_mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (!plain_product(self, mat2)) return cpu_route<at::_ops::mm>(self, mat2);
  return sparse_dense_product(self, mat2);
}

// beta * self + alpha * (mat1 @ mat2), mat1 sparse.
at::Tensor sparse_addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                        const at::Scalar& beta, const at::Scalar& alpha) {
  if (!plain_product(mat1, mat2)) return cpu_route<at::_ops::addmm>(self, mat1, mat2, beta, alpha);
  at::Tensor product = sparse_dense_product(mat1, mat2);
  at::Tensor base = self.is_sparse() ? sparse_to_dense(self, std::nullopt, std::nullopt) : self;
  at::Tensor scaled = beta.toComplexDouble() == 0.0 ? at::zeros_like(product) : base.mul(beta);
  return scaled.expand_as(product).add(product, alpha);
}
at::Tensor& sparse_addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                             const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  at::Tensor result = sparse_addmm(self, mat1, mat2, beta, alpha);
  out.resize_(result.sizes());
  out.copy_(result);
  return out;
}

// Each entry's row-major position among the sparse dims not marked in `dropped` (the key
// that groups entries along the dropped dims), and those dims' sizes; 0 for every entry
// when no sparse dim is left.
std::pair<at::Tensor, std::vector<int64_t>> positions_without(const at::Tensor& indices,
                                                              at::IntArrayRef sizes,
                                                              const std::vector<bool>& dropped) {
  std::vector<at::Tensor> rows;
  std::vector<int64_t> kept_sizes;
  for (int64_t d = 0; d < indices.size(0); ++d) {
    if (dropped[d]) continue;
    rows.push_back(indices.select(0, d));
    kept_sizes.push_back(sizes[d]);
  }
  if (rows.empty()) return {at::zeros({indices.size(1)}, indices.options()), kept_sizes};
  return {positions(at::stack(rows), kept_sizes), kept_sizes};
}

// The values of coalesced sparse `g` at the row-major positions `keys` among its sparse dims
// (of sizes `sizes`), zero where g has no entry: a binary search among g's positions,
// which coalescing sorted.
at::Tensor values_at_positions(const at::Tensor& g, at::IntArrayRef sizes, const at::Tensor& keys) {
  at::Tensor values = g._values();
  std::vector<int64_t> shape{keys.size(0)};
  shape.insert(shape.end(), values.sizes().begin() + 1, values.sizes().end());
  if (g._nnz() == 0) return at::zeros(shape, values.options());
  at::Tensor g_keys = positions(g._indices(), sizes);
  at::Tensor at_key = at::searchsorted(g_keys, keys).clamp_max(g._nnz() - 1);
  at::Tensor found = g_keys.index_select(0, at_key).eq(keys);
  std::vector<int64_t> found_shape(shape.size(), 1);
  found_shape[0] = keys.size(0);
  return at::where(found.view(found_shape), values.index_select(0, at_key), 0);
}

// The gradient of torch.sparse.sum(self, dim): each of self's entries takes the gradient at
// its position without the summed dims (from a sparse grad over the kept sparse dims, or a
// dense one when every sparse dim was summed), repeated along the summed dense dims. The result has
// self's coalesced entries, as the CPU's.
at::Tensor sparse_sum_backward(const at::Tensor& grad, const at::Tensor& self,
                               at::IntArrayRef dim) {
  TORCH_CHECK(self.is_sparse(), "_sparse_sum_backward: expected a sparse self");
  const int64_t sparse_dims = self.sparse_dim(), ndim = self.dim();
  std::vector<bool> summed(ndim, false);
  for (int64_t d : dim) summed[at::maybe_wrap_dim(d, ndim)] = true;
  at::Tensor input = self.coalesce();
  at::Tensor indices = input._indices();
  const int64_t nnz = input._nnz();
  auto [keys, kept_sizes] = positions_without(indices, self.sizes(), summed);
  at::Tensor picked;  // [nnz, the kept dense dims...]
  if (kept_sizes.empty()) {
    TORCH_CHECK(!grad.is_sparse(), "_sparse_sum_backward: expected a dense grad when every ",
                "sparse dim is summed");
    std::vector<int64_t> shape{nnz};
    shape.insert(shape.end(), grad.sizes().begin(), grad.sizes().end());
    picked = grad.unsqueeze(0).expand(shape);
  } else {
    TORCH_CHECK(grad.is_sparse(), "_sparse_sum_backward: expected a sparse grad");
    picked = values_at_positions(grad.coalesce(), kept_sizes, keys);
  }
  std::vector<int64_t> values_shape{nnz};
  for (int64_t d = sparse_dims; d < ndim; ++d) {
    if (summed[d]) picked = picked.unsqueeze(1 + d - sparse_dims);
    values_shape.push_back(self.size(d));
  }
  return make_sparse(indices.clone(), picked.expand(values_shape).contiguous(), self.sizes(), true);
}

// ---- torch.sparse.softmax / log_softmax. Along a sparse dim, each group of entries that
// share every other sparse index is normalised on its own (unspecified entries count as
// -inf: they take no share); along a dense dim, each entry's values take the dense op.
// The result has the input's coalesced entries, as the CPU's.

// A group id per entry of `indices` ([sparse_dim, nnz]) from its position without `dim`:
// entries sorted by that key, equal neighbours share an id, so ids lie below nnz and
// no count is read back.
at::Tensor softmax_groups(const at::Tensor& indices, at::IntArrayRef sizes, int64_t dim) {
  const int64_t nnz = indices.size(1);
  // One sparse dim (every entry in one group) or under two entries: all in group 0.
  if (indices.size(0) < 2 || nnz < 2) return at::zeros({nnz}, indices.options());
  std::vector<bool> dropped(indices.size(0), false);
  dropped[dim] = true;
  at::Tensor key = positions_without(indices, sizes, dropped).first;
  auto [sorted, order] = at::sort(key);
  at::Tensor starts = at::ones({nnz}, indices.options());
  starts.narrow(0, 1, nnz - 1).copy_(sorted.narrow(0, 1, nnz - 1).ne(sorted.narrow(0, 0, nnz - 1)));
  at::Tensor sorted_ids = starts.cumsum(0).sub_(1);
  return at::empty_like(sorted_ids).index_copy_(0, order, sorted_ids);
}

// Per-entry sums over each entry's group (`values` [nnz, dense dims...]).
at::Tensor group_sum(const at::Tensor& values, const at::Tensor& groups) {
  return at::zeros_like(values).index_add_(0, groups, values).index_select(0, groups);
}

at::Tensor sparse_softmax_impl(const at::Tensor& self, int64_t dim, bool half_to_float, bool log) {
  TORCH_CHECK(self.is_sparse(), "softmax: expected a sparse COO tensor");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const at::ScalarType type = self.scalar_type();
  const bool half = type == at::kHalf || type == at::kBFloat16;
  TORCH_CHECK(!half_to_float || type == at::kHalf,
              "softmax with half to float conversion is not supported on vkml for ", type);
  at::Tensor input = self.coalesce();
  at::Tensor values = half ? input._values().to(at::kFloat) : input._values();
  at::Tensor out;
  if (d >= self.sparse_dim()) {
    const int64_t vd = d - self.sparse_dim() + 1;
    out = log ? values.log_softmax(vd) : values.softmax(vd);
  } else if (values.numel() == 0) {
    out = values.clone();
  } else {
    at::Tensor groups = softmax_groups(input._indices(), self.sizes(), d);
    at::Tensor top = at::full_like(values, -std::numeric_limits<double>::infinity())
                         .index_reduce_(0, groups, values, "amax", /*include_self=*/true);
    at::Tensor shifted = values - top.index_select(0, groups);
    at::Tensor sums = group_sum(shifted.exp(), groups);
    out = log ? shifted - sums.log() : shifted.exp() / sums;
  }
  if (half && !half_to_float) out = out.to(type);
  return make_sparse(input._indices().clone(), out, self.sizes(), true);
}
at::Tensor sparse_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return sparse_softmax_impl(self, dim, half_to_float, false);
}
at::Tensor sparse_log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return sparse_softmax_impl(self, dim, half_to_float, true);
}

at::Tensor sparse_softmax_backward_impl(const at::Tensor& grad_output, const at::Tensor& output,
                                        int64_t dim, bool log) {
  TORCH_CHECK(output.is_sparse() && grad_output.is_sparse(),
              "softmax backward: expected sparse COO tensors");
  const int64_t d = at::maybe_wrap_dim(dim, output.dim());
  at::Tensor out = output.coalesce();
  const at::ScalarType type = out.scalar_type();
  const bool half = type == at::kHalf || type == at::kBFloat16;
  at::Tensor y = half ? out._values().to(at::kFloat) : out._values();
  at::Tensor g = values_at_positions(grad_output.coalesce(), output.sizes(),
                                     positions(out._indices(), output.sizes()))
                     .to(y.scalar_type());
  at::Tensor gi;
  if (d >= output.sparse_dim()) {
    const int64_t vd = d - output.sparse_dim() + 1;
    gi = log ? g - y.exp() * g.sum(vd, true) : y * (g - (g * y).sum(vd, true));
  } else if (y.numel() == 0) {
    gi = y.clone();
  } else {
    at::Tensor groups = softmax_groups(out._indices(), output.sizes(), d);
    gi = log ? g - y.exp() * group_sum(g, groups) : y * (g - group_sum(g * y, groups));
  }
  if (half) gi = gi.to(type);
  return make_sparse(out._indices().clone(), gi, output.sizes(), true);
}
at::Tensor sparse_softmax_backward(const at::Tensor& grad_output, const at::Tensor& output,
                                   int64_t dim, const at::Tensor& /*self*/) {
  return sparse_softmax_backward_impl(grad_output, output, dim, false);
}
at::Tensor sparse_log_softmax_backward(const at::Tensor& grad_output, const at::Tensor& output,
                                       int64_t dim, const at::Tensor& /*self*/) {
  return sparse_softmax_backward_impl(grad_output, output, dim, true);
}

// dense.to_sparse(sparse_dim): one entry per position of the first sparse_dim dims whose
// slice holds a nonzero, in row-major order (coalesced), as the CPU makes them.
at::Tensor dense_to_sparse(const at::Tensor& self, int64_t sparse_dim) {
  TORCH_CHECK(sparse_dim > 0 || self.dim() == 0,
              "dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0");
  TORCH_CHECK(sparse_dim <= self.dim(), "sparse_dim must be in [0, ", self.dim(), "] but got ",
              sparse_dim);
  if (sparse_dim == 0) {
    return make_sparse(at::zeros({0, 1}, self.options().dtype(at::kLong)), self.unsqueeze(0),
                       self.sizes(), true);
  }
  at::Tensor rows = self.reshape(row_shape(self.sizes(), sparse_dim));
  at::Tensor nonzero = rows.ne(0);
  if (rows.dim() > 1) nonzero = nonzero.flatten(1).any(1);
  at::Tensor keys = nonzero.nonzero().squeeze(1);
  return make_sparse(indices_of(keys, self.sizes(), sparse_dim), rows.index_select(0, keys),
                     self.sizes(), true);
}

at::Tensor to_sparse(const at::Tensor& self, std::optional<at::Layout> layout,
                     at::OptionalIntArrayRef blocksize, std::optional<int64_t> dense_dim) {
  if (layout.has_value() && *layout != at::kSparse) {  // CSR and friends: ops_sparse_csr.cpp
    return at::native::dense_to_sparse(self, layout, blocksize, dense_dim);
  }
  TORCH_CHECK(!blocksize.has_value(), "to_sparse for Strided to SparseCoo conversion does not ",
              "use specified blocksize");
  return dense_to_sparse(self, self.dim() - dense_dim.value_or(0));
}
at::Tensor to_sparse_dim(const at::Tensor& self, int64_t sparse_dim) {
  return dense_to_sparse(self, sparse_dim);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_to_sparse", TORCH_FN(vkml_aten::to_sparse));
  m.impl("_to_sparse.sparse_dim", TORCH_FN(vkml_aten::to_sparse_dim));
}

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  // Structure: PyTorch's device-independent code.
  m.impl("_sparse_coo_tensor_with_dims_and_tensors",
         TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("clone", TORCH_FN(at::native::clone_sparse));
  m.impl("copy_sparse_to_sparse_", TORCH_FN(at::native::copy_sparse_));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_wrapper_));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_));
  m.impl("unsqueeze", TORCH_FN(at::native::unsqueeze_sparse));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
  // Arithmetic: vkml's dense ops on the values.
  m.impl("_coalesce", TORCH_FN(vkml_aten::sparse_coalesce));
  m.impl("add.Tensor", TORCH_FN(vkml_aten::sparse_add));
  m.impl("add_.Tensor", TORCH_FN(vkml_aten::sparse_add_));
  m.impl("add.out", TORCH_FN(vkml_aten::sparse_add_out));
  m.impl("_to_dense", TORCH_FN(vkml_aten::sparse_to_dense));
  m.impl("sparse_mask", TORCH_FN(vkml_aten::dense_sparse_mask));
  m.impl("mul.Tensor", TORCH_FN(vkml_aten::sparse_mul));
  m.impl("mul_.Tensor", TORCH_FN(vkml_aten::sparse_mul_));
  m.impl("mul.out", TORCH_FN(vkml_aten::sparse_mul_out));
  m.impl("neg", TORCH_FN(vkml_aten::sparse_neg));
  m.impl("neg_", TORCH_FN(vkml_aten::sparse_neg_));
  m.impl("sub.Tensor", TORCH_FN(vkml_aten::sparse_sub));
  m.impl("sub_.Tensor", TORCH_FN(vkml_aten::sparse_sub_));
  m.impl("div.Tensor", TORCH_FN(vkml_aten::sparse_div));
  m.impl("mm", TORCH_FN(vkml_aten::sparse_mm));
  m.impl("addmm", TORCH_FN(vkml_aten::sparse_addmm));
  m.impl("addmm.out", TORCH_FN(vkml_aten::sparse_addmm_out));
  m.impl("_sparse_addmm", TORCH_FN(vkml_aten::sparse_addmm));
  m.impl("_sparse_sum_backward", TORCH_FN(vkml_aten::sparse_sum_backward));
  m.impl("_sparse_softmax", TORCH_FN(vkml_aten::sparse_softmax));
  m.impl("_sparse_log_softmax", TORCH_FN(vkml_aten::sparse_log_softmax));
  m.impl("_sparse_softmax_backward_data", TORCH_FN(vkml_aten::sparse_softmax_backward));
  m.impl("_sparse_log_softmax_backward_data", TORCH_FN(vkml_aten::sparse_log_softmax_backward));
}

}  // namespace vkml_aten
