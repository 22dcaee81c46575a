// vkml_gloo's host buffers (distributed_host.h).
#include "distributed_host.h"

#include <c10/core/DeviceGuard.h>

#include <cstdlib>
#include <string>

#include "vkml_tensor.h"

namespace vkml_aten::distributed {

// t's bytes as the host sees them where the device's memory is host-mapped (lavapipe, many
// integrated GPUs), else null (discrete GPUs, non-contiguous tensors).
// TORCH_VKML_DIST_ZERO_COPY=0 stages through copies there too (testing the discrete-GPU path).
void* mapped_pointer(const at::Tensor& t) {
  static const bool zero_copy = [] {
    const char* v = std::getenv("TORCH_VKML_DIST_ZERO_COPY");
    return !(v && std::string(v) == "0");
  }();
  if (!zero_copy || !t.is_contiguous() || t.numel() == 0) return nullptr;
  vkml::Device& dev = vkml_device(t);
  if (!dev.memory().host_mapped()) return nullptr;
  return guarded([&] { return dev.memory().find(addr(t)).host; });
}

// A CPU tensor over t's own memory where it is host-mapped: Gloo then reads and writes the
// device tensor in place, with no copies. Undefined where that is not possible.
at::Tensor host_alias(const at::Tensor& t) {
  void* p = mapped_pointer(t);
  return p ? at::from_blob(p, t.sizes(), t.options().device(at::kCPU)) : at::Tensor();
}

// A host buffer of `sizes` and the dtype of `like` (a vkml tensor), pinned on its device where
// the pool allows it (then the copies to and from the device are queued, not waited for).
at::Tensor host_buffer(at::IntArrayRef sizes, const at::Tensor& like) {
  c10::DeviceGuard guard(like.device());
  at::TensorOptions opts = like.options().device(at::kCPU);
  try {
    return at::empty(sizes, opts.pinned_memory(true));
  } catch (const c10::Error&) {
    return at::empty(sizes, opts);
  }
}

// Where the results land on the host: t itself where mapped, else a new buffer.
at::Tensor host_buffer(const at::Tensor& t) {
  at::Tensor alias = host_alias(t);
  return alias.defined() ? alias : host_buffer(t.sizes(), t);
}

// t's contents on the host: t itself where mapped (once the device finished writing it: the
// issuer waits for that), else a queued copy into a new buffer.
at::Tensor stage_out(const at::Tensor& t) {
  at::Tensor alias = host_alias(t);
  if (alias.defined()) return alias;
  at::Tensor h = host_buffer(t.sizes(), t);
  h.copy_(t, /*non_blocking=*/true);
  return h;
}

TensorList stage_out(const TensorList& ts) {
  TensorList out;
  out.reserve(ts.size());
  for (const at::Tensor& t : ts) out.push_back(stage_out(t));
  return out;
}

TensorList host_buffers(const TensorList& ts) {
  TensorList out;
  out.reserve(ts.size());
  for (const at::Tensor& t : ts) out.push_back(host_buffer(t));
  return out;
}

std::vector<TensorList> stage_out(const std::vector<TensorList>& ts) {
  std::vector<TensorList> out;
  for (const auto& l : ts) out.push_back(stage_out(l));
  return out;
}

std::vector<TensorList> host_buffers(const std::vector<TensorList>& ts) {
  std::vector<TensorList> out;
  for (const auto& l : ts) out.push_back(host_buffers(l));
  return out;
}

// The *_into_tensor / *_tensor collectives take any shapes whose element counts fit (one
// rank's part is a contiguous run of the flat buffer), as NCCL does (SyncBatchNorm gathers
// into [1, world * n]); Gloo splits along dim 0, so it gets flat views of the host buffers.
at::Tensor flat_view(const at::Tensor& host) { return host.view(-1); }

TensorList flat_views(const TensorList& hosts) {
  TensorList out;
  for (const at::Tensor& h : hosts) out.push_back(h.view(-1));
  return out;
}

// Queues the copy of a host result back into its vkml tensor (none where Gloo wrote the
// tensor itself).
void to_device(at::Tensor& dst, const at::Tensor& host) {
  if (host.data_ptr() != mapped_pointer(dst)) dst.copy_(host, /*non_blocking=*/true);
}

void copy_back(TensorList& dst, const TensorList& src) {
  for (size_t i = 0; i < dst.size(); ++i) to_device(dst[i], src[i]);
}

}  // namespace vkml_aten::distributed
