// Sparse compressed tensors (CSR and CSC) on vkml: construction, conversions to and from
// dense and COO, and the products a graph network or a sparse attention mask needs
// (sparse @ dense, dense @ sparse, sparse @ vector, with gradients for the dense side and
// for the sparse values), as on CUDA. Before, a CSR tensor could reach vkml but every op
// on it raised NotImplementedError.
//
// A SparseCsrPrivateUse1 tensor is PyTorch's own SparseCsrTensorImpl around vkml tensors
// (compressed indices, plain indices, values); its structure and its conversions are
// PyTorch's device-independent code, which calls the two index conversions defined here.
// The products expand the compressed indices to one (row, column) pair per entry and
// compose vkml's dense ops. Every other op on a compressed tensor takes the counted CPU
// route (fallback.cpp) instead of raising.
#include <ATen/ops/_convert_indices_from_coo_to_csr_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_to_sparse_csc_native.h>
#include <ATen/ops/_to_sparse_csr_native.h>
#include <ATen/ops/_to_sparse_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/resize_as_sparse_native.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/select_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/values_native.h>
#include <torch/library.h>

#include "fallback.h"
#include "op_helpers.h"

namespace vkml_aten {
namespace {

bool is_compressed(const at::Tensor& t) {
  return t.layout() == at::kSparseCsr || t.layout() == at::kSparseCsc;
}

// ------------------------------------------------------------------ index conversions

// Sorted row indices [nnz] to compressed row offsets [size + 1]: offset i counts the
// entries of the rows before i.
at::Tensor coo_to_csr(const at::Tensor& rows, int64_t size, bool out_int32) {
  TORCH_CHECK(rows.dim() <= 1, "Input is supposed to be a vector, but got ", rows.dim(),
              " dimensional tensor.");
  at::Tensor bounds = at::arange(size + 1, rows.options().dtype(rows.scalar_type()));
  return at::searchsorted(rows.reshape({-1}), bounds, out_int32);
}

// Compressed offsets [n + 1] and plain indices [nnz] to [2, nnz] pairs (compressed
// index first, or second with transpose): entry k belongs to the last i whose offset
// is at most k.
at::Tensor csr_to_coo(const at::Tensor& crow, const at::Tensor& col, bool out_int32,
                      bool transpose) {
  if (crow.dim() != 1 || col.dim() != 1)  // batched: the CPU's
    return cpu_route<at::_ops::_convert_indices_from_csr_to_coo>(crow, col, out_int32, transpose);
  const auto dtype = out_int32 ? at::kInt : at::kLong;
  at::Tensor k = at::arange(col.size(0), col.options().dtype(crow.scalar_type()));
  at::Tensor major = at::searchsorted(crow.narrow(0, 1, crow.size(0) - 1), k, out_int32,
                                      /*right=*/true);
  at::Tensor minor = col.to(dtype);
  return transpose ? at::stack({minor, major}) : at::stack({major, minor});
}

// ------------------------------------------------------------------ products

// One (row, column, value) per entry of a 2-d CSR or CSC matrix.
struct Entries {
  at::Tensor rows, cols, values;
};

Entries entries_of(const at::Tensor& t) {
  TORCH_CHECK(t.dim() == 2 && t.dense_dim() == 0,
              "vkml: sparse compressed products take 2-d matrices without dense dims (got ",
              t.dim(), "-d with ", t.dense_dim(), " dense dims)");
  if (t.layout() == at::kSparseCsr) {
    at::Tensor rc = csr_to_coo(t.crow_indices(), t.col_indices(), false, false);
    return {rc.select(0, 0), rc.select(0, 1), t.values()};
  }
  at::Tensor rc = csr_to_coo(t.ccol_indices(), t.row_indices(), false, true);
  return {rc.select(0, 0), rc.select(0, 1), t.values()};
}

// A compressed tensor of `like`'s structure (its indices copied) holding `values`.
at::Tensor with_values(const at::Tensor& like, const at::Tensor& values) {
  const bool csr = like.layout() == at::kSparseCsr;
  return at::_sparse_compressed_tensor_unsafe(
      (csr ? like.crow_indices() : like.ccol_indices()).clone(),
      (csr ? like.col_indices() : like.row_indices()).clone(), values, like.sizes(),
      values.options().layout(like.layout()));
}

void check_compressed_product(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "vkml: sparse products take 2-d matrices");
  TORCH_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x",
              a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected mat1 and mat2 to have the same dtype, ",
              "but got: ", a.scalar_type(), " != ", b.scalar_type());
}

