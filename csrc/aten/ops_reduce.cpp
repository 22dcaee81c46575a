// Reductions: sum, mean, prod, max/min (with and without dim), amax/amin,
// argmax/argmin, all, any, var/std, nansum, aminmax, equal, trace, mode, and
// vector norms (linalg_vector_norm, norm, renorm).
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>
#include <cmath>

#include "aten/composite/complex.h"
#include "op_helpers.h"
#include "reduce_layout.h"
#include "value_bounds.h"
#include "vkml/ops/reduce.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::ReduceOp;

bool kernel_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kInt || t == at::kLong || t == at::kBool ||
         t == at::kByte || t == at::kDouble;
}

bool narrow_float(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

// Reduces `self` over `dims` with the values in dtype `vt`. Writes values
// (unless arg_only) and, when `indices` is given, int64 indices of the same shape.
at::Tensor run_reduce(const char* name, const at::Tensor& self, const std::vector<int64_t>& dims,
                      bool keepdim, ReduceOp op, at::ScalarType vt, double scale = 1.0,
                      at::Tensor* indices = nullptr, bool arg_only = false) {
  if (is_complex_storage(vt) && op == ReduceOp::Sum && !indices) {
    // sum and mean of complex values: of the float pairs, over the same dims.
    if (self.dim() == 0) return self.to(vt) * scale;
    at::Tensor pairs = at::view_as_real(self.to(vt).resolve_conj());
    const at::ScalarType real = vt == at::kComplexFloat ? at::kFloat : at::kDouble;
    return at::view_as_complex(run_reduce(name, pairs, dims, keepdim, op, real, scale));
  }
  if (vt == at::kBFloat16 || vt == at::kShort || vt == at::kChar) {
    // bfloat16 reduces in float32 and rounds once at the end, as PyTorch's CPU does;
    // int16 and int8 reduce in int32, whose sums and products wrap to the same low bits.
    const at::ScalarType wide = vt == at::kBFloat16 ? at::kFloat : at::kInt;
    at::Tensor r = run_reduce(name, self, dims, keepdim, op, wide, scale, indices, arg_only);
    return arg_only ? r : r.to(vt);
  }
  if (vt == at::kDouble && narrow_float(self.scalar_type()) && !arg_only &&
      !vkml_device(self).info().supports_fp64) {
    // A float64 result of a narrower float input (autograd asks for one through the
    // CPU's accumulate type, e.g. in renorm's backward) on a device without float64
    // arithmetic: it accumulates in float32 and widens.
    return run_reduce(name, self, dims, keepdim, op, at::kFloat, scale, indices).to(at::kDouble);
  }
  TORCH_CHECK_NOT_IMPLEMENTED(kernel_dtype(vt), name, " on vkml does not support ", vt, " yet");
  TORCH_CHECK_NOT_IMPLEMENTED(vt != at::kDouble || vkml_device(self).info().supports_fp64, name,
                              " on vkml: ", vkml_device(self).info().name,
                              " has no float64 arithmetic");
  if (vt == at::kDouble && scale != 1.0 && !arg_only) {
    // The kernel scales in float32: a float64 mean divides in float64 afterwards.
    at::Tensor r = run_reduce(name, self, dims, keepdim, op, vt, 1.0, indices);
    return r.mul_(scale);
  }
  at::Tensor in = self.scalar_type() == vt ? self : self.to(vt);
  auto shape = reduced_shape(in, dims, keepdim);
  at::Tensor values = at::empty(shape, in.options().dtype(arg_only ? at::kLong : vt));
  if (indices) *indices = arg_only ? values : at::empty(shape, in.options().dtype(at::kLong));
  if (values.numel() == 0) return values;
  ReduceLayout l = reduce_layout(in, dims);
  if (l.r == 0) {
    bool needs_values = op == ReduceOp::Max || op == ReduceOp::Min || op == ReduceOp::ArgMax ||
                        op == ReduceOp::ArgMin;
    if (needs_values && int64_t(dims.size()) < in.dim()) {  // a dim was given (the CPU's words)
      for (int64_t d : dims)
        TORCH_CHECK_INDEX(in.size(d) > 0, name, "(): Expected reduction dim ", d,
                          " to have non-zero size.");
    }
    TORCH_CHECK_INDEX(!needs_values, name,
                      "(): Expected reduction dim to be specified for input.numel() == 0. "
                      "Specify the reduction dim with the 'dim' argument.");
  }
  vkml::ops::ReduceArgs a;
  a.op = op;
  a.dtype = to_vkml(vt == at::kBool ? at::kByte : vt);
  a.in = addr(l.input);
  a.outer = l.outer;
  a.r = l.r;
  a.inner = l.inner;
  a.out = arg_only ? 0 : addr(values);
  a.indices = indices ? addr(*indices) : 0;
  a.scale = scale;
  guarded([&] { vkml::ops::reduce(vkml_device(self), a); });
  return values;
}

at::ScalarType sum_type(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), true) ? at::kLong : self.scalar_type();
}

