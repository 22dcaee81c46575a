#pragma once
// Device-side copies: strided, with dtype conversion, and host<->device transfers.
#include <cstdint>
#include <vector>

#include "vkml/ops/tensor.h"
#include "vkml/runtime/device.h"
#include "vkml/runtime/hazards.h"

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
// Device-to-device raw bytes on the stream: whole 16- or 4-byte words by a kernel, other
// sizes by a transfer command.
void copy_bytes(Device& dev, uint64_t dst_address, uint64_t src_address, uint64_t nbytes);

// A table of records that every workgroup of a `groups`-workgroup kernel searches
// (multi-tensor elementwise ops, fused optimizers). From 256 workgroups on it is uploaded
// to device memory in stream order, and its span joins `reads`, the kernel's reads: in
// host-visible staging memory each of those searches would cross the bus on a discrete
// GPU (on the H200, AdamW's foreach kernels over 150 tensors of 256K elements moved
// 1.7-3 TB/s against 3.4-4.1 for single-tensor ones). Smaller tables stay in staging.
struct KernelTable {
  uint64_t address = 0;
  bool on_device = false;
};
KernelTable put_kernel_table(Device& dev, const void* records, uint64_t nbytes, uint64_t groups,
                             std::vector<Span>& reads);
// After the kernel's dispatch: the stream orders every later use of the memory after it.
void release_kernel_table(Device& dev, const KernelTable& table);

}  // namespace vkml::ops
