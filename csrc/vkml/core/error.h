#pragma once
// Errors of the core. The adapter maps each kind to the matching Python exception.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace vkml {

enum class ErrorKind {
  Unavailable,      // no loader, no device: RuntimeError naming what to install
  InvalidArgument,  // bad index, bad shape: ValueError
  OutOfMemory,      // torch.OutOfMemoryError
  DeviceLost,       // RuntimeError; the device is unusable afterwards
  Internal,         // a Vulkan call failed unexpectedly
  IndexOutOfRange,  // a value used as an index or class is out of range: IndexError
  ValueCheck,       // a value check PyTorch reports as RuntimeError, in its words
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] void fail(ErrorKind kind, const std::string& what);
// Throws for a failed VkResult (passed as int to keep Vulkan out of this header).
void check_vk(int result, const char* call);
// A VkResult's name (VK_ERROR_OUT_OF_DEVICE_MEMORY, ...), for messages.
const char* vk_result_name(int result);

}  // namespace vkml

#define VKML_CHECK_VK(expr) ::vkml::check_vk(static_cast<int>(expr), #expr)
#define VKML_CHECK_ARG(cond, msg)                                       \
  do {                                                                  \
    if (!(cond)) ::vkml::fail(::vkml::ErrorKind::InvalidArgument, msg); \
  } while (0)
