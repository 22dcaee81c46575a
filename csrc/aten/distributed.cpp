// torch.distributed for vkml tensors: a c10d backend ("vkml_gloo") that hands vkml tensors to
// another c10d backend for CPU tensors through the host (distributed_host.h: the tensors
// themselves where the device's memory is host-mapped, pinned buffers elsewhere). The inner
// backend is a ProcessGroupGloo built on the Python side (python/torch_vkml/_distributed.py)
// and handed in as a c10d::Backend, so no Gloo headers are needed here.
//
// Every op returns at once: it queues the copies of its inputs to the host and hands the rest
// to the backend's staging threads (distributed_staging.h), which run the inner op and copy
// the results back. Its Work's wait() and Future complete once the results are on the device
// (DDP's reducer waits on the Future), and errors of the inner backend (timeouts, a peer that
// went away) are raised from there.
#include <ATen/ATen.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "distributed_agreement.h"
#include "distributed_host.h"
#include "distributed_staging.h"
#include "vkml_tensor.h"

namespace py = pybind11;

namespace vkml_aten {
namespace {

using namespace distributed;  // the staging threads, host buffers and checks of this backend
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

constexpr c10::DeviceType kVkml = c10::DeviceType::PrivateUse1;
constexpr const char* kName = "vkml_gloo";
// A single all_reduce larger than two of these goes in chunks of this size, so the copies of
// one chunk overlap the transfer of the one before (measured: docs/distributed.md).
constexpr int64_t kChunkBytes = int64_t(4) << 20;

// The element counts of a gather into (or reduce-scatter from) one tensor, checked as NCCL
// checks them.
void check_sizes(const at::Tensor& whole, const at::Tensor& part, int world, const char* op) {
  TORCH_CHECK_VALUE(whole.numel() == part.numel() * world, kName, " ", op,
                    ": the output must hold world size (", world, ") times the input's ",
                    "elements; got ", whole.numel(), " and ", part.numel());
  TORCH_CHECK_TYPE(whole.scalar_type() == part.scalar_type(), kName, " ", op,
                   ": input and output must have the same dtype, got ", part.scalar_type(), " and ",
                   whole.scalar_type());
}

TensorList flat(const std::vector<TensorList>& ts) {
  TensorList out;
  for (const auto& l : ts) out.insert(out.end(), l.begin(), l.end());
  return out;
}

TensorList cat_lists(TensorList a, const TensorList& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class VkmlStagingBackend : public c10d::Backend {
 public:
  explicit VkmlStagingBackend(c10::intrusive_ptr<c10d::Backend> inner)
      : c10d::Backend(inner->getRank(), inner->getSize()), inner_(std::move(inner)) {}

  const std::string getBackendName() const override { return kName; }

  void setTimeout(std::chrono::milliseconds timeout) override { inner_->setTimeout(timeout); }

  WorkPtr broadcast(TensorList& tensors, const c10d::BroadcastOptions& opts) override {
    const Checked checked = check(tensors, "broadcast");
    bool root = getRank() == int(opts.rootRank);
    TensorList host = root ? stage_out(tensors) : host_buffers(tensors);
    return launch(
        c10d::OpType::BROADCAST, tensors, checked, agreement(inner_, "broadcast", tensors),
        [inner = inner_, host, opts]() mutable { return inner->broadcast(host, opts); },
        [tensors, host, root]() mutable {
          if (!root) copy_back(tensors, host);
        });
  }

  WorkPtr allreduce(TensorList& tensors, const c10d::AllreduceOptions& opts) override {
    const Checked checked = check(tensors, "allreduce");
    if (tensors.size() == 1 && tensors[0].is_contiguous() && !mapped_pointer(tensors[0]) &&
        int64_t(tensors[0].nbytes()) > 2 * kChunkBytes)
      return allreduce_chunked(tensors[0], *checked.device, opts);
    TensorList host = stage_out(tensors);
    return launch(
        c10d::OpType::ALLREDUCE, tensors, checked, agreement(inner_, "all_reduce", tensors),
        [inner = inner_, host, opts]() mutable { return inner->allreduce(host, opts); },
        [tensors, host]() mutable { copy_back(tensors, host); });
  }

  WorkPtr allreduce_coalesced(TensorList& tensors,
                              const c10d::AllreduceCoalescedOptions& opts) override {
    const Checked checked = check(tensors, "allreduce_coalesced");
    TensorList host = stage_out(tensors);
    return launch(
        c10d::OpType::ALLREDUCE_COALESCED, tensors, checked,
        agreement(inner_, "all_reduce_coalesced", tensors),
        [inner = inner_, host, opts]() mutable { return inner->allreduce_coalesced(host, opts); },
        [tensors, host]() mutable { copy_back(tensors, host); });
  }

  WorkPtr reduce(TensorList& tensors, const c10d::ReduceOptions& opts) override {
    const Checked checked = check(tensors, "reduce");
    bool root = getRank() == int(opts.rootRank);
    TensorList host = stage_out(tensors);
    return launch(
        c10d::OpType::REDUCE, tensors, checked, agreement(inner_, "reduce", tensors),
        [inner = inner_, host, opts]() mutable { return inner->reduce(host, opts); },
        [tensors, host, root]() mutable {
          if (root) copy_back(tensors, host);
        });
  }

  WorkPtr allgather(std::vector<TensorList>& outputs, TensorList& inputs,
                    const c10d::AllgatherOptions& opts) override {
    return into_lists("all_gather", c10d::OpType::ALLGATHER, outputs, inputs,
                      [inner = inner_, opts](std::vector<TensorList>& out, TensorList& in) {
                        return inner->allgather(out, in, opts);
                      });
  }

  WorkPtr allgather_coalesced(std::vector<TensorList>& outputs, TensorList& inputs,
                              const c10d::AllgatherOptions& opts) override {
    return into_lists("all_gather_coalesced", c10d::OpType::ALLGATHER_COALESCED, outputs, inputs,
                      [inner = inner_, opts](std::vector<TensorList>& out, TensorList& in) {
                        return inner->allgather_coalesced(out, in, opts);
                      });
  }

  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input,
                          const c10d::AllgatherOptions& opts) override {
    const Checked checked = check({output, input}, "all_gather_into_tensor");
    check_sizes(output, input, getSize(), "all_gather_into_tensor");
    at::Tensor in = stage_out(input), out = host_buffer(output);
    return launch(
        c10d::OpType::_ALLGATHER_BASE, {output}, checked,
        agreement(inner_, "all_gather_into_tensor", TensorList{input}),
        [inner = inner_, in = flat_view(in), out = flat_view(out), opts]() mutable {
          return inner->_allgather_base(out, in, opts);
        },
        [output, out]() mutable { to_device(output, out); });
  }

  WorkPtr allgather_into_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                          const c10d::AllgatherOptions& opts) override {
    return coalesced_tensors("all_gather_into_tensor_coalesced", c10d::OpType::COALESCED, outputs,
                             inputs, /*gather=*/true,
                             [inner = inner_, opts](TensorList& out, TensorList& in) {
                               return inner->allgather_into_tensor_coalesced(out, in, opts);
                             });
  }