at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  return run_reduce("sum", self, reduce_dims(self, dim), keepdim, ReduceOp::Sum,
                    sum_type(self, dtype));
}
at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out) {
  return write_out(out, sum_dim(self, dim, keepdim, dtype ? dtype : out.scalar_type()));
}
at::Tensor sum_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  return sum_dim(self, std::nullopt, false, dtype);
}

at::Tensor mean_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  at::ScalarType t = dtype.value_or(self.scalar_type());
  TORCH_CHECK(at::isFloatingType(t) || at::isComplexType(t),
              "mean(): could not infer output dtype. Input dtype must be either a floating "
              "point or complex dtype. Got: ",
              t);
  auto dims = reduce_dims(self, dim);
  int64_t r = 1;
  for (int64_t d : dims) r *= self.size(d);
  return run_reduce("mean", self, dims, keepdim, ReduceOp::Sum, t, 1.0 / double(r));
}
at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  return write_out(out, mean_dim(self, dim, keepdim, dtype ? dtype : out.scalar_type()));
}
at::Tensor mean_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  return mean_dim(self, std::nullopt, false, dtype);
}

// The reduce kernel has no complex or float64 product: those multiply pairwise.
bool pairwise_product(at::ScalarType t) { return at::isComplexType(t) || t == at::kDouble; }

at::Tensor prod_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  const at::ScalarType t = sum_type(self, dtype);
  if (pairwise_product(t)) return pairwise_prod(self.to(t).reshape(-1), 0, false);
  return run_reduce("prod", self, reduce_dims(self, std::nullopt), false, ReduceOp::Prod, t);
}
at::Tensor prod_dim(const at::Tensor& self, int64_t dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  const at::ScalarType t = sum_type(self, dtype);
  if (pairwise_product(t)) {
    const int64_t d = at::maybe_wrap_dim(dim, self.dim());
    // A 0-dim tensor is its own product, whatever keepdim says (as on the CPU).
    if (self.dim() == 0) return self.to(t).clone();
    return pairwise_prod(self.to(t), d, keepdim);
  }
  return run_reduce("prod", self, reduce_dims(self, at::IntArrayRef{dim}), keepdim, ReduceOp::Prod,
                    t);
}
at::Tensor& prod_out(const at::Tensor& self, int64_t dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  return write_out(out, prod_dim(self, dim, keepdim, dtype ? dtype : out.scalar_type()));
}

