// The issuer and completer threads of vkml_gloo's staged collectives (distributed_staging.h).
#include "distributed_staging.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <utility>

#include "vkml_tensor.h"

namespace vkml_aten::distributed {

StagedWork::StagedWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                       std::optional<c10::Device> device)
    : c10d::Work(rank, type), outputs_(std::move(outputs)), device_(device) {
  std::vector<c10::Device> devices;
  if (device_) {
    devices.push_back(*device_);
    stream_ = c10::impl::getDeviceGuardImpl(device_->type())->getStream(*device_);
  }
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                     devices);
}

void StagedWork::complete(std::exception_ptr error) {
  if (done_.exchange(true)) return;
  // The Future records an event on the device's stream after the copies back, so whoever
  // waits on it (DDP's reducer, a then() callback) runs after the results are in place.
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(error);
}

StagingQueue::StagingQueue()
    : state_(std::make_shared<State>()),
      issuer_([state = state_] { issue_loop(state); }),
      completer_([state = state_] { complete_loop(state); }) {}

StagingQueue::~StagingQueue() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->issue_cv.notify_all();
  state_->complete_cv.notify_all();
  // A then() callback on the completer thread may drop the group's last reference: that
  // thread cannot join itself; it finishes on its own, on the state it shares.
  for (std::thread* t : {&issuer_, &completer_}) {
    if (t->get_id() == std::this_thread::get_id())
      t->detach();
    else
      t->join();
  }
}

void StagingQueue::submit(c10::intrusive_ptr<StagedWork> work) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->to_issue.push_back(std::move(work));
  }
  state_->issue_cv.notify_one();
}

void StagingQueue::issue_loop(const std::shared_ptr<State>& state) {
  for (;;) {
    c10::intrusive_ptr<StagedWork> work;
    {
      std::unique_lock<std::mutex> lock(state->mutex);
      state->issue_cv.wait(lock, [&] { return state->stopping || !state->to_issue.empty(); });
      if (state->to_issue.empty()) {
        state->issuer_done = true;
        break;
      }
      work = std::move(state->to_issue.front());
      state->to_issue.pop_front();
    }
    c10::OptionalDeviceGuard guard(work->device());
    c10::OptionalStreamGuard stream_guard(work->stream());
    std::vector<Part>& parts = work->parts();
    for (size_t i = 0; i < parts.size() && !work->done(); ++i) {
      Step step{work, i, nullptr};
      try {
        if (parts[i].before) parts[i].before();
        if (parts[i].ready)
          guarded([&] {
            device_at(work->device()->index()).stream().wait_in_background(parts[i].ready);
          });
        parts[i].inner = parts[i].start();
        TORCH_CHECK(parts[i].inner, "vkml_gloo: the inner backend returned no Work");
      } catch (...) {
        step.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        state->to_complete.push_back(step);
      }
      state->complete_cv.notify_one();
      if (step.error) break;
    }
  }
  state->complete_cv.notify_all();
}

void StagingQueue::complete_loop(const std::shared_ptr<State>& state) {
  for (;;) {
    Step step;
    {
      std::unique_lock<std::mutex> lock(state->mutex);
      state->complete_cv.wait(lock,
                              [&] { return state->issuer_done || !state->to_complete.empty(); });
      if (state->to_complete.empty()) break;
      step = std::move(state->to_complete.front());
      state->to_complete.pop_front();
    }
    StagedWork& work = *step.work;
    if (work.done()) continue;  // an earlier part failed
    if (step.error) {
      work.complete(step.error);
      continue;
    }
    c10::OptionalDeviceGuard guard(work.device());
    c10::OptionalStreamGuard stream_guard(work.stream());
    // Writing the results is the collective's, not autograd's: no in-place check on
    // tensors that require grad, as for CUDA's collectives.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    try {
      Part& part = work.parts()[step.part];
      part.inner->wait();
      if (part.finish) {
        part.finish();
        // The copies back start now, as a CUDA copy would, not at the caller's next
        // synchronize: a chunk's copy then overlaps the transfer of the next one.
        if (work.device()) guarded([&] { device_at(work.device()->index()).stream().flush(); });
      }
      if (step.part + 1 == work.parts().size()) work.complete(nullptr);
    } catch (...) {
      work.complete(std::current_exception());
    }
  }
}

}  // namespace vkml_aten::distributed