// a @ b with a or b compressed and the other dense; the result is dense.
at::Tensor compressed_product(const at::Tensor& a, const at::Tensor& b) {
  check_compressed_product(a, b);
  if (is_compressed(a) && !b.is_sparse() && !is_compressed(b)) {
    // Row r of the result gathers v * b[c] over a's entries (r, c, v).
    Entries e = entries_of(a);
    return sparse_entries_times_dense(e.rows, e.cols, e.values, b, a.size(0));
  }
  if (is_compressed(b) && !a.is_sparse() && !is_compressed(a)) {
    // Column c of the result gathers v * a[:, r] over b's entries (r, c, v).
    Entries e = entries_of(b);
    return sparse_entries_times_dense(e.cols, e.rows, e.values, a.t(), b.size(1)).t().contiguous();
  }
  TORCH_INTERNAL_ASSERT(false, "compressed_product takes what plain_compressed_product() accepts");
}

// What compressed_product() takes: one plain 2-d compressed matrix (no batch or dense
// dims) and one strided matrix. The rest (sparse @ sparse, batched, hybrid): the CPU's.
bool plain_compressed_product(const at::Tensor& a, const at::Tensor& b) {
  auto plain = [](const at::Tensor& t) {
    return is_compressed(t) && t.dim() == 2 && t.dense_dim() == 0;
  };
  auto strided = [](const at::Tensor& t) { return t.layout() == at::kStrided; };
  return (plain(a) && strided(b)) || (strided(a) && plain(b));
}

at::Tensor compressed_mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (!plain_compressed_product(self, mat2)) return cpu_route<at::_ops::mm>(self, mat2);
  return compressed_product(self, mat2);
}

// beta * self + alpha * (mat1 @ mat2), self dense (or compressed, then densified).
at::Tensor compressed_addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                            const at::Scalar& beta, const at::Scalar& alpha) {
  if (!plain_compressed_product(mat1, mat2))
    return cpu_route<at::_ops::addmm>(self, mat1, mat2, beta, alpha);
  at::Tensor p = compressed_product(mat1, mat2);
  at::Tensor base = is_compressed(self) ? self.to_dense() : self;
  at::Tensor scaled = beta.toComplexDouble() == 0.0 ? at::zeros_like(p) : base.mul(beta);
  return scaled.expand_as(p).add(p, alpha);
}

// The out= forms: the product is dense.
at::Tensor& write_dense(at::Tensor& out, const at::Tensor& result) {
  TORCH_CHECK(!out.is_sparse() && !is_compressed(out),
              "vkml: a product with a sparse compressed matrix writes a dense out");
  out.resize_(result.sizes());
  out.copy_(result);
  return out;
}

at::Tensor& compressed_addmm_out(const at::Tensor& self, const at::Tensor& mat1,
                                 const at::Tensor& mat2, const at::Scalar& beta,
                                 const at::Scalar& alpha, at::Tensor& out) {
  return write_dense(out, compressed_addmm(self, mat1, mat2, beta, alpha));
}

// beta * self + alpha * (mat @ vec).
at::Tensor compressed_addmv(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                            const at::Scalar& beta, const at::Scalar& alpha) {
  TORCH_CHECK(vec.dim() == 1, "vector + matrix @ vector expected, got ", self.dim(), ", ",
              mat.dim(), ", ", vec.dim());
  return compressed_addmm(self.dim() == 1 ? self.unsqueeze(1) : self, mat, vec.unsqueeze(1), beta,
                          alpha)
      .squeeze(1);
}
at::Tensor& compressed_addmv_out(const at::Tensor& self, const at::Tensor& mat,
                                 const at::Tensor& vec, const at::Scalar& beta,
                                 const at::Scalar& alpha, at::Tensor& out) {
  return write_dense(out, compressed_addmv(self, mat, vec, beta, alpha));
}