at::Tensor max_all(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0,
              "max(): Expected reduction dim to be specified for "
              "input.numel() == 0. Specify the reduction dim with the 'dim' "
              "argument.");
  return run_reduce("max", self, reduce_dims(self, std::nullopt), false, ReduceOp::Max,
                    self.scalar_type());
}
at::Tensor min_all(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0,
              "min(): Expected reduction dim to be specified for "
              "input.numel() == 0. Specify the reduction dim with the 'dim' "
              "argument.");
  return run_reduce("min", self, reduce_dims(self, std::nullopt), false, ReduceOp::Min,
                    self.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> minmax_dim(const char* name, ReduceOp op, const at::Tensor& self,
                                              int64_t dim, bool keepdim) {
  at::Tensor idx;
  at::Tensor v = run_reduce(name, self, reduce_dims(self, at::IntArrayRef{dim}), keepdim, op,
                            self.scalar_type(), 1.0, &idx);
  return {v, idx};
}
std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return minmax_dim("max", ReduceOp::Max, self, dim, keepdim);
}
std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return minmax_dim("min", ReduceOp::Min, self, dim, keepdim);
}
std::tuple<at::Tensor&, at::Tensor&> max_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& v, at::Tensor& i) {
  auto [rv, ri] = max_dim(self, dim, keepdim);
  check_out(v, rv.scalar_type());
  check_out(i, ri.scalar_type());
  write_out(v, rv);
  write_out(i, ri);
  return {v, i};
}
std::tuple<at::Tensor&, at::Tensor&> min_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& v, at::Tensor& i) {
  auto [rv, ri] = min_dim(self, dim, keepdim);
  check_out(v, rv.scalar_type());
  check_out(i, ri.scalar_type());
  write_out(v, rv);
  write_out(i, ri);
  return {v, i};
}

at::Tensor vk_amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return run_reduce("amax", self, reduce_dims(self, dim), keepdim, ReduceOp::Max,
                    self.scalar_type());
}
at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  return write_out_exact(out, vk_amax(self, dim, keepdim));
}
at::Tensor vk_amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return run_reduce("amin", self, reduce_dims(self, dim), keepdim, ReduceOp::Min,
                    self.scalar_type());
}
at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  return write_out_exact(out, vk_amin(self, dim, keepdim));
}

at::Tensor arg(const char* name, ReduceOp op, const at::Tensor& self, std::optional<int64_t> dim,
               bool keepdim) {
  at::Tensor idx;
  if (!dim) {
    // Over the flattened tensor; keepdim keeps every dim at size 1.
    at::Tensor flat = self.reshape({-1});
    run_reduce(name, flat, {0}, false, op, self.scalar_type(), 1.0, &idx, true);
    note_values(idx, 0, flat.numel() - 1);
    if (keepdim) idx = idx.reshape(std::vector<int64_t>(self.dim(), 1));
    return idx;
  }
  run_reduce(name, self, reduce_dims(self, at::IntArrayRef{*dim}), keepdim, op, self.scalar_type(),
             1.0, &idx, true);
  note_values(idx, 0, self.dim() == 0 ? 0 : self.size(*dim) - 1);
  return idx;
}
at::Tensor vk_argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg("argmax", ReduceOp::ArgMax, self, dim, keepdim);
}
at::Tensor& argmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out) {
  return write_out_exact(out, vk_argmax(self, dim, keepdim));
}
at::Tensor vk_argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg("argmin", ReduceOp::ArgMin, self, dim, keepdim);
}
at::Tensor& argmin_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out) {
  return write_out_exact(out, vk_argmin(self, dim, keepdim));
}

