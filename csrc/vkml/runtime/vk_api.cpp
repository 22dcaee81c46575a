#include "vkml/runtime/vk_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace vkml::vk {

#define VKML_DEFINE(name) PFN_##name name = nullptr;
VKML_GLOBAL_FUNCS(VKML_DEFINE)
VKML_INSTANCE_FUNCS(VKML_DEFINE)
VKML_DEBUG_FUNCS(VKML_DEFINE)
VKML_DEVICE_FUNCS(VKML_DEFINE)
#undef VKML_DEFINE

static PFN_vkGetInstanceProcAddr get_instance_proc = nullptr;

std::string load_loader() {
  if (get_instance_proc) return {};
  const char* override_path = std::getenv("TORCH_VKML_LOADER");
  const char* candidates[] = {override_path, "libvulkan.so.1", "libvulkan.so"};
  void* lib = nullptr;
  std::string tried;
  for (const char* path : candidates) {
    if (!path) continue;
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    tried += std::string(tried.empty() ? "" : ", ") + path;
    if (override_path) break;  // an explicit path is the only one tried
  }
  if (!lib) return "the Vulkan loader library could not be opened (tried " + tried + ")";
  get_instance_proc =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!get_instance_proc) return "the Vulkan loader has no vkGetInstanceProcAddr";
#define VKML_LOAD(name) name = reinterpret_cast<PFN_##name>(get_instance_proc(nullptr, #name));
  VKML_GLOBAL_FUNCS(VKML_LOAD)
#undef VKML_LOAD
  if (!vkCreateInstance) return "the Vulkan loader has no vkCreateInstance";
  return {};
}

void load_instance_functions(VkInstance instance) {
#define VKML_LOAD(name) name = reinterpret_cast<PFN_##name>(get_instance_proc(instance, #name));
  VKML_INSTANCE_FUNCS(VKML_LOAD)
  VKML_DEBUG_FUNCS(VKML_LOAD)
  // Device functions through the instance work for every device (one more
  // indirection through the loader's trampoline, the same for all devices).
  VKML_DEVICE_FUNCS(VKML_LOAD)
#undef VKML_LOAD
}

}  // namespace vkml::vk
