#pragma once
// The asynchronous half of the vkml_gloo backend (distributed.cpp): a collective's Work and
// the two helper threads that carry it, so the thread that issues a collective (the Python
// thread, or autograd's while DDP fires a bucket) waits for nothing.
//
// A collective is split into parts. The issuing thread queues each part's device-to-host
// copies into pinned buffers and notes the stream's timeline value after them. The issuer
// thread waits for that value (without holding the stream) and starts the inner backend's op
// on the host buffers; the completer thread waits for that op and queues the copies back to
// the device, then completes the Work and its Future. Large tensors are several parts, so
// copies of one chunk overlap the transfer of another. One issuer keeps the inner ops in the
// order the program issued them, as every rank must.
#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace vkml_aten::distributed {

struct Part {
  // Runs on the issuer thread before it waits for `ready`, so it overlaps the device's copies
  // (the ranks' agreement check); may be empty.
  std::function<void()> before;
  // The device stream's timeline value after this part's copies to the host (0: none).
  uint64_t ready = 0;
  // Starts the inner op on host buffers (issuer thread).
  std::function<c10::intrusive_ptr<c10d::Work>()> start;
  // Queues the results' copies back to the device (completer thread); may be empty.
  std::function<void()> finish;
  c10::intrusive_ptr<c10d::Work> inner;
};

class StagedWork : public c10d::Work {
 public:
  // `outputs` are the vkml tensors the op writes (the Future's value); `device` is theirs
  // (none for a barrier).
  StagedWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
             std::optional<c10::Device> device);
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  std::optional<c10::Device> device() const { return device_; }
  // The stream that was current when the collective was called: its copies to the host
  // were queued there, and the copies back go there too.
  std::optional<c10::Stream> stream() const { return stream_; }
  std::vector<Part>& parts() { return parts_; }
  // The op's vkml tensors, inputs included, stay allocated until the Work goes: Gloo may use
  // their memory in place, and the device's allocator cannot know when the host is done.
  void keep_alive(std::vector<at::Tensor> tensors) { kept_ = std::move(tensors); }
  // Marks the Work and its Future done (or failed); only the first call counts. The parts
  // keep their host buffers until the Work goes (freed once the copies queued from them ran).
  void complete(std::exception_ptr error);
  bool done() const { return done_.load(); }

 private:
  std::vector<at::Tensor> outputs_;
  std::optional<c10::Device> device_;
  std::optional<c10::Stream> stream_;
  std::vector<Part> parts_;
  std::vector<at::Tensor> kept_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> done_{false};
};

class StagingQueue {
 public:
  StagingQueue();
  ~StagingQueue();  // finishes what was queued, then joins both threads
  StagingQueue(const StagingQueue&) = delete;
  StagingQueue& operator=(const StagingQueue&) = delete;

  void submit(c10::intrusive_ptr<StagedWork> work);

 private:
  struct Step {
    c10::intrusive_ptr<StagedWork> work;
    size_t part = 0;           // the part the issuer started
    std::exception_ptr error;  // the issuer failed before starting `part`
  };
  // Shared with the threads, so that one of them may outlive the queue (see ~StagingQueue).
  struct State {
    std::mutex mutex;
    std::condition_variable issue_cv, complete_cv;
    std::deque<c10::intrusive_ptr<StagedWork>> to_issue;
    std::deque<Step> to_complete;
    bool stopping = false;
    bool issuer_done = false;
  };
  static void issue_loop(const std::shared_ptr<State>& state);
  static void complete_loop(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;
  std::thread issuer_, completer_;
};

}  // namespace vkml_aten::distributed