// all/any reduce booleans; uint8 inputs give uint8 results, as in PyTorch.
at::Tensor logical(const char* name, ReduceOp op, const at::Tensor& self,
                   at::OptionalIntArrayRef dim, bool keepdim) {
  at::ScalarType rt = self.scalar_type() == at::kByte ? at::kByte : at::kBool;
  at::Tensor b = self.scalar_type() == at::kBool ? self : self.ne(0);
  // all / any over an empty list of dims reduce nothing (unlike sum's legacy dim=[]).
  if (dim.has_value() && dim->empty()) return b.to(rt, /*non_blocking=*/false, /*copy=*/true);
  at::Tensor r = run_reduce(name, b, reduce_dims(self, dim), keepdim, op, at::kBool);
  return rt == at::kBool ? r : r.to(rt);
}
at::Tensor all_all(const at::Tensor& self) {
  return logical("all", ReduceOp::All, self, std::nullopt, false);
}
at::Tensor all_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return logical("all", ReduceOp::All, self, at::IntArrayRef{dim}, keepdim);
}
at::Tensor all_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  return logical("all", ReduceOp::All, self, dim, keepdim);
}
// all / any write bool, or uint8 (what they return for uint8 inputs), as on the CPU.
at::Tensor& logical_out(const char* name, at::Tensor& out, const at::Tensor& r) {
  TORCH_CHECK(out.scalar_type() == at::kBool || out.scalar_type() == at::kByte, name,
              " only supports bool tensor for result, got: ", out.scalar_type());
  return write_out(out, r);
}
at::Tensor& all_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  return logical_out("all", out, all_dim(self, dim, keepdim));
}
at::Tensor& all_all_out(const at::Tensor& self, at::Tensor& out) {
  return logical_out("all", out, all_all(self));
}
at::Tensor any_all(const at::Tensor& self) {
  return logical("any", ReduceOp::Any, self, std::nullopt, false);
}
at::Tensor any_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return logical("any", ReduceOp::Any, self, at::IntArrayRef{dim}, keepdim);
}
at::Tensor any_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  return logical("any", ReduceOp::Any, self, dim, keepdim);
}
at::Tensor& any_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  return logical_out("any", out, any_dim(self, dim, keepdim));
}
at::Tensor& any_all_out(const at::Tensor& self, at::Tensor& out) {
  return logical_out("any", out, any_all(self));
}

// Vector norms (clip_grad_norm_, _foreach_norm, torch.norm) from native
// elementwise ops and the reductions above.
at::Tensor vk_vector_norm(const at::Tensor& self, const at::Scalar& ord_s,
                          at::OptionalIntArrayRef dim, bool keepdim,
                          std::optional<at::ScalarType> dtype) {
  if (self.is_complex()) {  // the norm of the magnitudes, in the real dtype
    std::optional<at::ScalarType> real;
    if (dtype) real = c10::toRealValueType(*dtype);
    at::Tensor z = dtype ? self.to(*dtype) : self;
    return vk_vector_norm(z.abs(), ord_s, dim, keepdim, std::nullopt)
        .to(real.value_or(c10::toRealValueType(z.scalar_type())));
  }
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              self.scalar_type());
  if (dtype == at::kDouble && narrow_float(self.scalar_type())) {
    // As in run_reduce: float64 norms of narrower floats accumulate in float32.
    return vk_vector_norm(self, ord_s, dim, keepdim, at::kFloat).to(at::kDouble);
  }
  at::Tensor x = dtype && *dtype != self.scalar_type() ? self.to(*dtype) : self;
  if (x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16) {
    // Squares of 16-bit values overflow; accumulate in float32 as PyTorch does.
    return vk_vector_norm(x.to(at::kFloat), ord_s, dim, keepdim, std::nullopt).to(x.scalar_type());
  }
  double ord = ord_s.toDouble();
  auto dims = reduce_dims(x, dim);
  bool empty_reduction = false;
  for (int64_t d : dims) empty_reduction |= x.size(d) == 0;
  TORCH_CHECK(!(empty_reduction && ord < 0), "linalg.vector_norm cannot compute the ", ord,
              " norm on an empty tensor because the operation does not have an identity");
  at::IntArrayRef ds(dims);
  at::Tensor a = x.abs();
  if (std::isinf(ord)) {
    TORCH_CHECK(!empty_reduction, "linalg.vector_norm cannot compute the ", ord,
                " norm on an empty tensor because the operation does not have an identity");
    return ord > 0 ? at::amax(a, ds, keepdim) : at::amin(a, ds, keepdim);
  }
  if (ord == 0) return at::sum(a.ne(0), ds, keepdim, x.scalar_type());
  if (ord == 1) return at::sum(a, ds, keepdim);
  if (ord == 2) return at::sum(a * a, ds, keepdim).sqrt();
  return at::sum(a.pow(ord), ds, keepdim).pow(1.0 / ord);
}
at::Tensor& vk_vector_norm_out(const at::Tensor& self, const at::Scalar& ord,
                               at::OptionalIntArrayRef dim, bool keepdim,
                               std::optional<at::ScalarType> dtype, at::Tensor& out) {
  return write_out_exact(out, vk_vector_norm(self, ord, dim, keepdim, dtype));
}