// beta * self + alpha * (mat1 @ mat2) at self's entries only (self CSR, mat1 and mat2
// dense): each entry (r, c) takes the dot product of mat1's row r and mat2's column c.
// Autograd computes the gradient of a CSR matrix's values with it.
at::Tensor sampled_addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                         const at::Scalar& beta, const at::Scalar& alpha) {
  TORCH_CHECK(self.layout() == at::kSparseCsr && !mat1.is_sparse() && !is_compressed(mat1) &&
                  !mat2.is_sparse() && !is_compressed(mat2),
              "sampled_addmm: expected self to be a sparse CSR and mat1, mat2 strided tensors");
  if (self.dim() != 2 || mat1.dim() != 2 || mat2.dim() != 2)  // batched: the CPU's
    return cpu_route<at::_ops::sparse_sampled_addmm>(self, mat1, mat2, beta, alpha);
  check_compressed_product(mat1, mat2);
  TORCH_CHECK(self.size(0) == mat1.size(0) && self.size(1) == mat2.size(1),
              "sampled_addmm: self of size ", self.sizes(), " does not match mat1 @ mat2 of size ",
              mat1.size(0), "x", mat2.size(1));
  Entries e = entries_of(self);
  at::Tensor dots = mat1.index_select(0, e.rows).mul(mat2.t().index_select(0, e.cols)).sum(1);
  at::Tensor values = beta.toComplexDouble() == 0.0
                          ? dots.mul(alpha)
                          : e.values.mul(beta).add(dots.to(e.values.scalar_type()), alpha);
  return with_values(self, values);
}

// A compressed tensor times a 0-dim factor (a number, or a 0-dim tensor), in either order.
at::Tensor compressed_mul(const at::Tensor& self, const at::Tensor& other) {
  const at::Tensor& sparse = is_compressed(self) ? self : other;
  const at::Tensor& factor = is_compressed(self) ? other : self;
  if (is_compressed(factor) || factor.dim() != 0)
    return cpu_route<at::_ops::mul_Tensor>(self, other);
  return with_values(sparse, sparse.values().mul(factor));
}

// dense + alpha * compressed, a dense result (the CPU's other sums: its route).
at::Tensor compressed_add(const at::Tensor& self, const at::Tensor& other,
                          const at::Scalar& alpha) {
  if (is_compressed(self) || !is_compressed(other) || other.dim() != 2 || other.dense_dim() != 0 ||
      self.sizes() != other.sizes())
    return cpu_route<at::_ops::add_Tensor>(self, other, alpha);
  Entries e = entries_of(other);
  at::Tensor result =
      self.to(at::promote_types(self.scalar_type(), other.scalar_type()), false, true);
  result.index_put_({e.rows, e.cols}, e.values.to(result.scalar_type()).mul(alpha),
                    /*accumulate=*/true);
  return result;
}

// ------------------------------------------------------------------ values-wise ops

// A function f with f(0) == 0 maps a compressed tensor to one of the same structure
// whose values are f(values), as the CPU's kernels for compressed tensors do. Boxed, for
// any such op: the functional form returns a new tensor (the indices copied), the
// in-place form (sin_) changes the values where they are.
void on_values(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t n = schema.arguments().size();
  c10::IValue& first = (*stack)[stack->size() - n];
  const at::Tensor self = first.toTensor();
  TORCH_CHECK(is_compressed(self), schema.name(),
              ": vkml applies it to CSR and CSC tensors' values");
  first = self.values();
  const auto* alias = schema.arguments()[0].alias_info();
  const bool in_place = alias && alias->isWrite();
  op.callBoxed(stack);
  if (in_place) {
    stack->back() = self;
    return;
  }
  stack->back() = with_values(self, stack->back().toTensor());
}

// ------------------------------------------------------------------ reduced products

