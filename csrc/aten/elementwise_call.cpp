#include "elementwise_call.h"

#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>

#include <c10/util/SmallVector.h>

#include <algorithm>

#include "aten/composite/complex.h"
#include "op_helpers.h"
#include "value_bounds.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/elementwise_range.h"
#include "vkml/shaders/op_codes.h"
#include "vkml_tensor.h"

namespace vkml_aten {

bool elementwise_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kDouble ||
         t == at::kLong || t == at::kInt || t == at::kShort || t == at::kChar || t == at::kByte ||
         t == at::kBool;
}

namespace {

// At most three inputs: kept inline, so the per-op path allocates nothing for them.
using Inputs = c10::SmallVector<at::Tensor, 3>;

bool is_cpu_scalar(const at::Tensor& t) { return t.device().is_cpu() && t.dim() == 0; }

vkml::Scalar scalar_for(const at::Scalar& s, at::ScalarType compute) {
  if (at::isFloatingType(compute)) return vkml::Scalar::of(s.toDouble());
  if (compute == at::kBool) return vkml::Scalar::of_int(s.toBool() ? 1 : 0);
  return vkml::Scalar::of_int(s.toLong());
}

at::ScalarType compute_type(const EwOp& op, const Inputs& in) {
  at::ScalarType t;
  if (op.result == ResultType::FromWhere) {
    t = at::result_type(in[1], in[2]);
  } else if (in.size() == 1) {
    t = in[0].scalar_type();
  } else {
    t = at::native::result_type(at::ITensorListRef(at::TensorList(in)));
  }
  if (op.result == ResultType::PromoteToFloat && at::isIntegralType(t, /*includeBool=*/true))
    t = c10::typeMetaToScalarType(c10::get_default_dtype());
  return t;
}

// The vkml device among the inputs (or of out).
std::optional<at::Device> find_device(const Inputs& in, const at::Tensor& out) {
  if (out.defined() && out.device().is_privateuseone()) return out.device();
  for (const auto& t : in)
    if (t.defined() && t.device().is_privateuseone()) return t.device();
  return std::nullopt;
}

bool has_kernel(const EwOp& op, at::ScalarType compute, at::Device device) {
  // Complex math composes float kernels or runs complex64 kernels of its own
  // (composite/complex.cpp); the rest takes the counted CPU route.
  if (at::isComplexType(compute)) return complex_op_supported(op.code, compute);
  if (compute != at::kDouble) return true;
  vkml::Device& dev = device_at(device.index());
  return vkml::ops::elementwise_supported(dev, vkml::DType::f64) &&
         vkml::ops::elementwise_has_op(vkml::DType::f64, op.code);
}

// The range of an integer result, from what the inputs are known to hold
// (value_bounds.h): indices computed on the device then need no read-back to be
// checked. Asked before the kernel, which may overwrite an input.
std::optional<vkml::IntRange> result_range(const EwOp& op, at::ScalarType result, const Inputs& in,
                                           const EwParams& params) {
  vkml::ops::RangeArgs a;
  a.op = op.code;
  a.bits = result == at::kInt ? 32 : 64;
  for (size_t k = 0; k < in.size() && k < 3; ++k) {
    const at::Tensor& t = in[k];
    if (!is_cpu_scalar(t)) {
      a.in[k] = known_values(t);
    } else if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
      const int64_t v = t.item<int64_t>();
      a.in[k] = vkml::IntRange{v, v};
    }
  }
  if ((op.code == OP_ADD || op.code == OP_SUB) && params.s2) a.alpha = params.s2->toLong();
  if (op.code == OP_CLAMP) {
    if (params.flags & EW_HAS_MIN) a.min = params.s1->toLong();
    if (params.flags & EW_HAS_MAX) a.max = params.s2->toLong();
  }
  return vkml::ops::elementwise_range(a);
}

}  // namespace

bool runs_on_cpu(const EwOp& op, std::initializer_list<at::Tensor> inputs) {
  Inputs in(inputs.begin(), inputs.end());
  for (const auto& t : in)
    if (!t.defined()) return false;
  auto device = find_device(in, at::Tensor());
  if (!device) return false;
  return !has_kernel(op, compute_type(op, in), *device);
}

