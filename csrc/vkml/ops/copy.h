#pragma once
// Device-side copies: strided, with dtype conversion, and host<->device transfers.
#include <cstdint>

#include "vkml/ops/tensor.h"
#include "vkml/runtime/device.h"

namespace vkml::ops {

// dst = src (same sizes; broadcasting is expressed as zero strides in src).
void copy(Device& dev, const TensorRef& dst, const TensorRef& src);

// Raw bytes between host memory and a device address. upload returns at once
// (the data is staged); download waits for the GPU.
void upload(Device& dev, uint64_t dst_address, const void* src, uint64_t nbytes);
// Chunks of `chunk` bytes are copied two at a time, so the host copies one out
// while the GPU transfers the next.
void download(Device& dev, void* dst, uint64_t src_address, uint64_t nbytes,
              uint64_t chunk = uint64_t(64) << 20);

// Between a device address and host memory of the device's staging pool
// (pinned host tensors): one copy command, no host copy and no wait. The
// caller keeps both alive until the stream has run it.
void copy_pinned_to_device(Device& dev, uint64_t dst_address, uint64_t pinned_address,
                           uint64_t nbytes);
void copy_device_to_pinned(Device& dev, uint64_t pinned_address, uint64_t src_address,
                           uint64_t nbytes);
// Device-to-device raw bytes on the stream.
void copy_bytes(Device& dev, uint64_t dst_address, uint64_t src_address, uint64_t nbytes);

}  // namespace vkml::ops
