// one_hot natively. ATen's composite one_hot leaves the class checks of a
// PrivateUse1 device to scatter's index check, whose message differs from the CPU's
// and which reads the indices back. Here the checks run on the device (raised at
// the next read of the device with the CPU's words) and the scatter gets indices
// clamped into range, whose bounds are then known without a read.
#include <torch/library.h>

#include <limits>

#include "aten/vkml_tensor.h"
#include "vkml/ops/value_check.h"
#include "vkml/shaders/device_error.h"

namespace vkml_aten {
namespace {

at::Tensor vk_one_hot(const at::Tensor& self, int64_t num_classes) {
  TORCH_CHECK(self.scalar_type() == at::kLong,
              "one_hot is only applicable to index tensor of type LongTensor.");
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.numel() == 0) {
    TORCH_CHECK(num_classes > 0, "Can not infer total number of classes from empty tensor.");
    shape.push_back(num_classes);
    return at::empty(shape, self.options());
  }
  at::Tensor idx = self.contiguous();
  vkml::Device& dev = vkml_device(idx);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // In the CPU's order: the sign first, then the classes (the checks run in order).
  guarded([&] {
    vkml::ops::check_int_range(dev, ref(idx), 0, kMax, DEVICE_ERROR_ONE_HOT_NEGATIVE,
                               DEVICE_ERROR_ONE_HOT_NEGATIVE);
  });
  if (num_classes == -1) {
    num_classes = idx.max().item<int64_t>() + 1;  // a read: raises a negative class first
  } else if (num_classes <= 0) {
    // No class fits, so the call fails whatever the values: read them first (a wait on
    // a failing call only), which raises a negative class as the CPU does, before the
    // classes' error.
    idx.min().item<int64_t>();
    guarded([] { vkml::raise_check_failure(DEVICE_ERROR_ONE_HOT_CLASSES); });
  } else {
    guarded([&] {
      vkml::ops::check_int_range(dev, ref(idx), std::numeric_limits<int64_t>::min(),
                                 num_classes - 1, DEVICE_ERROR_ONE_HOT_CLASSES,
                                 DEVICE_ERROR_ONE_HOT_CLASSES);
    });
  }
  shape.push_back(num_classes);
  at::Tensor out = at::zeros(shape, self.options());
  out.scatter_(-1, idx.clamp(0, num_classes - 1).unsqueeze(-1), 1);
  return out;
}

}  // namespace
}  // namespace vkml_aten

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("one_hot", TORCH_FN(vkml_aten::vk_one_hot)); }
