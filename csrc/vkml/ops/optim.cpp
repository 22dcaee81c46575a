#include "vkml/ops/optim.h"

#include <algorithm>
#include <bit>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/copy.h"
#include "vkml/ops/launch.h"
#include "vkml/shaders/optim_push.h"

namespace vkml::ops {

namespace {

using optim_detail::Record;

using Push = optim_detail::Push;

constexpr uint32_t kBlock = OPTIM_WG * OPTIM_ITEMS;

}  // namespace

void fused_optimizer_step(Device& dev, OptimRule rule, DType dtype,
                          const std::vector<OptimParam>& params, const OptimHyper& h) {
  const Shader shader = shaders::optim(dtype);
  VKML_CHECK_ARG(shader != Shader::none,
                 std::string("fused optimizer: unsupported dtype ") + dtype_name(dtype));
  const bool f64 = dtype == DType::f64;
  VKML_CHECK_ARG(dtype == DType::f32 || (f64 ? dev.info().supports_fp64 : dev.info().supports_fp16),
                 std::string("fused optimizer: ") + dtype_name(dtype) + " needs shaderFloat" +
                     (f64 ? "64" : "16") + " on " + dev.info().name);
  std::vector<Record> table;
  table.reserve(params.size());
  // Every tensor's bytes, so that the stream sees what the step changes.
  std::vector<Span> reads, writes;
  auto scalar = [&](uint64_t address) {
    if (address) reads.push_back(span_elems(address, 1, sizeof(float)));
  };
  if (h.lr_tensor)
    reads.push_back(span_elems(h.lr_tensor, 1, f64 ? sizeof(double) : sizeof(float)));
  scalar(h.grad_scale);
  scalar(h.found_inf);
  const size_t size = itemsize(dtype);
  uint64_t blocks = 0;
  for (const OptimParam& p : params) {
    if (p.numel == 0) continue;
    check_32bit_indexing(p.numel, p.numel, "fused optimizer");
    table.push_back(Record{.param = p.param,
                           .grad = p.grad,
                           .state0 = p.state0,
                           .state1 = p.state1,
                           .state2 = p.state2,
                           .step = p.step,
                           .first_block = uint32_t(blocks),
                           .numel = uint32_t(p.numel)});
    blocks += (uint64_t(p.numel) + kBlock - 1) / kBlock;
    for (uint64_t t : {p.param, p.grad, p.state0, p.state1, p.state2}) {
      if (!t) continue;
      const Span bytes = span_elems(t, p.numel, size);
      reads.push_back(bytes);
      if (t != p.grad || h.grad_scale) writes.push_back(bytes);  // grads are stored unscaled
    }
    scalar(p.step);
  }
  if (table.empty()) return;
  VKML_CHECK_ARG(blocks < (uint64_t(1) << 32), "fused optimizer: too many elements in one list");
  const KernelTable table_mem =
      put_kernel_table(dev, table.data(), table.size() * sizeof(Record), blocks, reads);

  Push pc{};
  pc.table = table_mem.address;
  pc.lr_ptr = h.lr_tensor;
  pc.grad_scale = h.grad_scale;
  pc.found_inf = h.found_inf;
  pc.lr = float(h.lr);
  pc.beta1 = float(h.beta1);
  pc.beta2 = float(h.beta2);
  pc.weight_decay = float(h.weight_decay);
  pc.eps = float(h.eps);
  pc.lr_bits = std::bit_cast<uint64_t>(h.lr);
  pc.beta1_bits = std::bit_cast<uint64_t>(h.beta1);
  pc.beta2_bits = std::bit_cast<uint64_t>(h.beta2);
  pc.weight_decay_bits = std::bit_cast<uint64_t>(h.weight_decay);
  pc.eps_bits = std::bit_cast<uint64_t>(h.eps);
  pc.count = uint32_t(table.size());
  pc.flags = (h.amsgrad ? OPTIM_AMSGRAD : 0) | (h.maximize ? OPTIM_MAXIMIZE : 0) |
             (h.nesterov ? OPTIM_NESTEROV : 0) | (h.first_step ? OPTIM_FIRST_STEP : 0);
  VkPipeline pipeline = dev.pipelines().get(shader, {int32_t(rule)});
  const Access access = Access::of_lists(reads, writes);
  dispatch_groups(dev, pipeline, &pc, sizeof(pc), blocks, &access);
  release_kernel_table(dev, table_mem);
}

}  // namespace vkml::ops