// torch.norm's overloads are linalg_vector_norm with p = 2 by default.
at::Tensor vk_norm_dtype(const at::Tensor& self, const std::optional<at::Scalar>& p,
                         at::IntArrayRef dim, bool keepdim, at::ScalarType dtype) {
  return vk_vector_norm(self, p.value_or(2.0), dim, keepdim, dtype);
}
at::Tensor vk_norm(const at::Tensor& self, const std::optional<at::Scalar>& p, at::IntArrayRef dim,
                   bool keepdim) {
  return vk_vector_norm(self, p.value_or(2.0), dim, keepdim, std::nullopt);
}
at::Tensor& vk_norm_dtype_out(const at::Tensor& self, const std::optional<at::Scalar>& p,
                              at::IntArrayRef dim, bool keepdim, at::ScalarType dtype,
                              at::Tensor& out) {
  return write_out_exact(out, vk_norm_dtype(self, p, dim, keepdim, dtype));
}
at::Tensor& vk_norm_out(const at::Tensor& self, const std::optional<at::Scalar>& p,
                        at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  return write_out_exact(out, vk_norm(self, p, dim, keepdim));
}

// renorm: each slice along `dim` whose p-norm exceeds maxnorm is scaled by
// maxnorm / (norm + 1e-7). As on the CPU, the norm and the factor are float32
// for 16-bit inputs and the factor is rounded to the input dtype before the product.
at::Tensor& vk_renorm_out(const at::Tensor& self, const at::Scalar& p, int64_t dim,
                          const at::Scalar& maxnorm, at::Tensor& out) {
  check_out(out, self.scalar_type());
  TORCH_CHECK(p.toDouble() > 0.0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(maxnorm.toDouble() >= 0.0, "renorm: expected maxnorm to be >= 0 but got ",
              maxnorm.toDouble());
  TORCH_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(),
              " dimensions");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "renorm on vkml expects a floating point or complex input, got ", self.scalar_type());
  dim = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != dim) dims.push_back(d);
  // A complex input's norm is of the magnitudes, real (as on the CPU).
  const at::ScalarType t = self.scalar_type();
  at::ScalarType acc = t == at::kDouble || t == at::kComplexDouble ? at::kDouble : at::kFloat;
  // (A dtype would convert a complex input first, dropping its imaginary parts.)
  at::Tensor norm = vk_vector_norm(self, p, at::IntArrayRef(dims), /*keepdim=*/true,
                                   self.is_complex() ? std::nullopt : std::optional(acc));
  at::Tensor limit = at::scalar_tensor(maxnorm, norm.options());
  at::Tensor factor = at::where(norm > limit, limit / (norm + 1e-7), 1.0);
  at::Tensor r = self * factor.to(self.scalar_type());
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}
at::Tensor vk_renorm(const at::Tensor& self, const at::Scalar& p, int64_t dim,
                     const at::Scalar& maxnorm) {
  at::Tensor out = at::empty({0}, self.options());
  return vk_renorm_out(self, p, dim, maxnorm, out);
}
at::Tensor& vk_renorm_(at::Tensor& self, const at::Scalar& p, int64_t dim,
                       const at::Scalar& maxnorm) {
  return vk_renorm_out(self, p, dim, maxnorm, self);
}