// torch.sparse.mm(csr, dense, reduce): row r of the result reduces (sum, mean, amax,
// amin) v * other[c] over the row's entries (r, c, v); rows without entries give 0.
// For amax and amin under autograd, arg[r, j] is the position among the values of the
// entry chosen (the first of ties, as the CPU's), or nnz for an empty row; the backward
// routes each gradient element through it. PyG's mean and max aggregations over a CSR
// adjacency call it (PyTorch has it for the CPU only).
enum class MmReduce { Sum, Mean, Max, Min };

MmReduce mm_reduce_of(c10::string_view reduce) {
  if (reduce == "sum") return MmReduce::Sum;
  if (reduce == "mean") return MmReduce::Mean;
  if (reduce == "max" || reduce == "amax") return MmReduce::Max;
  if (reduce == "min" || reduce == "amin") return MmReduce::Min;
  TORCH_CHECK(reduce == "prod", "reduce argument must be either sum, prod, mean, amax or amin, ",
              "got ", reduce);
  TORCH_CHECK(false, "sparse_mm_reduce: reduce type of prod has not been enabled.");
}

// Each row's number of entries, [rows], in `type`.
at::Tensor row_counts(const at::Tensor& self, at::ScalarType type) {
  at::Tensor crow = self.crow_indices();
  return crow.narrow(0, 1, self.size(0)).sub(crow.narrow(0, 0, self.size(0))).to(type);
}

std::tuple<at::Tensor, at::Tensor> mm_reduce(const at::Tensor& self, const at::Tensor& other,
                                             c10::string_view reduce) {
  TORCH_CHECK(self.layout() == at::kSparseCsr,
              "sparse_mm_reduce: expect self to be SparseCsr, got ", self.layout());
  TORCH_CHECK(self.dense_dim() == 0, "sparse_mm_reduce: expected non-hybrid self tensor.");
  TORCH_CHECK(self.dim() == 2, "sparse_mm_reduce: expected self to be a 2-D tensor, got ",
              self.dim(), "-D tensor.");
  check_compressed_product(self, other);
  const MmReduce op = mm_reduce_of(reduce);
  at::Tensor out = at::zeros({self.size(0), other.size(1)}, other.options());
  at::Tensor arg = at::empty({0}, self.col_indices().options());
  const int64_t nnz = self._nnz();
  if (nnz == 0) return {out, arg};
  Entries e = entries_of(self);
  at::Tensor terms = other.index_select(0, e.cols).mul_(e.values.unsqueeze(1));
  if (op == MmReduce::Sum || op == MmReduce::Mean) {
    out.index_add_(0, e.rows, terms);
    if (op == MmReduce::Mean)
      out.div_(row_counts(self, out.scalar_type()).clamp_min_(1).unsqueeze(1));
    return {out, arg};
  }
  at::Tensor slot = e.rows.unsqueeze(1).expand_as(terms);  // each term's output row
  out.scatter_reduce_(0, slot, terms, op == MmReduce::Max ? "amax" : "amin",
                      /*include_self=*/false);
  const bool need_arg =
      at::GradMode::is_enabled() && (self.requires_grad() || other.requires_grad());
  if (need_arg) {
    at::Tensor position = at::arange(nnz, e.rows.options()).unsqueeze(1).expand_as(terms);
    at::Tensor chosen = at::where(terms.eq(out.index_select(0, e.rows)), position, nnz);
    arg = at::full(out.sizes(), nnz, arg.options())
              .scatter_reduce_(0, slot, chosen.to(arg.scalar_type()), "amin", true);
  }
  return {out, arg};
}

