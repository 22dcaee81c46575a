// Whether a torch.func transform (grad, vjp, jacrev, vmap, jvp, ...) is active, from
// functorch's thread-local transform stack, and whether a tensor carries a tangent. Fused paths
// that PyTorch sees as one op without a batching rule or forward-mode derivative, or as a C++
// autograd Function (which functorch refuses), step aside under a transform for ATen's
// decomposition.
#pragma once

#include <ATen/FuncTorchTLS.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
// DynamicLayer.h needs nlohmann/json (scripts/setup.sh installs it).
#if __has_include(<nlohmann/json.hpp>)
#include <ATen/functorch/DynamicLayer.h>
#define VKML_SEES_FUNCTORCH_STACK 1
#endif

namespace vkml_aten {

// Any transform at all. Without the stack's header, the question functorch itself asks
// of a C++ autograd Function answers it.
inline bool under_functorch() {
#ifdef VKML_SEES_FUNCTORCH_STACK
  return !at::functorch::getDynamicLayerStack().empty();
#else
  const auto& tls = at::functorch::functorchTLSAccessor();
  if (!tls) return false;
  try {
    tls->checkSupportsCppAutogradFunction();
    return false;
  } catch (const c10::Error&) {
    return true;
  }
#endif
}

// A vmap or jvp, which may hide beneath grad wrappers (vmap(grad(f)), jacfwd(jacrev(f))):
// the inputs' own dispatch keys do not show it. Without the stack's header, false.
inline bool under_vmap_or_jvp() {
#ifdef VKML_SEES_FUNCTORCH_STACK
  for (const auto& layer : at::functorch::getDynamicLayerStack()) {
    const auto type = layer.key();
    if (type == at::functorch::TransformType::Vmap || type == at::functorch::TransformType::Jvp)
      return true;
  }
#endif
  return false;
}

// A tangent at any forward-AD level: torch.autograd.forward_ad's (0, or nested
// dual_level()s) or torch.func.jvp's, whose level is its place in the transform stack
// (and which is popped off it while its own op runs).
inline bool has_tangent(const at::Tensor& t) {
  for (uint64_t level = 0; level < 8; ++level)
    if (t._fw_grad(level).defined()) return true;
  return false;
}

}  // namespace vkml_aten
