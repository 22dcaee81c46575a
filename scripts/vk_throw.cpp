// Diagnostic for the GPU machine (scripts/gpu_diagnose.py): does a C++ exception survive
// once a Vulkan driver is loaded, with neither PyTorch nor torch-vkml in the process?
// Throws and catches after each step: loader opened, instance created, devices
// enumerated, a logical device created and destroyed. Not part of the build.
//
//   g++ -O1 scripts/vk_throw.cpp -o vk_throw -ldl && ./vk_throw
#define VK_NO_PROTOTYPES
#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

static void throw_and_catch(const char* after) {
  try {
    throw std::runtime_error(after);
  } catch (const std::exception& e) {
    std::printf("vk_throw: caught after %s\n", e.what());
    std::fflush(stdout);
  }
}

int main() {
  throw_and_catch("nothing");
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return std::printf("vk_throw: no libvulkan.so.1\n"), 1;
  auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  throw_and_catch("the loader was opened");
  auto create_instance = reinterpret_cast<PFN_vkCreateInstance>(gipa(nullptr, "vkCreateInstance"));
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (create_instance(&ici, nullptr, &instance) != VK_SUCCESS)
    return std::printf("vk_throw: vkCreateInstance failed\n"), 1;
  throw_and_catch("vkCreateInstance");
#define GET(name) reinterpret_cast<PFN_##name>(gipa(instance, #name))
  uint32_t count = 0;
  GET(vkEnumeratePhysicalDevices)(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  GET(vkEnumeratePhysicalDevices)(instance, &count, devices.data());
  std::printf("vk_throw: %u devices\n", count);
  throw_and_catch("vkEnumeratePhysicalDevices");
  if (count) {
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    VkDevice device = VK_NULL_HANDLE;
    if (GET(vkCreateDevice)(devices[0], &dci, nullptr, &device) == VK_SUCCESS) {
      throw_and_catch("vkCreateDevice");
      GET(vkDestroyDevice)(device, nullptr);
      throw_and_catch("vkDestroyDevice");
    }
  }
  GET(vkDestroyInstance)(instance, nullptr);
  throw_and_catch("vkDestroyInstance");
  return 0;
}
