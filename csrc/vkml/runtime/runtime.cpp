#include "vkml/runtime/runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#ifndef _WIN32
#include <pthread.h>  // pthread_atfork (Windows has no fork)
#endif

#include "vkml/core/error.h"
#include "vkml/runtime/device.h"
#include "vkml/runtime/physical_device.h"

namespace vkml {

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vk::vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vk::vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

bool has_instance_extension(const char* name) {
  uint32_t n = 0;
  vk::vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vk::vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
  return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

int type_rank(const std::string& type) {
  if (type == "discrete") return 0;
  if (type == "integrated") return 1;
  if (type == "virtual") return 2;
  if (type == "cpu") return 3;
  return 4;
}

// TORCH_VKML_VISIBLE_DEVICES="1,0": indices into the ranked list, in that order. An
// index listed twice ("0,0") gives two logical devices on one physical device, each with
// its own VkDevice, queue and memory: how multi-device code is tested on one GPU.
std::vector<int> visible_order(int count) {
  std::vector<int> order;
  const char* env = std::getenv("TORCH_VKML_VISIBLE_DEVICES");
  if (!env || !*env) {
    for (int i = 0; i < count; ++i) order.push_back(i);
    return order;
  }
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long idx = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str() || idx < 0 || idx >= count) continue;
    order.push_back(int(idx));
  }
  return order;
}

const char* k_validation_layer = "VK_LAYER_KHRONOS_validation";

}  // namespace

namespace {
std::atomic<Runtime*> g_runtime{nullptr};
std::atomic<bool> g_bad_fork{false};

// Runs in the child of a fork(): the Vulkan instance, device, queue and the
// driver's threads belong to the parent. Nothing here may take a lock.
void mark_bad_fork() { g_bad_fork.store(true); }
}  // namespace

Runtime& Runtime::get() {
  // Deliberately leaked: tensors freed during interpreter shutdown still need
  // the device, and the driver cleans up with the process.
  static Runtime* runtime = [] {
    auto* r = new Runtime();
    g_runtime.store(r);
#ifndef _WIN32
    pthread_atfork(nullptr, nullptr, &mark_bad_fork);
#endif
    return r;
  }();
  return *runtime;
}

Runtime* Runtime::existing() { return g_runtime.load(); }

bool Runtime::in_bad_fork() { return g_bad_fork.load(); }

Runtime::Runtime() {
  try {
    init();
  } catch (const std::exception& e) {
    devices_.clear();
    unavailable_reason_ = std::string("Vulkan initialisation failed: ") + e.what();
  }
}

Runtime::~Runtime() = default;

