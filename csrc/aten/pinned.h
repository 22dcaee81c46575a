#pragma once
// Pinned host memory (Tensor.pin_memory(), DataLoader(pin_memory=True)): CPU
// tensors whose bytes live in a vkml device's host-visible staging memory, so
// copies to and from the device need no host copy and can be asynchronous.
#include <c10/core/Allocator.h>

#include "vkml/runtime/device.h"

namespace vkml_aten {

c10::Allocator* pinned_allocator();
bool is_pinned(const void* p);
// The device address of a pinned host pointer, when it is pinned on `dev`; 0 otherwise.
uint64_t pinned_address(vkml::Device& dev, const void* p);

}  // namespace vkml_aten