  WorkPtr gather(std::vector<TensorList>& outputs, TensorList& inputs,
                 const c10d::GatherOptions& opts) override {
    return into_lists("gather", c10d::OpType::GATHER, outputs, inputs,
                      [inner = inner_, opts](std::vector<TensorList>& out, TensorList& in) {
                        return inner->gather(out, in, opts);
                      });
  }

  WorkPtr scatter(TensorList& outputs, std::vector<TensorList>& inputs,
                  const c10d::ScatterOptions& opts) override {
    const Checked checked = check(cat_lists(outputs, flat(inputs)), "scatter");
    std::vector<TensorList> in = stage_out(inputs);
    TensorList out = host_buffers(outputs);
    return launch(
        c10d::OpType::SCATTER, outputs, checked, agreement(inner_, "scatter", outputs),
        [inner = inner_, in, out, opts]() mutable { return inner->scatter(out, in, opts); },
        [outputs, out]() mutable { copy_back(outputs, out); });
  }

  WorkPtr reduce_scatter(TensorList& outputs, std::vector<TensorList>& inputs,
                         const c10d::ReduceScatterOptions& opts) override {
    const Checked checked = check(cat_lists(outputs, flat(inputs)), "reduce_scatter");
    std::vector<TensorList> in = stage_out(inputs);
    TensorList out = host_buffers(outputs);
    return launch(
        c10d::OpType::REDUCE_SCATTER, outputs, checked,
        agreement(inner_, "reduce_scatter", outputs),
        [inner = inner_, in, out, opts]() mutable { return inner->reduce_scatter(out, in, opts); },
        [outputs, out]() mutable { copy_back(outputs, out); });
  }

  WorkPtr _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                               const c10d::ReduceScatterOptions& opts) override {
    const Checked checked = check({output, input}, "reduce_scatter_tensor");
    check_sizes(input, output, getSize(), "reduce_scatter_tensor");
    at::Tensor in = stage_out(input), out = host_buffer(output);
    return launch(
        c10d::OpType::_REDUCE_SCATTER_BASE, {output}, checked,
        agreement(inner_, "reduce_scatter_tensor", TensorList{input}),
        [inner = inner_, in, out, opts]() mutable {
          at::Tensor out_flat = flat_view(out), in_flat = flat_view(in);
          return inner->_reduce_scatter_base(out_flat, in_flat, opts);
        },
        [output, out]() mutable { to_device(output, out); });
  }

