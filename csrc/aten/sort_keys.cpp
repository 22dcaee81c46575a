#include "sort_keys.h"

#include <cstdint>
#include <limits>

namespace vkml_aten {
namespace {

// Flipping a negative value's magnitude bits orders the bit patterns as the values; the
// map is its own inverse.
at::Tensor flip_negative_keys(const at::Tensor& bits) {
  return at::where(bits < 0, at::bitwise_xor(bits, std::numeric_limits<int64_t>::max()), bits);
}

}  // namespace

at::Tensor f64_keys(const at::Tensor& x) {
  // On the bits, not by arithmetic: drivers may flush subnormals to zero in double ops.
  const int64_t quiet_nan = 0x7ff8000000000000;
  at::Tensor bits = x.contiguous().view(at::kLong);
  bits = at::where(bits == std::numeric_limits<int64_t>::min(), 0, bits);  // -0.0
  return flip_negative_keys(at::where(at::isnan(x.contiguous()), quiet_nan, bits));
}

at::Tensor f64_from_keys(const at::Tensor& keys) {
  return flip_negative_keys(keys).contiguous().view(at::kDouble);
}

}  // namespace vkml_aten
