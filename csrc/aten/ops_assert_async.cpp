// torch._assert_async natively: the value check runs on the device and a zero is
// raised, in the CPU's words or the caller's message, at the host's next read of the
// device (CUDA asserts in the kernel too, but its failed assert ends the process).
// The shape checks need no value and raise at once, as on the CPU.
#include <torch/library.h>

#include <string>

#include "op_helpers.h"

namespace vkml_aten {
namespace {

void assert_nonzero(const at::Tensor& self, const std::string& message) {
  TORCH_CHECK(self.numel() != 0, "Boolean value of Tensor with no values is ambiguous");
  TORCH_CHECK(self.numel() == 1, "Boolean value of Tensor with more than one value is ambiguous");
  // ne(0) is what the CPU's is_nonzero asks: NaN passes, -0.0 fails.
  check_range_later(self.ne(0).to(at::kInt).reshape({1}), 1, 1, message);
}

void assert_async(const at::Tensor& self) {
  assert_nonzero(self, "Expected Tensor with single nonzero value, but got zero");
}

void assert_async_msg(const at::Tensor& self, c10::string_view assert_msg) {
  assert_nonzero(self, assert_msg.empty() ? "Assertion is failed" : std::string(assert_msg));
}

// What torch.compile's functionalized graphs call: the check, then a new token.
at::Tensor functional_assert_async_msg(const at::Tensor& self, c10::string_view assert_msg,
                                       const at::Tensor& dep_token) {
  assert_async_msg(self, assert_msg);
  return dep_token.clone();
}

}  // namespace
}  // namespace vkml_aten

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_assert_async", TORCH_FN(vkml_aten::assert_async));
  m.impl("_assert_async.msg", TORCH_FN(vkml_aten::assert_async_msg));
  m.impl("_functional_assert_async.msg", TORCH_FN(vkml_aten::functional_assert_async_msg));
}
