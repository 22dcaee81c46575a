#pragma once
// Value checks done by the kernels themselves (shaders/device_error.h): a kernel
// that finds a bad value (a class target out of range, an integer division by
// zero) notes it in this device's record, in host-visible memory, and carries on;
// the host raises it as PyTorch's CPU would at its next read of the device (a
// download, item(), synchronize()), so a check costs no wait of its own.
#include <cstdint>

#include "vkml/runtime/memory.h"

namespace vkml {

class DeviceErrors {
 public:
  explicit DeviceErrors(MemoryPool& staging);
  ~DeviceErrors();
  DeviceErrors(const DeviceErrors&) = delete;

  // Device address of the record, for a kernel's push constants.
  uint64_t address() const { return record_.address; }
  // Throws the noted error (vkml::Error) and clears the record, if a kernel that
  // has completed noted one. Call after a wait for the work to check.
  void raise_pending();

 private:
  MemoryPool& staging_;
  Allocation record_;
};

}  // namespace vkml
