#include "index_bounds.h"

#include <cstdlib>
#include <optional>
#include <string>

#include "value_bounds.h"
#include "vkml/ops/value_check.h"
#include "vkml/shaders/device_error.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

uint32_t error_code(Style style) {
  switch (style) {
    case Style::InSelf:
      return DEVICE_ERROR_INDEX_IN_SELF;
    case Style::Bounds:
      return DEVICE_ERROR_INDEX_BOUNDS;
    case Style::BoundsIdx:
      return DEVICE_ERROR_INDEX_BOUNDS_INDEX_ERROR;
    case Style::Take:
      return DEVICE_ERROR_INDEX_TAKE;
  }
  return DEVICE_ERROR_INDEX_IN_SELF;
}

}  // namespace

bool index_checks_enabled() {
  const char* v = std::getenv("TORCH_VKML_INDEX_CHECK");
  return !(v && std::string(v) == "0");
}

void check_ranges(const std::vector<RangeCheck>& checks, bool allow_negative, Style style) {
  if (!index_checks_enabled()) return;
  for (const RangeCheck& c : checks) {
    if (c.index.numel() == 0) continue;
    const int64_t n = c.size, lo = allow_negative ? -n : 0;
    if (c.index.is_cpu()) {
      at::Tensor i = c.index.scalar_type() == at::kLong ? c.index : c.index.to(at::kLong);
      int64_t min = i.min().item<int64_t>(), max = i.max().item<int64_t>();
      if (min < lo || max >= n)
        guarded(
            [&] { vkml::raise_check_failure(error_code(style), min < lo ? min : max, n, c.dim); });
      continue;
    }
    std::optional<vkml::IntRange> known = known_values(c.index);
    if (known && known->lo >= lo && known->hi < n) continue;
    at::Tensor i = c.index;
    if (i.scalar_type() != at::kLong && i.scalar_type() != at::kInt) i = i.to(at::kLong);
    i = i.contiguous();
    const uint32_t code = error_code(style);
    guarded([&] {
      vkml::ops::check_int_range(vkml_device(i), ref(i), lo, n - 1, code, code, n, uint32_t(c.dim));
    });
  }
}

}  // namespace vkml_aten
