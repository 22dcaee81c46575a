// torch.distributed for vkml tensors: a c10d backend ("vkml_gloo") that stages vkml tensors
// through host buffers (pinned where possible) into another c10d backend for CPU tensors — a
// ProcessGroupGloo built on the Python side (python/torch_vkml/_distributed.py) and handed in
// as a c10d::Backend, so no Gloo headers are needed here.
//
// Every op is synchronous in this slice: it copies the vkml inputs to the host, runs the inner
// backend's op, waits for its Work, copies the results back to the vkml tensors and returns an
// already-completed Work (with a completed Future, which DDP's reducer reads). Errors of the
// inner backend (timeouts, a peer that went away) surface as exceptions from the call.
#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace vkml_aten {
namespace {

constexpr c10::DeviceType kVkml = c10::DeviceType::PrivateUse1;
constexpr const char* kName = "vkml_gloo";

// A Work that is finished when constructed; its Future holds the op's output tensors.
class StagedWork : public c10d::Work {
 public:
  StagedWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
      : c10d::Work(rank, type), outputs_(std::move(outputs)) {
    std::vector<c10::Device> devices;
    for (const at::Tensor& t : outputs_)
      if (t.defined() && t.device().type() == kVkml &&
          std::find(devices.begin(), devices.end(), t.device()) == devices.end())
        devices.push_back(t.device());
    future_ = c10::make_intrusive<c10::ivalue::Future>(
        c10::ListType::create(c10::TensorType::get()), devices);
    future_->markCompleted(c10::IValue(outputs_));
    finish();
  }
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// A host tensor of t's shape and dtype, contiguous, pinned where the allocator allows it.
at::Tensor host_empty(const at::Tensor& t) {
  at::TensorOptions opts = t.options().device(at::kCPU);
  try {
    return at::empty(t.sizes(), opts.pinned_memory(true));
  } catch (const c10::Error&) {
    return at::empty(t.sizes(), opts);
  }
}

at::Tensor to_host(const at::Tensor& t) {
  at::Tensor h = host_empty(t);
  h.copy_(t);
  return h;
}

std::vector<at::Tensor> to_host(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const at::Tensor& t : ts) out.push_back(to_host(t));
  return out;
}

std::vector<at::Tensor> host_empty(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const at::Tensor& t : ts) out.push_back(host_empty(t));
  return out;
}

std::vector<std::vector<at::Tensor>> to_host(const std::vector<std::vector<at::Tensor>>& ts) {
  std::vector<std::vector<at::Tensor>> out;
  for (const auto& l : ts) out.push_back(to_host(l));
  return out;
}

std::vector<std::vector<at::Tensor>> host_empty(const std::vector<std::vector<at::Tensor>>& ts) {
  std::vector<std::vector<at::Tensor>> out;
  for (const auto& l : ts) out.push_back(host_empty(l));
  return out;
}

void copy_back(std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src) {
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
}

std::vector<at::Tensor> flat(const std::vector<std::vector<at::Tensor>>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& l : ts) out.insert(out.end(), l.begin(), l.end());
  return out;
}

class VkmlStagingBackend : public c10d::Backend {
 public:
  explicit VkmlStagingBackend(c10::intrusive_ptr<c10d::Backend> inner)
      : c10d::Backend(inner->getRank(), inner->getSize()), inner_(std::move(inner)) {}

  const std::string getBackendName() const override { return kName; }

  c10::intrusive_ptr<c10d::Backend> inner() const { return inner_; }

