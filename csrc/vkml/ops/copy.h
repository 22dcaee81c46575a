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
void download(Device& dev, void* dst, uint64_t src_address, uint64_t nbytes);
// Device-to-device raw bytes on the stream.
void copy_bytes(Device& dev, uint64_t dst_address, uint64_t src_address, uint64_t nbytes);

}  // namespace vkml::ops