namespace {

// Launches e over the iterator's dims (fastest first) without those of size 1; past the
// kernel's 12 (an einsum's 13-dim intermediate whose dims would not merge), once per
// index of the outermost dim.
void launch_over(vkml::Device& dev, vkml::ops::Elementwise& e, const at::TensorIteratorBase& it) {
  c10::SmallVector<int, 16> dims;
  for (int d = 0; d < it.ndim(); ++d)
    if (it.shape()[d] != 1) dims.push_back(d);
  if (int(dims.size()) > vkml::kMaxDims) {
    const int outer = dims.back();
    for (int64_t i = 0; i < it.shape()[outer]; ++i) {
      at::TensorIterator slice(it);
      slice.narrow(outer, i, 1);
      launch_over(dev, e, slice);
    }
    return;
  }
  const int ndim = std::max<int>(int(dims.size()), 1);
  e.layout.ndim = ndim;
  for (int j = 0; j < ndim; ++j) e.layout.sizes[j] = dims.empty() ? 1 : it.shape()[dims[j]];
  for (int k = 0; k <= e.ninputs; ++k) {
    if (k > 0 && e.scalar[k - 1]) continue;
    e.ptr[k] = reinterpret_cast<uint64_t>(it.data_ptr(k));
    const int64_t elem = int64_t(it.element_size(k));
    for (int j = 0; j < ndim; ++j)
      e.layout.strides[k][j] = dims.empty() ? 1 : it.strides(k)[dims[j]] / elem;
  }
  guarded([&] { vkml::ops::run_elementwise(dev, e); });
}

}  // namespace