void Runtime::init() {
  std::string loader_error = vk::load_loader();
  if (!loader_error.empty()) {
    unavailable_reason_ = "no Vulkan loader: " + loader_error +
                          ". Install the Vulkan loader (Debian/Ubuntu: `apt install libvulkan1`; "
                          "Windows: the GPU driver installs it) and a Vulkan driver.";
    return;
  }
  uint32_t api = VK_API_VERSION_1_0;
  if (vk::vkEnumerateInstanceVersion) vk::vkEnumerateInstanceVersion(&api);
  if (api < VK_API_VERSION_1_2) {
    unavailable_reason_ = "the Vulkan loader is older than 1.2; update libvulkan1";
    return;
  }

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  bool want_validation = env_flag("TORCH_VKML_VALIDATION");
  // TORCH_VKML_VALIDATION=print also echoes each message to stderr as it happens.
  if (const char* v = std::getenv("TORCH_VKML_VALIDATION"))
    echo_messages_ = std::string(v) == "print";
  if (want_validation) {
    if (has_layer(k_validation_layer)) {
      layers.push_back(k_validation_layer);
      validation_enabled_ = true;
    } else {
      messages_.push_back(
          "TORCH_VKML_VALIDATION is set but VK_LAYER_KHRONOS_validation is not installed "
          "(apt install vulkan-validationlayers)");
    }
  }
  bool debug_utils = has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (validation_enabled_ && debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  // MoltenVK and other non-conformant drivers are listed only with this.
  bool portability = has_instance_extension("VK_KHR_portability_enumeration");
  if (portability) extensions.push_back("VK_KHR_portability_enumeration");

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "torch-vkml";
  app.pEngineName = "torch-vkml";
  app.apiVersion = VK_API_VERSION_1_3 <= api ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;

  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = uint32_t(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  if (portability) ci.flags |= 0x00000001;  // VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
  VkResult r = vk::vkCreateInstance(&ci, nullptr, &instance_);
  if (r != VK_SUCCESS) {
    unavailable_reason_ = "vkCreateInstance failed (" + std::to_string(int(r)) +
                          "): no usable Vulkan driver. Install one (Debian/Ubuntu: `apt install "
                          "mesa-vulkan-drivers` for AMD/Intel/lavapipe, or the NVIDIA driver).";
    return;
  }
  vk::load_instance_functions(instance_);

  if (validation_enabled_ && debug_utils) {
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mi.pfnUserCallback = &Runtime::on_debug_message;
    mi.pUserData = this;
    VKML_CHECK_VK(vk::vkCreateDebugUtilsMessengerEXT(instance_, &mi, nullptr, &messenger_));
  }

  uint32_t n = 0;
  vk::vkEnumeratePhysicalDevices(instance_, &n, nullptr);
  std::vector<VkPhysicalDevice> physicals(n);
  vk::vkEnumeratePhysicalDevices(instance_, &n, physicals.data());

  std::vector<Entry> usable;
  std::string rejected;
  for (VkPhysicalDevice pd : physicals) {
    DeviceInfo info = query_device_info(pd, app.apiVersion);
    if (!info.unsupported_reason.empty()) {
      rejected += "\n  " + info.name + ": " + info.unsupported_reason;
      continue;
    }
    usable.push_back(Entry{pd, std::move(info), nullptr});
  }
  std::stable_sort(usable.begin(), usable.end(), [](const Entry& a, const Entry& b) {
    return type_rank(a.info.device_type) < type_rank(b.info.device_type);
  });
  // Copied, not moved: an index may be listed twice.
  for (int idx : visible_order(int(usable.size())))
    devices_.push_back(Entry{usable[idx].physical, usable[idx].info, nullptr});

  if (devices_.empty()) {
    if (physicals.empty()) {
      unavailable_reason_ =
          "the Vulkan loader found no GPU driver (no physical device). Install a Vulkan driver: "
          "Debian/Ubuntu `apt install mesa-vulkan-drivers` (AMD, Intel, or lavapipe on the CPU), "
          "or the NVIDIA driver; check with `vulkaninfo --summary`.";
    } else if (!usable.empty()) {
      unavailable_reason_ = "TORCH_VKML_VISIBLE_DEVICES hides every device (" +
                            std::to_string(usable.size()) + " usable)";
    } else {
      unavailable_reason_ = "no Vulkan device has the features torch-vkml needs:" + rejected;
    }
  }
}

const DeviceInfo& Runtime::info(int index) const {
  check_index(index);
  return devices_[index].info;
}

void Runtime::check_index(int index) const {
  if (devices_.empty()) fail(ErrorKind::Unavailable, "torch-vkml: " + unavailable_reason_);
  if (index < 0 || index >= device_count()) {
    fail(ErrorKind::InvalidArgument, "vkml device index " + std::to_string(index) +
                                         " is out of range: valid indices are 0.." +
                                         std::to_string(device_count() - 1) + " (" +
                                         std::to_string(device_count()) + " device(s))");
  }
}

Device& Runtime::device(int index) {
  if (in_bad_fork())
    fail(ErrorKind::Unavailable,
         "torch-vkml: cannot use the vkml device in a forked subprocess: the parent process "
         "had initialised Vulkan before fork(). To use vkml in subprocesses, use the 'spawn' "
         "start method (torch.multiprocessing.set_start_method('spawn'), or "
         "DataLoader(..., multiprocessing_context='spawn'))");
  check_index(index);
  std::lock_guard<std::mutex> lock(device_mutex_);
  Entry& e = devices_[index];
  if (!e.device) e.device = std::make_unique<Device>(e.physical, e.info, index);
  return *e.device;
}

Device* Runtime::created_device(int index) {
  if (in_bad_fork() || index < 0 || index >= device_count()) return nullptr;
  std::lock_guard<std::mutex> lock(device_mutex_);
  return devices_[index].device.get();
}

std::vector<std::string> Runtime::take_validation_messages() {
  std::lock_guard<std::mutex> lock(message_mutex_);
  std::vector<std::string> out;
  out.swap(messages_);
  return out;
}

VkBool32 VKAPI_PTR Runtime::on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                             VkDebugUtilsMessageTypeFlagsEXT type,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void* user) {
  auto* self = static_cast<Runtime*>(user);
  std::string msg =
      (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error: " : "warning: ";
  msg += data && data->pMessage ? data->pMessage : "(no message)";
  if (self->echo_messages_) fprintf(stderr, "[vkml validation] %s\n", msg.c_str());
  std::lock_guard<std::mutex> lock(self->message_mutex_);
  if (self->messages_.size() < 1000) self->messages_.push_back(std::move(msg));
  return VK_FALSE;
}

}  // namespace vkml
