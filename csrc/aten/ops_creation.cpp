// Value-filled creation that needs a kernel of its own: arange.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>

#include "vkml/ops/elementwise.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

at::Tensor& arange_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step,
                       at::Tensor& out) {
  double s = start.toDouble(), e = end.toDouble(), st = step.toDouble();
  TORCH_CHECK(st != 0, "step must be nonzero");
  TORCH_CHECK(std::isfinite(s) && std::isfinite(e), "unsupported range: ", s, " -> ", e);
  TORCH_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
              "upper bound and larger bound inconsistent with step sign");
  int64_t n;
  if (at::isIntegralType(out.scalar_type(), true) && start.isIntegral(true) &&
      end.isIntegral(true) && step.isIntegral(true)) {
    int64_t a = start.toLong(), b = end.toLong(), c = step.toLong();
    n = (b - a + c - (c > 0 ? 1 : -1)) / c;
  } else {
    n = int64_t(std::ceil((e - s) / st));
  }
  at::native::resize_output(out, {n});
  if (n == 0) return out;
  auto t = out.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kFloat || t == at::kHalf || t == at::kBFloat16 ||
                                  t == at::kDouble || t == at::kLong || t == at::kInt,
                              "arange on vkml does not support ", t, " yet");
  at::Tensor target = out.is_contiguous() ? out : at::empty({n}, out.options());
  bool is_float = at::isFloatingType(t);
  auto v = [&](const at::Scalar& x) {
    return is_float ? vkml::Scalar::of(x.toDouble()) : vkml::Scalar::of_int(x.toLong());
  };
  guarded([&] { vkml::ops::arange(vkml_device(target), ref(target), v(start), v(step)); });
  if (!target.is_same(out)) out.copy_(target);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("arange.start_out", TORCH_FN(arange_out)); }

}  // namespace vkml_aten