  void setTimeout(std::chrono::milliseconds timeout) override { inner_->setTimeout(timeout); }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    check(tensors, "broadcast");
    std::vector<at::Tensor> host = to_host(tensors);
    run(inner_->broadcast(host, opts));
    if (getRank() != int(opts.rootRank)) copy_back(tensors, host);
    return done(c10d::OpType::BROADCAST, tensors);
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    check(tensors, "allreduce");
    std::vector<at::Tensor> host = to_host(tensors);
    run(inner_->allreduce(host, opts));
    copy_back(tensors, host);
    return done(c10d::OpType::ALLREDUCE, tensors);
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    check(tensors, "allreduce_coalesced");
    std::vector<at::Tensor> host = to_host(tensors);
    run(inner_->allreduce_coalesced(host, opts));
    copy_back(tensors, host);
    return done(c10d::OpType::ALLREDUCE_COALESCED, tensors);
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    check(tensors, "reduce");
    std::vector<at::Tensor> host = to_host(tensors);
    run(inner_->reduce(host, opts));
    if (getRank() == int(opts.rootRank)) copy_back(tensors, host);
    return done(c10d::OpType::REDUCE, tensors);
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override {
    check(inputs, "allgather");
    check(flat(outputs), "allgather");
    std::vector<at::Tensor> in = to_host(inputs);
    std::vector<std::vector<at::Tensor>> out = host_empty(outputs);
    run(inner_->allgather(out, in, opts));
    for (size_t i = 0; i < outputs.size(); ++i) copy_back(outputs[i], out[i]);
    return done(c10d::OpType::ALLGATHER, flat(outputs));
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override {
    check({output, input}, "all_gather_into_tensor");
    at::Tensor in = to_host(input);
    at::Tensor out = host_empty(output);
    run(inner_->_allgather_base(out, in, opts));
    output.copy_(out);
    return done(c10d::OpType::_ALLGATHER_BASE, {output});
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    check(inputs, "gather");
    check(flat(outputs), "gather");
    std::vector<at::Tensor> in = to_host(inputs);
    std::vector<std::vector<at::Tensor>> out = host_empty(outputs);
    run(inner_->gather(out, in, opts));
    for (size_t i = 0; i < outputs.size(); ++i) copy_back(outputs[i], out[i]);
    return done(c10d::OpType::GATHER, flat(outputs));
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    check(outputs, "scatter");
    check(flat(inputs), "scatter");
    std::vector<std::vector<at::Tensor>> in = to_host(inputs);
    std::vector<at::Tensor> out = host_empty(outputs);
    run(inner_->scatter(out, in, opts));
    copy_back(outputs, out);
    return done(c10d::OpType::SCATTER, outputs);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    check(outputs, "reduce_scatter");
    check(flat(inputs), "reduce_scatter");
    std::vector<std::vector<at::Tensor>> in = to_host(inputs);
    std::vector<at::Tensor> out = host_empty(outputs);
    run(inner_->reduce_scatter(out, in, opts));
    copy_back(outputs, out);
    return done(c10d::OpType::REDUCE_SCATTER, outputs);
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    check({output, input}, "reduce_scatter_tensor");
    at::Tensor in = to_host(input);
    at::Tensor out = host_empty(output);
    run(inner_->_reduce_scatter_base(out, in, opts));
    output.copy_(out);
    return done(c10d::OpType::_REDUCE_SCATTER_BASE, {output});
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override {
    check({output, input}, "all_to_all_single");
    at::Tensor in = to_host(input);
    at::Tensor out = host_empty(output);
    run(inner_->alltoall_base(out, in, output_splits, input_splits, opts));
    output.copy_(out);
    return done(c10d::OpType::ALLTOALL_BASE, {output});
  }

  // Synchronous like the rest: a send returns once Gloo has handed the data over, so a
  // pattern where both ranks isend before they irecv needs the asynchronous staging of a
  // later slice.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override {
    check(tensors, "send");
    std::vector<at::Tensor> host = to_host(tensors);
    run(inner_->send(host, dst, tag));
    return done(c10d::OpType::SEND, tensors);
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override {
    check(tensors, "recv");
    std::vector<at::Tensor> host = host_empty(tensors);
    run(inner_->recv(host, src, tag));
    copy_back(tensors, host);
    return done(c10d::OpType::RECV, tensors);
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
    run(inner_->barrier(opts));
    return done(c10d::OpType::BARRIER, {});
  }

 private:
  void check(const std::vector<at::Tensor>& tensors, const char* op) const {
    c10::optional<c10::Device> device;
    for (const at::Tensor& t : tensors) {
      TORCH_CHECK(t.defined(), kName, " ", op, ": got an undefined tensor");
      TORCH_CHECK(t.device().type() == kVkml, kName, " ", op,
                  ": expected vkml tensors, got a tensor on ", t.device(),
                  " (CPU tensors need a CPU backend in the process group, e.g. "
                  "init_process_group(backend=\"cpu:gloo,vkml:vkml_gloo\"))");
      TORCH_CHECK(t.layout() == c10::kStrided, kName, " ", op,
                  ": only strided (dense) tensors are supported, got layout ", t.layout());
      if (!device) device = t.device();
      TORCH_CHECK(t.device() == *device, kName, " ", op,
                  ": all tensors must be on the same vkml device, got ", *device, " and ",
                  t.device());
    }
  }

  static void run(const c10::intrusive_ptr<c10d::Work>& work) {
    TORCH_CHECK(work, kName, ": the inner backend returned no Work");
    work->wait();
  }

  c10::intrusive_ptr<c10d::Work> done(c10d::OpType type, std::vector<at::Tensor> outputs) const {
    return c10::make_intrusive<StagedWork>(getRank(), type, std::move(outputs));
  }

  c10::intrusive_ptr<c10d::Backend> inner_;
};

}  // namespace

void register_distributed(py::module& m) {
  // Wraps a c10d backend for CPU tensors (a ProcessGroupGloo) into the vkml staging backend.
  // The result is a torch._C._distributed_c10d.Backend (that type is looked up at call time,
  // so torch.distributed need not be initialised when this module loads).
  m.def(
      "_make_staging_backend",
      [](c10::intrusive_ptr<c10d::Backend> inner) -> c10::intrusive_ptr<c10d::Backend> {
        TORCH_CHECK(inner, "_make_staging_backend: no inner backend");
        return c10::make_intrusive<VkmlStagingBackend>(std::move(inner));
      },
      py::arg("inner"));
}

}  // namespace vkml_aten
