#pragma once
// The vkml device's allocator (allocator.cpp), for empty tensors and storages, and its
// statistics in PyTorch's form, for torch.accelerator and torch_vkml.memory_stats.
#include <c10/core/CachingDeviceAllocator.h>

#include "vkml/runtime/device.h"

namespace vkml_aten {

c10::DeviceAllocator* vkml_allocator();
c10::CachingDeviceAllocator::DeviceStats device_stats(vkml::Device& dev);
// Returns the cached, unused memory of every device created so far to the driver (a
// device never used has none, so none is created for it).
void empty_device_caches();

}  // namespace vkml_aten