at::Tensor elementwise(const EwOp& op, std::initializer_list<at::Tensor> inputs_list,
                       const at::Tensor& out, const EwParams& params) {
  Inputs in(inputs_list.begin(), inputs_list.end());
  at::ScalarType compute = compute_type(op, in);
  if (params.fits != ScalarFits::Unchecked) {
    const at::ScalarType t = params.fits == ScalarFits::Opmath ? opmath_of(compute) : compute;
    for (const auto* s : {&params.s0, &params.s1, &params.s2})
      if (s->has_value()) check_scalar_fits(**s, t);
  }
  if (at::isComplexType(compute)) {
    auto found = find_device(in, out);
    TORCH_CHECK(found.has_value(), op.name, ": no vkml tensor among the arguments");
    return complex_elementwise(op.code, op.name, std::vector<at::Tensor>(in.begin(), in.end()), out,
                               params.s2, compute, *found);
  }
  // PyTorch's "not implemented for '<dtype>'" is a NotImplementedError.
  TORCH_CHECK_NOT_IMPLEMENTED(!(op.integral_only && at::isFloatingType(compute)), "\"", op.name,
                              "\" not implemented for '", c10::toString(compute), "'");
  TORCH_CHECK_NOT_IMPLEMENTED(!(op.float_only && !at::isFloatingType(compute)), "\"", op.name,
                              "\" not implemented for '", c10::toString(compute), "'");
  TORCH_CHECK_NOT_IMPLEMENTED(!(op.no_bool && compute == at::kBool), "\"", op.name,
                              "\" not implemented for 'Bool'");
  at::ScalarType result_dtype = op.result == ResultType::Bool ? at::kBool : compute;
  TORCH_CHECK_NOT_IMPLEMENTED(elementwise_dtype(compute), op.name, " on vkml does not support ",
                              compute, " yet");
  auto found = find_device(in, out);
  TORCH_CHECK(found.has_value(), op.name, ": no vkml tensor among the arguments");
  at::Device device = *found;
  if (C10_UNLIKELY(!has_kernel(op, compute, device))) {
    const vkml::DeviceInfo& info = device_at(device.index()).info();
    TORCH_CHECK_NOT_IMPLEMENTED(info.supports_fp64, op.name, " on vkml: ", info.name,
                                " has no float64 arithmetic; convert with .float() (runs on the "
                                "device) or compute on the CPU");
    TORCH_CHECK_NOT_IMPLEMENTED(false, op.name,
                                " has no float64 kernel on this vkml device (GLSL has no "
                                "double-precision transcendental functions); compute in float32 "
                                "or on the CPU");
  }
  TORCH_CHECK(params.fp.empty() || at::isFloatingType(compute), op.name,
              ": expected a floating-point input, got ", compute);
  // float64 kernels take their float parameters as doubles, one per slot: 2, 0, 1.
  const bool double_params = compute == at::kDouble;
  TORCH_INTERNAL_ASSERT(!double_params || params.fp.size() <= 3);

  // Inputs in the compute dtype (the kernels read one dtype); Python scalars
  // stay on the CPU and travel by value unless an op parameter takes their slot.
  bool slot_taken[3] = {params.s0.has_value() || params.fp.size() > (double_params ? 1 : 2),
                        params.s1.has_value() || (double_params && params.fp.size() > 2),
                        params.s2.has_value() || !params.fp.empty()};
  for (size_t k = 0; k < in.size(); ++k) {
    at::Tensor& t = in[k];
    at::ScalarType want = op.result == ResultType::FromWhere && k == 0 ? at::kBool : compute;
    if (is_cpu_scalar(t)) {
      if (slot_taken[k]) t = t.to(device, want);
      continue;
    }
    TORCH_CHECK(t.device() == device,  // CUDA's words (TensorIterator's device check)
                "Expected all tensors to be on the same device, but found at least two devices, ",
                device, " and ", t.device(), "!");
    if (t.scalar_type() != want) t = t.to(want);
  }

  // An out= of another dtype gets the result through a temporary.
  if (out.defined() && out.scalar_type() != result_dtype) {
    TORCH_CHECK(!op.out_exact, "Found dtype ", out.scalar_type(), " but expected ", result_dtype);
    TORCH_CHECK(at::canCast(result_dtype, out.scalar_type()), "result type ", result_dtype,
                " can't be cast to the desired output type ", out.scalar_type());
    at::Tensor tmp = elementwise(op, inputs_list, at::Tensor(), params);
    // In place (a.eq_(b), a.lt_(b): a bool result into a's dtype): the iterator's shape
    // check, which this path around it skipped (a.eq_(b) resized a).
    check_in_place_shape(inputs_list, out, tmp.sizes());
    at::native::resize_output(out, tmp.sizes());
    out.copy_(tmp);
    return out;
  }

  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(true)
      .check_all_same_dtype(false)
      .allow_cpu_scalars(true)
      .declare_static_dtype(result_dtype)
      .add_output(out);
  for (auto& t : in) config.add_const_input(t);
  at::TensorIterator iter = config.build();
  at::Tensor result = iter.output();
  if (iter.numel() == 0) return result;

  std::optional<vkml::IntRange> range;
  if (result_dtype == at::kLong || result_dtype == at::kInt)
    range = result_range(op, result_dtype, in, params);

  vkml::ops::Elementwise e;
  e.op = op.code;
  e.dtype = to_vkml(compute == at::kBool ? at::kByte : compute);
  e.compare = op.result == ResultType::Bool;
  e.ninputs = int(in.size());
  e.flags = params.flags;
  if (op.result == ResultType::FromWhere) e.flags |= EW_IN0_BOOL;
  if (result_dtype == at::kBool && !e.compare) e.flags |= EW_BOOL_OUT;
  if (params.s0) e.slot[0] = scalar_for(*params.s0, compute);
  if (params.s1) e.slot[1] = scalar_for(*params.s1, compute);
  if (params.s2) e.slot[2] = scalar_for(*params.s2, compute);
  for (size_t j = 0; j < params.fp.size(); ++j) {
    if (double_params) {
      e.slot[j == 0 ? 2 : j == 1 ? 0 : 1] = vkml::Scalar::of(params.fp[j]);
      continue;
    }
    int slot = j < 2 ? 2 : 0;
    if (j % 2 == 0) {
      e.slot[slot] = vkml::Scalar::of(params.fp[j]);
    } else {
      e.has_hi[slot] = true;
      e.hi[slot] = params.fp[j];
    }
  }

  for (int k = 1; k <= e.ninputs; ++k) {
    if (!iter.is_cpu_scalar(k)) continue;
    e.scalar[k - 1] = true;
    at::ScalarType st = op.result == ResultType::FromWhere && k == 1 ? at::kBool : compute;
    e.slot[k - 1] = scalar_for(in[k - 1].item(), st);
  }
  launch_over(vkml_device(result), e, iter);
  if (range) note_values(result, range->lo, range->hi);
  return result;
}

}  // namespace vkml_aten