// trace: the sum of the diagonal view (integers sum to int64, as on the CPU).
at::Tensor vk_trace(const at::Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool,
                              "\"trace\" not implemented for 'Bool'");
  return sum_dim(self.diagonal(), std::nullopt, false, std::nullopt);
}

// mode along a dim: the most frequent value and an index of it. A stable sort
// puts equal values in runs ordered by index; each position gets its run length
// so far (position - start of its run + 1, the start from a running max), and the
// first maximum of that marks the end of the first longest run: the smallest of
// the most frequent values with its last index, the CPU's choice (its sort of
// (value, index) keeps short rows in index order).
std::tuple<at::Tensor, at::Tensor> vk_mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::TensorOptions lopt = self.options().dtype(at::kLong);
  if (self.dim() == 0) return {self.clone(), at::zeros({}, lopt)};
  int64_t n = self.size(dim);
  TORCH_CHECK_INDEX(n > 0, "mode(): Expected reduction dim ", dim, " to have non-zero size.");
  auto shape = reduced_shape(self, {dim}, keepdim);
  if (self.numel() == 0) return {at::empty(shape, self.options()), at::empty(shape, lopt)};
  // bfloat16 sorts as its exact float32 value.
  at::Tensor x = self.scalar_type() == at::kBFloat16 ? self.to(at::kFloat) : self;
  auto [sorted, perm] = at::sort(x.movedim(dim, -1), /*stable=*/true, -1, false);
  at::Tensor pos = at::arange(n, lopt);
  at::Tensor starts_run = at::ones(sorted.sizes(), self.options().dtype(at::kBool));
  if (n > 1) {
    starts_run.narrow(-1, 1, n - 1)
        .copy_(sorted.narrow(-1, 1, n - 1).ne(sorted.narrow(-1, 0, n - 1)));
  }
  at::Tensor run_start = std::get<0>(at::where(starts_run, pos, 0).cummax(-1));
  at::Tensor best = at::argmax(pos - run_start, -1, /*keepdim=*/true);
  at::Tensor values = sorted.gather(-1, best).movedim(-1, dim);
  at::Tensor idx = perm.gather(-1, best).movedim(-1, dim);
  if (!keepdim) {
    values = values.squeeze(dim);
    idx = idx.squeeze(dim);
  }
  return {values.to(self.scalar_type()), idx};
}
std::tuple<at::Tensor&, at::Tensor&> vk_mode_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& v, at::Tensor& i) {
  auto [rv, ri] = vk_mode(self, dim, keepdim);
  TORCH_CHECK(v.scalar_type() == rv.scalar_type(), "expected scalar type '", rv.scalar_type(),
              "' but got '", v.scalar_type(), "' for values output");
  TORCH_CHECK(i.scalar_type() == at::kLong, "expected scalar type 'Long' but got '",
              i.scalar_type(), "' for indices output");
  check_out_device(v);
  check_out_device(i);
  write_out(v, rv);
  write_out(i, ri);
  return {v, i};
}

