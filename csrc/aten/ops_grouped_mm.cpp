// torch._grouped_mm (torch.nn.functional.grouped_mm): one product per group, the groups
// given by int32 offsets along one side, as a mixture of experts' layers run their
// experts over the tokens sorted by expert. The checks and messages are CUDA's (its
// GroupedMMUtils.h, whose helpers differ between torch versions, so they are not
// called); the offsets stay on the device and the GEMM kernel reads them
// (GEMM_GROUP_*), where CUDA's and the CPU's fallback copy them to the host.
//   2-D x 3-D: rows of A by group, B[g] each (the experts' forward)
//   3-D x 2-D: columns of B by group, A[g] each
//   2-D x 2-D: the contraction by group, one output matrix each (the experts' weight grads)
//   3-D x 3-D: a batched product, no offsets
#include <torch/library.h>

#include <algorithm>

#include "vkml/ops/matmul.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::GemmGroups;

void run_grouped(const at::Tensor& a, const at::Tensor& b, const at::Tensor& offs,
                 const at::Tensor& out) {
  const bool a2 = a.dim() == 2, b2 = b.dim() == 2;
  vkml::ops::GemmArgs g;
  g.dtype = to_vkml(a.scalar_type());
  g.a = addr(a);
  g.b = addr(b);
  g.c = addr(out);
  // Rows and columns of each operand: its last two dims; a 2-D operand has batch stride 0.
  g.a_row = a.stride(-2), g.a_col = a.stride(-1), g.a_batch = a2 ? 0 : a.stride(0);
  g.b_row = b.stride(-2), g.b_col = b.stride(-1), g.b_batch = b2 ? 0 : b.stride(0);
  g.c_row = out.stride(-2), g.c_col = out.stride(-1),
  g.c_batch = out.dim() == 3 ? out.stride(0) : 0;
  g.m = a.size(-2);
  g.n = b.size(-1);
  g.k = a.size(-1);
  if (a2 && b2) {
    g.groups = GemmGroups::k;
    g.batch = offs.size(0);
  } else if (a2) {
    g.groups = GemmGroups::m;
    g.batch = b.size(0);
  } else if (b2) {
    g.groups = GemmGroups::n;
    g.batch = a.size(0);
  } else {
    g.batch = a.size(0);
  }
  if (g.groups != GemmGroups::none) g.group_offsets = addr(offs);
  if (out.numel() == 0) return;
  guarded([&] { vkml::ops::gemm(vkml_device(out), g); });
}

bool grouped_dtype(at::ScalarType t) {
  return t == at::kBFloat16 || t == at::kFloat || t == at::kHalf;
}

// A matrix the grouped kernels of CUDA accept: one of its last two dims contiguous, the
// other's stride a multiple of 16 bytes.
void check_strides(const at::Tensor& mat) {
  const int64_t last = mat.dim() - 1, align = 16 / int64_t(mat.element_size());
  TORCH_CHECK(addr(mat) % 16 == 0, "expected data_ptr to be aligned to 16 bytes");
  const auto st = mat.strides();
  const auto sz = mat.sizes();
  if (st[last - 1] == 1 && st[last] >= std::max<int64_t>(1, sz[last - 1])) {
    TORCH_CHECK(st[last] % align == 0, "strides should be multiple of 16 bytes");
  } else if (st[last] == 1 && st[last - 1] >= std::max<int64_t>(1, sz[last])) {
    TORCH_CHECK(st[last - 1] % align == 0, "strides should be multiple of 16 bytes");
  } else {
    TORCH_CHECK(false, "Invalid strides/sizes, got ", st, " for strides and ", sz, " for sizes");
  }
}

at::Tensor vk_grouped_mm(const at::Tensor& mat_a, const at::Tensor& mat_b,
                         const std::optional<at::Tensor>& offs,
                         const std::optional<at::Tensor>& bias,
                         std::optional<at::ScalarType> out_dtype) {
  TORCH_CHECK(grouped_dtype(mat_a.scalar_type()),
              "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got ",
              mat_a.scalar_type());
  TORCH_CHECK(grouped_dtype(mat_b.scalar_type()),
              "Expected mat_b to be Float32, BFloat16 or Float16 matrix, got ",
              mat_b.scalar_type());
  TORCH_CHECK(mat_a.dim() == 2 || mat_a.dim() == 3, "mat_a has to be 2 or 3d");
  TORCH_CHECK(mat_b.dim() == 2 || mat_b.dim() == 3, "mat_b has to be 2 or 3d");
  TORCH_CHECK(mat_a.device() == mat_b.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ",
              mat_a.device(), " and ", mat_b.device(), "!");
  const bool a2 = mat_a.dim() == 2, b2 = mat_b.dim() == 2;
  if (!a2 || !b2) {
    TORCH_CHECK(mat_a.size(-1) == mat_b.size(-2),
                "contraction dimension of mat_a and mat_b must match");
  }
  check_strides(mat_a);
  check_strides(mat_b);
  TORCH_CHECK(offs.has_value() == (a2 || b2),
              "Have to provide offsets if there is a 2d matrix, or no offset if both matrices "
              "are 3d");
  if (offs) {
    TORCH_CHECK(offs->dim() == 1, "offs has to be 1D");
    TORCH_CHECK(offs->scalar_type() == at::kInt, "Offsets have to be int32");
  }
  TORCH_CHECK(!bias.has_value(), "Bias not supported yet");
  const at::ScalarType dtype = out_dtype.value_or(mat_a.scalar_type());
  TORCH_CHECK(dtype == mat_a.scalar_type(), "Grouped gemm output dtype must match `mat_a` dtype");
  TORCH_CHECK(mat_a.scalar_type() == mat_b.scalar_type(),
              "grouped_mm: expected mat_a and mat_b to have the same dtype, but got ",
              mat_a.scalar_type(), " != ", mat_b.scalar_type());
  std::vector<int64_t> size;
  if (a2 && b2) {
    size = {offs->size(0), mat_a.size(0), mat_b.size(1)};
  } else if (a2) {
    TORCH_CHECK(offs->size(0) == mat_b.size(0), "matrix batch sizes have to match");
    size = {mat_a.size(0), mat_b.size(-1)};
  } else if (b2) {
    TORCH_CHECK(offs->size(0) == mat_a.size(0), "matrix batch sizes have to match");
    size = {mat_a.size(1), mat_b.size(1)};
  } else {
    TORCH_CHECK(mat_a.size(0) == mat_b.size(0), "batched dimension has to match");
    size = {mat_a.size(0), mat_a.size(1), mat_b.size(-1)};
  }
  at::Tensor out = at::empty(size, mat_a.options().dtype(dtype));
  at::Tensor offsets = offs ? offs->to(out.device()).contiguous() : at::Tensor();
  // No 16-bit storage: the same products through float32 copies.
  const bool upcast =
      mat_a.scalar_type() == at::kBFloat16 && !vkml_device(out).info().supports_fp16;
  at::Tensor result = upcast ? at::empty(size, out.options().dtype(at::kFloat)) : out;
  // Rows or columns past the last offset belong to no group: zeros, where CUDA leaves
  // them unwritten. A 2-D x 2-D product writes every group's matrix.
  if (mat_a.dim() != mat_b.dim()) result.zero_();
  if (upcast) {
    run_grouped(mat_a.to(at::kFloat), mat_b.to(at::kFloat), offsets, result);
    out.copy_(result);
  } else {
    run_grouped(mat_a, mat_b, offsets, out);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("_grouped_mm", TORCH_FN(vk_grouped_mm)); }

}  // namespace vkml_aten
