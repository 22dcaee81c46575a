#version 450
// Checks every value of a contiguous tensor and notes the first failure in the
// device error record (device_error.glsl), for checks PyTorch's CPU makes on
// values (one_hot classes, embedding_bag offsets, multinomial probabilities)
// without a host wait. One thread per value.
//! dtypes i64 i32 f32
#include "common.glsl"
#include "device_error.glsl"
#include "value_check_push.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

void main() {
  uint i = linear_id();
  if (i >= pc.n) return;
#if defined(ST_F32)
  float v = BufF32(pc.data).v[i];
  bool ok = !isnan(v) && (pc.mode == VALUE_CHECK_POSITIVE ? v > 0.0 : v >= 0.0 && !isinf(v));
  if (!ok) report_device_error(pc.errors, pc.code_below, 0l, pc.bound, pc.aux);
#else
#if defined(ST_I64)
  int64_t v = BufI64(pc.data).v[i];
#else
  int64_t v = int64_t(BufI32(pc.data).v[i]);
#endif
  if (v < pc.lo)
    report_device_error(pc.errors, pc.code_below, v, pc.bound, pc.aux);
  else if (v > pc.hi)
    report_device_error(pc.errors, pc.code_above, v, pc.bound, pc.aux);
#endif
}