// var / std with Bessel-style correction: sum((x - mean)^2) / max(n - correction, 0)
// from native reductions (two passes: exact where one-pass formulas cancel).
std::tuple<at::Tensor, at::Tensor> var_and_mean(const char* name, const at::Tensor& self,
                                                at::OptionalIntArrayRef dim,
                                                const std::optional<at::Scalar>& correction,
                                                bool keepdim) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()), name,
              " only supports floating point and complex dtypes");
  if (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16) {
    auto [v, mu] = var_and_mean(name, self.to(at::kFloat), dim, correction, keepdim);
    return {v.to(self.scalar_type()), mu.to(self.scalar_type())};
  }
  auto dims = reduce_dims(self, dim);
  int64_t n = 1;
  for (int64_t d : dims) n *= self.size(d);
  at::IntArrayRef ds(dims);
  at::Tensor mean = at::mean(self, ds, /*keepdim=*/true);
  at::Tensor dev = self - mean;
  double c = correction.has_value() ? correction->toDouble() : 1.0;
  // |x - mean|^2: the squares of both parts for complex x (a real variance).
  at::Tensor square =
      dev.is_complex() ? at::real(dev).square() + at::imag(dev).square() : dev * dev;
  at::Tensor var = at::sum(square, ds, keepdim) / std::max(double(n) - c, 0.0);
  return {var, keepdim ? mean : mean.squeeze(ds)};
}
at::Tensor vk_var(const at::Tensor& self, at::OptionalIntArrayRef dim,
                  const std::optional<at::Scalar>& correction, bool keepdim) {
  return std::get<0>(var_and_mean("var", self, dim, correction, keepdim));
}
at::Tensor& vk_var_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                       const std::optional<at::Scalar>& correction, bool keepdim, at::Tensor& out) {
  return write_out_castable(out, vk_var(self, dim, correction, keepdim));
}
at::Tensor vk_std(const at::Tensor& self, at::OptionalIntArrayRef dim,
                  const std::optional<at::Scalar>& correction, bool keepdim) {
  return std::get<0>(var_and_mean("std", self, dim, correction, keepdim)).sqrt();
}
at::Tensor& vk_std_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                       const std::optional<at::Scalar>& correction, bool keepdim, at::Tensor& out) {
  return write_out_castable(out, vk_std(self, dim, correction, keepdim));
}
std::tuple<at::Tensor, at::Tensor> vk_var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                               const std::optional<at::Scalar>& correction,
                                               bool keepdim) {
  return var_and_mean("var_mean", self, dim, correction, keepdim);
}
std::tuple<at::Tensor, at::Tensor> vk_std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                               const std::optional<at::Scalar>& correction,
                                               bool keepdim) {
  auto [v, mu] = var_and_mean("std_mean", self, dim, correction, keepdim);
  return {v.sqrt(), mu};
}

at::Tensor vk_nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype) {
  at::Tensor x = at::isFloatingType(self.scalar_type()) ? at::where(self.isnan(), 0, self) : self;
  return sum_dim(x, dim, keepdim, dtype);
}
at::Tensor& vk_nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                          std::optional<at::ScalarType> dtype, at::Tensor& out) {
  return write_out(out, vk_nansum(self, dim, keepdim, dtype ? dtype : out.scalar_type()));
}

std::tuple<at::Tensor, at::Tensor> vk_aminmax(const at::Tensor& self, std::optional<int64_t> dim,
                                              bool keepdim) {
  TORCH_CHECK(self.numel() > 0 || dim.has_value(),
              "aminmax(): cannot compute aminmax over an empty dimension as the operation has "
              "no identity.");
  if (!dim) {
    at::Tensor flat = self.reshape({-1});
    at::Tensor lo = vk_amin(flat, {0}, false), hi = vk_amax(flat, {0}, false);
    if (keepdim) {
      std::vector<int64_t> ones(self.dim(), 1);
      return {lo.reshape(ones), hi.reshape(ones)};
    }
    return {lo, hi};
  }
  return {vk_amin(self, {*dim}, keepdim), vk_amax(self, {*dim}, keepdim)};
}
std::tuple<at::Tensor&, at::Tensor&> vk_aminmax_out(const at::Tensor& self,
                                                    std::optional<int64_t> dim, bool keepdim,
                                                    at::Tensor& lo, at::Tensor& hi) {
  auto [a, b] = vk_aminmax(self, dim, keepdim);
  check_out(lo, a.scalar_type());
  check_out(hi, b.scalar_type());
  write_out(lo, a);
  write_out(hi, b);
  return {lo, hi};
}

