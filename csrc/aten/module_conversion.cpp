// torch_vkml._C._set_data_across_devices: `param.data = new` between the CPU and vkml.
//
// nn.Module._apply (`model.to("vkml")`, `.cpu()`, `.to_empty()`) keeps each Parameter
// object, and with it weight tying, optimizer references and tensor hooks, only when
// `param.data = converted` is allowed, and c10's TensorImpl::has_compatible_shallow_copy_type
// does not list PrivateUse1 among the dense backends (torch 2.13): on vkml, _apply makes
// new Parameters instead. torch_vkml wraps _apply and puts each original Parameter back,
// giving it the converted tensor's data with this function: the same steps as
// VariableHooks::set_data for two dense strided tensors (CPU -> CUDA takes that path),
// without the backend list. Upstream, adding PrivateUse1 to that list would make this
// unnecessary.
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/utils/pybind.h>

#include <mutex>

namespace py = pybind11;

namespace vkml_aten {
namespace {

// A plain dense tensor of the CPU or vkml: its TensorImpl holds nothing but a
// storage, sizes, strides and a dtype, so its metadata can move between devices.
bool plain_dense(const at::Tensor& t) {
  const c10::DeviceType d = t.device().type();
  return (d == c10::DeviceType::CPU || d == c10::DeviceType::PrivateUse1) &&
         t.layout() == c10::kStrided && !t.is_quantized() && !t.is_nested() &&
         !t.key_set().has(c10::DispatchKey::Python) &&
         t.key_set().has_backend(d == c10::DeviceType::CPU
                                     ? c10::BackendComponent::CPUBit
                                     : c10::BackendComponent::PrivateUse1Bit) &&
         t.key_set().has(c10::DispatchKey::Dense);
}

void set_data_across_devices(const at::Tensor& self, const at::Tensor& data) {
  TORCH_CHECK(plain_dense(self) && plain_dense(data),
              "_set_data_across_devices: both tensors must be dense strided CPU or vkml tensors");
  // As set_data: a gradient accumulator made for the old device or dtype must not
  // receive gradients of the new one; the next backward creates a fresh one.
  if (auto* meta = torch::autograd::impl::get_autograd_meta(self)) {
    std::lock_guard<std::mutex> lock(meta->mutex_);
    if (auto prior = meta->grad_accumulator_.lock()) {
      if (!data.options().type_equal(self.options()) ||
          prior->input_metadata(0).device() != data.device())
        meta->grad_accumulator_.reset();
    }
  }
  // Keeps self's version counter and autograd meta (grad, hooks), as set_data does.
  self.unsafeGetTensorImpl()->shallow_copy_from(data.getIntrusivePtr());
}

}  // namespace

void register_module_conversion(py::module& m) {
  m.def("_set_data_across_devices", &set_data_across_devices, py::arg("self"), py::arg("data"));
}

}  // namespace vkml_aten
