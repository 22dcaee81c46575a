#include "op_helpers.h"

#include <ATen/Dispatch.h>
#include <ATen/native/Resize.h>

#include <algorithm>

#include "vkml/ops/value_check.h"
#include "vkml/runtime/device_errors.h"
#include "vkml/shaders/device_error.h"
#include "vkml_tensor.h"

namespace vkml_aten {

void check_out_device(const at::Tensor& out) {
  TORCH_CHECK(out.device().type() == c10::DeviceType::PrivateUse1,
              "Expected out tensor to be on the device of the inputs (vkml), but got ",
              out.device(), " instead");
}

void check_out(const at::Tensor& out, at::ScalarType dtype) {
  TORCH_CHECK(out.scalar_type() == dtype, "Expected out tensor to have dtype ",
              c10::scalarTypeToTypeMeta(dtype), ", but got ", out.dtype(), " instead");
  check_out_device(out);
}

at::Tensor& write_out_exact(at::Tensor& out, const at::Tensor& r) {
  check_out(out, r.scalar_type());
  return write_out(out, r);
}

void check_out_castable(const at::Tensor& out, at::ScalarType dtype) {
  TORCH_CHECK(c10::canCast(dtype, out.scalar_type()), "result type ", dtype,
              " can't be cast to the desired output type ", out.scalar_type());
  check_out_device(out);
}

void check_in_place_shape(at::ArrayRef<at::Tensor> inputs, const at::Tensor& out,
                          at::IntArrayRef shape) {
  const bool in_place = std::any_of(inputs.begin(), inputs.end(),
                                    [&](const at::Tensor& t) { return t.is_same(out); });
  TORCH_CHECK(!in_place || shape == out.sizes(), "output with shape ", out.sizes(),
              " doesn't match the broadcast shape ", shape);
}

at::Tensor& write_out_castable(at::Tensor& out, const at::Tensor& r) {
  check_out_castable(out, r.scalar_type());
  return write_out(out, r);
}

at::Tensor& write_out(at::Tensor& out, const at::Tensor& r) {
  check_out_device(out);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

void check_range_later(const at::Tensor& values, int64_t lo, int64_t hi,
                       const std::string& message) {
  if (values.numel() == 0) return;
  at::Tensor v = values.contiguous();
  const uint32_t id = vkml::register_assert_message(message);
  guarded([&] {
    vkml::ops::check_int_range(vkml_device(v), ref(v), lo, hi, DEVICE_ERROR_ASSERT,
                               DEVICE_ERROR_ASSERT, 0, id);
  });
}

void check_scalar_fits(const at::Scalar& s, at::ScalarType t) {
  // the dtypes a vkml tensor computes with (uint16/32/64 are storage: their ops raise)
  if (!can_hold(t) || is_unsigned_storage(t)) return;
  AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3(at::kHalf, at::kBFloat16, at::kBool, t,
                                         "check_scalar_fits", [&] { (void)s.to<scalar_t>(); });
}

at::Tensor sparse_entries_times_dense(const at::Tensor& rows, const at::Tensor& cols,
                                      const at::Tensor& values, const at::Tensor& dense,
                                      int64_t n_rows) {
  const at::ScalarType type = dense.scalar_type();
  const at::ScalarType acc = type == at::kHalf || type == at::kBFloat16 ? at::kFloat : type;
  at::Tensor terms = dense.index_select(0, cols).to(acc).mul_(values.to(acc).unsqueeze(1));
  return at::zeros({n_rows, dense.size(1)}, dense.options().dtype(acc))
      .index_add_(0, rows, terms)
      .to(type);
}

void alert_atomic_adds(const std::string& op) {
  at::globalContext().alertNotDeterministic(op + " on vkml");
}

bool channels_last_layout(const at::Tensor& t) {
  return (t.dim() == 4 || t.dim() == 5) &&
         t.suggest_memory_format() != at::MemoryFormat::Contiguous;
}

at::Tensor in_layout_of(const at::Tensor& r, const at::Tensor& input) {
  if (r.dim() != input.dim() || !channels_last_layout(input)) return r;
  return r.contiguous(input.suggest_memory_format());
}

at::ScalarType opmath_of(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 ? at::kFloat : t;
}

void check_float_storage(const char* op, at::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(is_float_storage(t), op,
                              " on vkml supports float32, float16 and bfloat16, got ", t);
}

void for_each_kernel_view(const std::vector<at::Tensor>& ts,
                          const std::function<void(const std::vector<at::Tensor>&)>& fn) {
  const at::Tensor& first = ts.front();
  if (first.dim() <= vkml::kMaxDims) return fn(ts);
  std::vector<int64_t> ones;
  for (int64_t d = 0; d < first.dim(); ++d)
    if (first.size(d) == 1) ones.push_back(d);
  std::vector<at::Tensor> views;
  if (!ones.empty()) {
    for (const at::Tensor& t : ts) views.push_back(t.squeeze(ones));
    return for_each_kernel_view(views, fn);
  }
  int64_t smallest = 0;
  for (int64_t d = 1; d < first.dim(); ++d)
    if (first.size(d) < first.size(smallest)) smallest = d;
  for (int64_t i = 0; i < first.size(smallest); ++i) {
    views.clear();
    for (const at::Tensor& t : ts) views.push_back(t.select(smallest, i));
    for_each_kernel_view(views, fn);
  }
}

bool float64_without_arithmetic(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble && !vkml_device(t).info().supports_fp64;
}

bool float_kernel_dtype(const at::Tensor& t) {
  return is_float_storage(t.scalar_type()) ||
         (t.scalar_type() == at::kDouble && vkml_device(t).info().supports_fp64);
}

bool past_loop_limit(const at::Tensor& t, int64_t iterations) {
  const uint32_t limit = vkml_device(t).info().loop_iteration_limit;
  return limit && iterations > int64_t(limit / 2);
}

bool line_walk_too_long(const at::Tensor& t, int64_t d, int passes) {
  return d + 1 < t.dim() && past_loop_limit(t, t.size(d) * passes);
}

}  // namespace vkml_aten