// torch.equal: same shape and every element equal (one value read back).
bool vk_equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(),
              "Cannot compare two tensors on different devices. "
              "Got: ",
              self.device(), " and ", other.device());
  if (self.sizes() != other.sizes()) return false;
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("var.correction", TORCH_FN(vk_var));
  m.impl("var.correction_out", TORCH_FN(vk_var_out));
  m.impl("std.correction", TORCH_FN(vk_std));
  m.impl("std.correction_out", TORCH_FN(vk_std_out));
  m.impl("var_mean.correction", TORCH_FN(vk_var_mean));
  m.impl("std_mean.correction", TORCH_FN(vk_std_mean));
  m.impl("nansum", TORCH_FN(vk_nansum));
  m.impl("nansum.out", TORCH_FN(vk_nansum_out));
  m.impl("aminmax", TORCH_FN(vk_aminmax));
  m.impl("aminmax.out", TORCH_FN(vk_aminmax_out));
  m.impl("equal", TORCH_FN(vk_equal));
  m.impl("linalg_vector_norm", TORCH_FN(vk_vector_norm));
  m.impl("linalg_vector_norm.out", TORCH_FN(vk_vector_norm_out));
  m.impl("norm.ScalarOpt_dim", TORCH_FN(vk_norm));
  m.impl("norm.ScalarOpt_dim_dtype", TORCH_FN(vk_norm_dtype));
  m.impl("norm.out", TORCH_FN(vk_norm_out));
  m.impl("norm.dtype_out", TORCH_FN(vk_norm_dtype_out));
  m.impl("renorm", TORCH_FN(vk_renorm));
  m.impl("renorm_", TORCH_FN(vk_renorm_));
  m.impl("renorm.out", TORCH_FN(vk_renorm_out));
  m.impl("trace", TORCH_FN(vk_trace));
  m.impl("mode", TORCH_FN(vk_mode));
  m.impl("mode.values", TORCH_FN(vk_mode_out));
  m.impl("sum", TORCH_FN(sum_all));
  m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
  m.impl("sum.IntList_out", TORCH_FN(sum_out));
  m.impl("mean", TORCH_FN(mean_all));
  m.impl("mean.dim", TORCH_FN(mean_dim));
  m.impl("mean.out", TORCH_FN(mean_out));
  m.impl("prod", TORCH_FN(prod_all));
  m.impl("prod.dim_int", TORCH_FN(prod_dim));
  m.impl("prod.int_out", TORCH_FN(prod_out));
  m.impl("max", TORCH_FN(max_all));
  m.impl("min", TORCH_FN(min_all));
  m.impl("max.dim", TORCH_FN(max_dim));
  m.impl("max.dim_max", TORCH_FN(max_dim_out));
  m.impl("min.dim", TORCH_FN(min_dim));
  m.impl("min.dim_min", TORCH_FN(min_dim_out));
  m.impl("amax", TORCH_FN(vk_amax));
  m.impl("amax.out", TORCH_FN(amax_out));
  m.impl("amin", TORCH_FN(vk_amin));
  m.impl("amin.out", TORCH_FN(amin_out));
  m.impl("argmax", TORCH_FN(vk_argmax));
  m.impl("argmax.out", TORCH_FN(argmax_out));
  m.impl("argmin", TORCH_FN(vk_argmin));
  m.impl("argmin.out", TORCH_FN(argmin_out));
  m.impl("all", TORCH_FN(all_all));
  m.impl("all.dim", TORCH_FN(all_dim));
  m.impl("all.dims", TORCH_FN(all_dims));
  m.impl("all.out", TORCH_FN(all_out));
  m.impl("all.all_out", TORCH_FN(all_all_out));
  m.impl("any", TORCH_FN(any_all));
  m.impl("any.dim", TORCH_FN(any_dim));
  m.impl("any.dims", TORCH_FN(any_dims));
  m.impl("any.out", TORCH_FN(any_out));
  m.impl("any.all_out", TORCH_FN(any_all_out));
}

}  // namespace vkml_aten