std::tuple<at::Tensor, at::Tensor> mm_reduce_backward(
    const at::Tensor& self, const at::Tensor& grad_out, const at::Tensor& other,
    c10::string_view reduce, const at::Tensor& arg, std::array<bool, 2> mask) {
  TORCH_CHECK(self.layout() == at::kSparseCsr && self.dim() == 2 && self.dense_dim() == 0,
              "sparse_mm_reduce: expect self to be a 2-D SparseCsr tensor");
  const MmReduce op = mm_reduce_of(reduce);
  const int64_t nnz = self._nnz();
  Entries e = entries_of(self);
  at::Tensor g = grad_out.index_select(0, e.rows);  // [nnz, n]: each entry's row of grad
  at::Tensor picked;  // [nnz, n]: whether the entry's term was the one chosen
  if (op == MmReduce::Max || op == MmReduce::Min) {
    TORCH_CHECK(arg.dim() == 2, "sparse_mm_reduce: amax and amin backward need arg_out");
    picked = arg.index_select(0, e.rows).eq(at::arange(nnz, arg.options()).unsqueeze(1));
    g = g.mul(picked);
  } else if (op == MmReduce::Mean) {
    g = g.div(row_counts(self, g.scalar_type()).clamp_min_(1).index_select(0, e.rows).unsqueeze(1));
  }
  at::Tensor grad_self, grad_other;
  if (mask[0]) {
    at::Tensor values = g.mul(other.index_select(0, e.cols)).sum(1).to(e.values.scalar_type());
    grad_self = with_values(self, values);
  }
  if (mask[1]) {
    grad_other = at::zeros(other.sizes(), other.options())
                     .index_add_(0, e.cols, g.mul(e.values.unsqueeze(1)));
  }
  return {grad_self, grad_other};
}

// The sum of all entries: the sum of the values.
at::Tensor compressed_sum(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  return self.values().sum(dtype);
}

// ------------------------------------------------------------------ conversions

at::Tensor compressed_to_dense(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                               std::optional<bool> masked_grad) {
  if (self.dim() != 2 || self.dense_dim() != 0 ||
      (self.layout() != at::kSparseCsr && self.layout() != at::kSparseCsc))
    return cpu_route<at::_ops::_to_dense>(self, dtype, masked_grad);
  Entries e = entries_of(self);
  at::Tensor dense =
      at::zeros(self.sizes(), self.values().options().dtype(dtype.value_or(self.scalar_type())));
  return dense.index_put_({e.rows, e.cols}, e.values.to(dense.scalar_type()), true);
}

// CSR <-> CSC of a 2-d matrix: its entries in the other order (columns major, or rows),
// compressed along the other dim. PyTorch's conversion needs a CPU/CUDA kernel for it.
at::Tensor flipped(const at::Tensor& self, at::Layout layout) {
  Entries e = entries_of(self);
  const bool to_csr = layout == at::kSparseCsr;
  const at::Tensor& major = to_csr ? e.rows : e.cols;
  const at::Tensor& minor = to_csr ? e.cols : e.rows;
  const int64_t minor_size = self.size(to_csr ? 1 : 0);
  at::Tensor order =
      std::get<1>(major.mul(minor_size).add_(minor).sort(std::optional<bool>(true), 0));
  const at::Tensor& old_plain =
      self.layout() == at::kSparseCsr ? self.col_indices() : self.row_indices();
  const auto index_type = old_plain.scalar_type();
  at::Tensor compressed =
      coo_to_csr(major.index_select(0, order), self.size(to_csr ? 0 : 1), index_type == at::kInt);
  return at::_sparse_compressed_tensor_unsafe(
      compressed, minor.index_select(0, order).to(index_type), e.values.index_select(0, order),
      self.sizes(), e.values.options().layout(layout));
}
at::Tensor compressed_to_csr(const at::Tensor& self, std::optional<int64_t> dense_dim) {
  if (self.layout() == at::kSparseCsc && self.dim() == 2 && self.dense_dim() == 0 &&
      !dense_dim.has_value())
    return flipped(self, at::kSparseCsr);
  return at::native::sparse_compressed_to_sparse_csr(self, dense_dim);
}
at::Tensor compressed_to_csc(const at::Tensor& self, std::optional<int64_t> dense_dim) {
  if (self.layout() == at::kSparseCsr && self.dim() == 2 && self.dense_dim() == 0 &&
      !dense_dim.has_value())
    return flipped(self, at::kSparseCsc);
  return at::native::sparse_compressed_to_sparse_csc(self, dense_dim);
}

