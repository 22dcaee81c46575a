// The vkml:: operator namespace (torch.ops.vkml): fused kernels that no aten op
// matches, as custom ops with a PrivateUse1 kernel and a Meta kernel each, so that
// torch.compile traces them with fake tensors and its graphs call them. Each op is
// defined with TORCH_LIBRARY_FRAGMENT(vkml, m) in the file of its concern
// (ops_cross_entropy.cpp: cross_entropy_forward, cross_entropy_backward); this
// declaration owns the namespace.
#include <torch/library.h>

TORCH_LIBRARY(vkml, m) {}