  WorkPtr reduce_scatter_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                          const c10d::ReduceScatterOptions& opts) override {
    // OpType has no REDUCE_SCATTER_TENSOR_COALESCED before torch 2.12; the label only names
    // the work.
    return coalesced_tensors(
        "reduce_scatter_tensor_coalesced", c10d::OpType::REDUCE_SCATTER, outputs, inputs,
        /*gather=*/false, [inner = inner_, opts](TensorList& out, TensorList& in) {
          return inner->reduce_scatter_tensor_coalesced(out, in, opts);
        });
  }

  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                        std::vector<int64_t>& input_splits,
                        const c10d::AllToAllOptions& opts) override {
    const Checked checked = check({output, input}, "all_to_all_single");
    at::Tensor in = stage_out(input), out = host_buffer(output);
    return launch(
        c10d::OpType::ALLTOALL_BASE, {output}, checked, {},
        [inner = inner_, in, out, output_splits, input_splits, opts]() mutable {
          return inner->alltoall_base(out, in, output_splits, input_splits, opts);
        },
        [output, out]() mutable { to_device(output, out); });
  }

  // Sizes may differ per peer, as with NCCL; Gloo's list form wants them equal, so the
  // lists travel as one flat buffer each through the split form.
  WorkPtr alltoall(TensorList& outputs, TensorList& inputs,
                   const c10d::AllToAllOptions& opts) override {
    const Checked checked = check(cat_lists(outputs, inputs), "all_to_all");
    TORCH_CHECK_VALUE(int(outputs.size()) == getSize() && int(inputs.size()) == getSize(), kName,
                      " all_to_all: expected ", getSize(), " input and output tensors, got ",
                      inputs.size(), " and ", outputs.size());
    std::vector<int64_t> in_splits, out_splits;
    TensorList flat_inputs;
    for (const at::Tensor& t : inputs) {
      TORCH_CHECK_TYPE(
          t.scalar_type() == inputs[0].scalar_type() && t.scalar_type() == outputs[0].scalar_type(),
          kName, " all_to_all: all tensors must have one dtype");
      in_splits.push_back(t.numel());
      flat_inputs.push_back(t.reshape(-1));
    }
    int64_t out_total = 0;
    for (const at::Tensor& t : outputs) {
      out_splits.push_back(t.numel());
      out_total += t.numel();
    }
    // kept by the lambda: Gloo may read it in place
    at::Tensor joined = at::cat(flat_inputs), in = stage_out(joined);
    at::Tensor out = host_buffer({out_total}, outputs[0]);
    return launch(
        c10d::OpType::ALLTOALL, outputs, checked, {},
        [inner = inner_, joined, in, out, out_splits, in_splits, opts]() mutable {
          return inner->alltoall_base(out, in, out_splits, in_splits, opts);
        },
        [outputs, out, out_splits]() mutable {
          int64_t offset = 0;
          for (size_t i = 0; i < outputs.size(); ++i) {
            outputs[i].copy_(out.narrow(0, offset, out_splits[i]).view(outputs[i].sizes()), true);
            offset += out_splits[i];
          }
        });
  }

  // Sends and receives are queued like the collectives, so a rank may post its send before
  // its receive while the peer does the same (the issuer thread never waits for a transfer).
  WorkPtr send(TensorList& tensors, int dst, int tag) override {
    const Checked checked = check(tensors, "send");
    TensorList host = stage_out(tensors);
    return launch(
        c10d::OpType::SEND, tensors, checked, {},
        [inner = inner_, host, dst, tag]() mutable { return inner->send(host, dst, tag); }, {});
  }

  WorkPtr recv(TensorList& tensors, int src, int tag) override {
    const Checked checked = check(tensors, "recv");
    TensorList host = host_buffers(tensors);
    return launch(
        c10d::OpType::RECV, tensors, checked, {},
        [inner = inner_, host, src, tag]() mutable { return inner->recv(host, src, tag); },
        [tensors, host]() mutable { copy_back(tensors, host); });
  }

  WorkPtr barrier(const c10d::BarrierOptions& opts) override {
    return launch(c10d::OpType::BARRIER, {}, Checked{}, agreement(inner_, "barrier", TensorList{}),
                  [inner = inner_, opts]() mutable { return inner->barrier(opts); }, {});
  }

 private:
  // The tensors of a collective and their one vkml device, after checking what the staging
  // supports.
  struct Checked {
    std::optional<c10::Device> device;
    TensorList tensors;
  };

  Checked check(TensorList tensors, const char* op) const {
    std::optional<c10::Device> device;
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
    return {device, std::move(tensors)};
  }

  // The stream's timeline value after every copy queued so far on the device.
  static uint64_t mark(const c10::Device& device) {
    return guarded([&] { return device_at(device.index()).stream().flush(); });
  }

  // The gathers into lists of tensors (all_gather, its coalesced form, gather).
  WorkPtr into_lists(const char* op, c10d::OpType type, std::vector<TensorList>& outputs,
                     TensorList& inputs,
                     std::function<WorkPtr(std::vector<TensorList>&, TensorList&)> call) {
    const Checked checked = check(cat_lists(inputs, flat(outputs)), op);
    TensorList in = stage_out(inputs);
    std::vector<TensorList> out = host_buffers(outputs);
    return launch(
        type, flat(outputs), checked, agreement(inner_, op, inputs),
        [in, out, call = std::move(call)]() mutable { return call(out, in); },
        [outputs, out]() mutable {
          for (size_t i = 0; i < outputs.size(); ++i) copy_back(outputs[i], out[i]);
        });
  }

  // The coalesced *_tensor collectives: pairs of a whole tensor and one rank's part of it
  // (the output when gathering, the input when reduce-scattering), flat for Gloo.
  WorkPtr coalesced_tensors(const char* op, c10d::OpType type, TensorList& outputs,
                            TensorList& inputs, bool gather,
                            std::function<WorkPtr(TensorList&, TensorList&)> call) {
    const Checked checked = check(cat_lists(outputs, inputs), op);
    TORCH_CHECK_VALUE(outputs.size() == inputs.size(), kName, " ", op, ": ", outputs.size(),
                      " outputs for ", inputs.size(), " inputs");
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (gather)
        check_sizes(outputs[i], inputs[i], getSize(), op);
      else
        check_sizes(inputs[i], outputs[i], getSize(), op);
    }
    TensorList in = stage_out(inputs), out = host_buffers(outputs);
    return launch(
        type, outputs, checked, agreement(inner_, op, inputs),
        [in, out, call = std::move(call)]() mutable {
          TensorList out_flat = flat_views(out), in_flat = flat_views(in);
          return call(out_flat, in_flat);
        },
        [outputs, out]() mutable { copy_back(outputs, out); });
  }

  WorkPtr launch(c10d::OpType type, TensorList outputs, const Checked& checked,
                 std::function<void()> before, std::function<WorkPtr()> start,
                 std::function<void()> finish) {
    const std::optional<c10::Device>& device = checked.device;
    auto work = c10::make_intrusive<StagedWork>(getRank(), type, std::move(outputs), device);
    work->keep_alive(checked.tensors);
    Part part;
    part.before = std::move(before);
    // After the device's copies to the host, and after everything queued before that may
    // still read or write the tensors Gloo uses in place.
    part.ready = device ? mark(*device) : 0;
    part.start = std::move(start);
    part.finish = std::move(finish);
    work->parts().push_back(std::move(part));
    queue_.submit(work);
    return work;
  }

  // One all_reduce per chunk: the device copies the next chunk to the host while the inner
  // backend reduces this one, and copies this one back while it reduces the next.
  WorkPtr allreduce_chunked(at::Tensor tensor, c10::Device device,
                            const c10d::AllreduceOptions& opts) {
    auto work = c10::make_intrusive<StagedWork>(getRank(), c10d::OpType::ALLREDUCE,
                                                TensorList{tensor}, device);
    at::Tensor src = tensor.view(-1), host = host_buffer(src);
    const int64_t step = std::max<int64_t>(1, kChunkBytes / int64_t(tensor.element_size()));
    for (int64_t off = 0; off < src.numel(); off += step) {
      const int64_t len = std::min(step, src.numel() - off);
      at::Tensor dev_chunk = src.narrow(0, off, len), host_chunk = host.narrow(0, off, len);
      host_chunk.copy_(dev_chunk, /*non_blocking=*/true);
      Part part;
      part.ready = mark(device);
      if (off == 0) part.before = agreement(inner_, "all_reduce", {tensor});
      part.start = [inner = inner_, host_chunk, opts]() mutable {
        TensorList chunk{host_chunk};
        return inner->allreduce(chunk, opts);
      };
      part.finish = [dev_chunk, host_chunk]() mutable { to_device(dev_chunk, host_chunk); };
      work->parts().push_back(std::move(part));
    }
    queue_.submit(work);
    return work;
  }

  c10::intrusive_ptr<c10d::Backend> inner_;
  // Declared last: destroyed first, so its threads finish before inner_ goes.
  distributed::StagingQueue queue_;
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
