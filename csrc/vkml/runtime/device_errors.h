#pragma once
// Value checks done by the kernels themselves (shaders/device_error.h): a kernel
// that finds a bad value (a class target out of range, an integer division by
// zero) notes it in this device's record, in host-visible memory, and carries on;
// the host raises it as PyTorch's CPU would at its next read of the device (a
// download, item(), synchronize()), so a check costs no wait of its own.
#include <cstdint>
#include <string>

#include "vkml/runtime/memory.h"

namespace vkml {

// Throws the error PyTorch's CPU raises for a failed check `code` (a
// DEVICE_ERROR_* of shaders/device_error.h) with its message's value, bound and
// aux: the one place those words are written, for checks the kernels make and for
// the same checks the host makes where it knows the values.
[[noreturn]] void raise_check_failure(uint32_t code, int64_t value = 0, int64_t bound = 0,
                                      uint32_t aux = 0);

// The id, for a DEVICE_ERROR_ASSERT record's aux, of an assertion's message. Equal
// messages share an id; the table keeps the latest 4096 distinct ones, so a program
// that formats a new message per call never grows it past that.
uint32_t register_assert_message(const std::string& message);

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
