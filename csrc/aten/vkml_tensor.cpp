#include "vkml_tensor.h"

namespace vkml_aten {

namespace {
thread_local c10::DeviceIndex t_current_device = 0;
}

c10::DeviceIndex current_device() { return t_current_device; }

void raise_not_on_vkml(const at::Tensor& t) {
  const c10::Device vkml(c10::DeviceType::PrivateUse1, current_device());
  TORCH_CHECK(false,
              "Expected all tensors to be on the same device, but found at least two "
              "devices, ",
              vkml, " and ", t.device(), "!");
}
void set_current_device(c10::DeviceIndex index) { t_current_device = index; }

bool has_vkml_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
    case at::kHalf:
    case at::kBFloat16:
    case at::kDouble:
    case at::kLong:
    case at::kInt:
    case at::kShort:
    case at::kChar:
    case at::kByte:
    case at::kBool:
      return true;
    default:
      return false;
  }
}

vkml::DType to_vkml(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return vkml::DType::f32;
    case at::kHalf:
      return vkml::DType::f16;
    case at::kBFloat16:
      return vkml::DType::bf16;
    case at::kDouble:
      return vkml::DType::f64;
    case at::kLong:
      return vkml::DType::i64;
    case at::kInt:
      return vkml::DType::i32;
    case at::kShort:
      return vkml::DType::i16;
    case at::kChar:
      return vkml::DType::i8;
    case at::kByte:
      return vkml::DType::u8;
    case at::kBool:
      return vkml::DType::b8;
    default:
      TORCH_CHECK_TYPE(false, "vkml does not support dtype ", t);
  }
}

vkml::Device& device_at(c10::DeviceIndex index) {
  if (index < 0) index = current_device();
  return guarded([&]() -> vkml::Device& { return vkml::Runtime::get().device(index); });
}

vkml::Device& vkml_device(const at::Tensor& t) { return device_at(t.device().index()); }

vkml::TensorRef ref(const at::Tensor& t) {
  vkml::TensorRef r;
  r.address = addr(t);
  r.dtype = to_vkml(t.scalar_type());
  TORCH_CHECK(t.dim() <= vkml::kMaxDims, "vkml supports tensors of up to ", vkml::kMaxDims,
              " dims, got ", t.dim());
  r.ndim = int(t.dim());
  for (int d = 0; d < r.ndim; ++d) {
    r.sizes[d] = t.size(d);
    r.strides[d] = t.stride(d);
  }
  return r;
}

void rethrow(const vkml::Error& e) {
  switch (e.kind()) {
    case vkml::ErrorKind::InvalidArgument:
      TORCH_CHECK_VALUE(false, e.what());
    case vkml::ErrorKind::IndexOutOfRange:
      TORCH_CHECK_INDEX(false, e.what());
    case vkml::ErrorKind::OutOfMemory:
      TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
    case vkml::ErrorKind::Unavailable:
    case vkml::ErrorKind::DeviceLost:
    case vkml::ErrorKind::Internal:
    case vkml::ErrorKind::ValueCheck:
      TORCH_CHECK(false, e.what());
  }
  TORCH_CHECK(false, e.what());
}

}  // namespace vkml_aten
