#pragma once
// Elementwise kernels: one shader per storage dtype, the op picked by a
// specialization constant (shaders/op_codes.h).
#include <cstdint>

#include "vkml/ops/layout.h"
#include "vkml/runtime/device.h"
#include "vkml/shaders/op_codes.h"

namespace vkml::ops {

struct Elementwise {
  int op = OP_IDENTITY;
  DType dtype = DType::f32;  // storage dtype of the tensor inputs (and of out unless compare)
  bool compare = false;      // out is bool (uint8 0/1)
  uint32_t flags = 0;        // EW_IN0_BOOL, EW_BOOL_OUT, EW_HAS_MIN, EW_HAS_MAX
  int ninputs = 1;
  uint64_t ptr[4] = {};  // out, in0, in1, in2
  bool scalar[3] = {};   // input k is given by value in slot k
  Scalar slot[3];        // scalar inputs or op parameters (see op_codes.h)
  // A second fp32 parameter in the high half of slot k (float dtypes; see fparam).
  bool has_hi[3] = {};
  double hi[3] = {};
  MultiLayout layout;  // operand 0 = out, 1.. = inputs; innermost first
};

void run_elementwise(Device& dev, Elementwise e);

// True when the device has the elementwise kernels of a storage dtype (f16
// needs shaderFloat16, f64 shaderFloat64).
bool elementwise_supported(Device& dev, DType t);
// False for the ops the f64 kernels lack (GLSL has no double exp/log/sin/...). Defined
// by a source that tools/elementwise_ops.py generates from shaders/elementwise.comp.
bool elementwise_has_op(DType t, int op);
namespace elementwise_detail {
// True for the ops only a dtype's *_special variant computes (generated likewise).
bool special_only(DType t, int op);
}  // namespace elementwise_detail

// Fills a tensor (any layout) with a value.
void fill(Device& dev, const TensorRef& t, Scalar value);
// out[i] = start + i * step over a contiguous tensor.
void arange(Device& dev, const TensorRef& out, Scalar start, Scalar step);

// The name of an op code of shaders/op_codes.h in lower case ("add"), or null; the
// table is generated from that header at build time (tools/op_names.py).
const char* op_code_name(int32_t code);

}  // namespace vkml::ops