// to_sparse(layout=...) and to_sparse(sparse_dim) of a compressed tensor.
at::Tensor compressed_to_sparse(const at::Tensor& self, std::optional<at::Layout> layout,
                                at::OptionalIntArrayRef blocksize,
                                std::optional<int64_t> dense_dim) {
  return at::native::sparse_compressed_to_sparse(self, layout, blocksize, dense_dim);
}
at::Tensor compressed_to_coo(const at::Tensor& self, int64_t sparse_dim) {
  return at::native::sparse_compressed_to_sparse(self, sparse_dim);
}

}  // namespace

}  // namespace vkml_aten

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_convert_indices_from_coo_to_csr", TORCH_FN(vkml_aten::coo_to_csr));
  m.impl("_convert_indices_from_csr_to_coo", TORCH_FN(vkml_aten::csr_to_coo));
  m.impl("_to_sparse_csr", TORCH_FN(at::native::dense_to_sparse_csr));
  m.impl("_to_sparse_csc", TORCH_FN(at::native::dense_to_sparse_csc));
}

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_to_sparse_csr", TORCH_FN(at::native::coo_to_sparse_csr));
  m.impl("_to_sparse_csc", TORCH_FN(at::native::coo_to_sparse_csc));
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  // Structure: PyTorch's device-independent code.
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse_compressed));
  m.impl("crow_indices", TORCH_FN(at::native::crow_indices_sparse_csr));
  m.impl("col_indices", TORCH_FN(at::native::col_indices_sparse_csr));
  m.impl("ccol_indices", TORCH_FN(at::native::ccol_indices_sparse_csr));
  m.impl("row_indices", TORCH_FN(at::native::row_indices_sparse_csr));
  m.impl("values", TORCH_FN(at::native::values_sparse_csr));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse_csr));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse_csr));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse_csr));
  m.impl("clone", TORCH_FN(at::native::clone_sparse_compressed));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_compressed_));
  m.impl("resize_as_sparse_", TORCH_FN(at::native::resize_as_sparse_compressed_));
  m.impl("select.int", TORCH_FN(at::native::select_sparse_csr));
  m.impl("_to_sparse", TORCH_FN(vkml_aten::compressed_to_sparse));
  m.impl("_to_sparse.sparse_dim", TORCH_FN(vkml_aten::compressed_to_coo));
  m.impl("_to_sparse_csr", TORCH_FN(vkml_aten::compressed_to_csr));
  m.impl("_to_sparse_csc", TORCH_FN(vkml_aten::compressed_to_csc));
  // Math: vkml's dense ops over the entries.
  m.impl("_to_dense", TORCH_FN(vkml_aten::compressed_to_dense));
  m.impl("mm", TORCH_FN(vkml_aten::compressed_mm));
  m.impl("addmm", TORCH_FN(vkml_aten::compressed_addmm));
  m.impl("addmm.out", TORCH_FN(vkml_aten::compressed_addmm_out));
  m.impl("addmv", TORCH_FN(vkml_aten::compressed_addmv));
  m.impl("addmv.out", TORCH_FN(vkml_aten::compressed_addmv_out));
  m.impl("sparse_sampled_addmm", TORCH_FN(vkml_aten::sampled_addmm));
  m.impl("mul.Tensor", TORCH_FN(vkml_aten::compressed_mul));
  m.impl("add.Tensor", TORCH_FN(vkml_aten::compressed_add));
  m.impl("sum", TORCH_FN(vkml_aten::compressed_sum));
  m.impl("_sparse_mm_reduce_impl", TORCH_FN(vkml_aten::mm_reduce));
  m.impl("_sparse_mm_reduce_impl_backward", TORCH_FN(vkml_aten::mm_reduce_backward));
  // Ops that keep zeros zero, on the values (the CPU's list for compressed tensors).
  for (const char* name :
       {"abs",   "neg",    "sgn",   "sign",    "signbit", "sin",          "sinh",
        "tan",   "tanh",   "asin",  "asinh",   "atan",    "atanh",        "sqrt",
        "erf",   "erfinv", "expm1", "log1p",   "ceil",    "floor",        "round",
        "trunc", "frac",   "relu",  "deg2rad", "rad2deg", "conj_physical"}) {
    const std::string base(name);
    m.impl(base.c_str(), torch::CppFunction::makeFromBoxedFunction<&vkml_aten::on_values>());
    if (base != "signbit")
      m.impl((base + "_").c_str(),
             torch::CppFunction::makeFromBoxedFunction<&vkml_aten::on_values>());
  }
}
