// Tensors existing on the device: allocation, storage, views, resize, set_.
// Views reuse ATen's device-independent implementations; nothing here runs a kernel.
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include "allocator.h"
#include "vkml_tensor.h"

namespace vkml_aten {

namespace {

constexpr c10::DispatchKeySet kKeys(c10::DispatchKey::PrivateUse1);

// Makes the target device current for the allocator, which reads it.
struct DeviceScope {
  c10::DeviceIndex old;
  explicit DeviceScope(std::optional<at::Device> d) : old(current_device()) {
    if (d && d->has_index()) {
      guarded([&] { vkml::Runtime::get().check_index(d->index()); });
      set_current_device(d->index());
    } else {
      guarded([&] { vkml::Runtime::get().check_index(current_device()); });
    }
  }
  ~DeviceScope() { set_current_device(old); }
};

void check_dtype(at::ScalarType t) {
  TORCH_CHECK_TYPE(can_hold(t), "vkml tensors cannot hold dtype ", t);
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<at::MemoryFormat> memory_format) {
  DeviceScope scope(device);
  auto t = dtype.value_or(c10::get_default_dtype_as_scalartype());
  check_dtype(t);
  return at::detail::empty_generic(size, vkml_allocator(), kKeys, t, memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                         std::optional<at::Device> device, std::optional<bool> pin_memory) {
  DeviceScope scope(device);
  auto t = dtype.value_or(c10::get_default_dtype_as_scalartype());
  check_dtype(t);
  return at::detail::empty_strided_generic(size, stride, vkml_allocator(), kKeys, t);
}

void grow_storage(const at::Tensor& self, size_t needed_bytes) {
  const c10::Storage& storage = self.storage();
  if (needed_bytes <= storage.nbytes()) return;
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  c10::DeviceIndex old = current_device();
  set_current_device(self.device().index());
  at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(storage, needed_bytes);
  set_current_device(old);
}

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  if (impl->sizes() != size) impl->set_sizes_contiguous(size);
  auto fmt = memory_format.value_or(at::MemoryFormat::Contiguous);
  if (fmt != at::MemoryFormat::Preserve) impl->empty_tensor_restride(fmt);
  size_t needed = at::detail::computeStorageNbytes(impl->sizes(), impl->strides(),
                                                   self.dtype().itemsize(), impl->storage_offset());
  grow_storage(self, needed);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, at::Storage source, int64_t offset, at::IntArrayRef size,
                        at::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(source));
  std::vector<int64_t> strides;
  if (stride.data()) {
    strides = stride.vec();
  } else {
    strides.resize(size.size());
    int64_t s = 1;
    for (int64_t d = int64_t(size.size()) - 1; d >= 0; --d) {
      strides[d] = s;
      s *= std::max<int64_t>(size[d], 1);
    }
  }
  self.unsafeGetTensorImpl()->set_sizes_and_strides(size, strides, offset);
  size_t needed = at::detail::computeStorageNbytes(size, strides, self.dtype().itemsize(), offset);
  grow_storage(self, needed);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, at::Storage source) {
  int64_t n = int64_t(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {n}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& src) {
  if (self.unsafeGetTensorImpl() == src.unsafeGetTensorImpl()) return self;
  return set_storage(self, src.storage(), src.storage_offset(), src.sizes(), src.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, vkml_allocator(), true);
  return set_storage(self, storage, 0, {0}, {});
}

bool is_set_to(const at::Tensor& self, const at::Tensor& other) {
  return self.storage().is_alias_of(other.storage()) &&
         self.storage_offset() == other.storage_offset() && self.sizes() == other.sizes() &&
         self.strides() == other.strides();
}

// The memory is not reused before `s` has run the work queued on it so far (the
// allocator's recordStream), as for CUDA tensors.
void record_stream(at::Tensor& self, c10::Stream s) {
  TORCH_CHECK(s.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream: expected a vkml stream, got one of ", s.device());
  vkml_allocator()->recordStream(self.storage().data_ptr(), s);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("is_set_to", TORCH_FN(is_set_to));
}

}  // namespace vkml_aten
