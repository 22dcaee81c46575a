#pragma once
// The host side of vkml_gloo's collectives (distributed.cpp): the CPU tensors Gloo works on.
// Where the device's memory is host-mapped they are the vkml tensors themselves; elsewhere
// pinned buffers, filled and emptied by copies queued on the device's stream.
#include <ATen/ATen.h>

#include <vector>

namespace vkml_aten::distributed {

using TensorList = std::vector<at::Tensor>;

// t's bytes as the host sees them where that is possible, else null.
void* mapped_pointer(const at::Tensor& t);
// A CPU tensor over t's own memory, or undefined (see mapped_pointer).
at::Tensor host_alias(const at::Tensor& t);
// A pinned host buffer of `sizes` and the dtype of `like`, on like's device.
at::Tensor host_buffer(at::IntArrayRef sizes, const at::Tensor& like);
// Where t's results land on the host: t itself where mapped, else a new buffer.
at::Tensor host_buffer(const at::Tensor& t);
TensorList host_buffers(const TensorList& ts);
std::vector<TensorList> host_buffers(const std::vector<TensorList>& ts);
// t's contents on the host (once the stream passed the value noted after this call).
at::Tensor stage_out(const at::Tensor& t);
TensorList stage_out(const TensorList& ts);
std::vector<TensorList> stage_out(const std::vector<TensorList>& ts);
// Flat views of host buffers, for Gloo's splits along dim 0.
at::Tensor flat_view(const at::Tensor& host);
TensorList flat_views(const TensorList& hosts);
// Queues the copies of host results back into their vkml tensors.
void to_device(at::Tensor& dst, const at::Tensor& host);
void copy_back(TensorList& dst, const TensorList& src);

}  // namespace vkml_aten::distributed
