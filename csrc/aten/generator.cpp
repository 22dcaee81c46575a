#include "generator.h"

#include <ATen/EmptyTensor.h>
#include <ATen/Utils.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/CallOnce.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <random>

#include "vkml_tensor.h"

namespace vkml_aten {

VkmlGeneratorImpl::VkmlGeneratorImpl(c10::DeviceIndex index)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, index),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}

void VkmlGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}
uint64_t VkmlGeneratorImpl::current_seed() const { return seed_; }
uint64_t VkmlGeneratorImpl::seed() {
  std::random_device rd;
  uint64_t s = (uint64_t(rd()) << 32) | rd();
  set_current_seed(s);
  return s;
}
void VkmlGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }
uint64_t VkmlGeneratorImpl::get_offset() const { return offset_; }

uint64_t VkmlGeneratorImpl::take_offset(uint64_t n) {
  uint64_t o = offset_;
  offset_ += n;
  return o;
}

VkmlGeneratorImpl::Draw VkmlGeneratorImpl::take_draw() {
  std::lock_guard<std::mutex> lock(mutex_);
  return {current_seed(), take_offset(1)};
}

// State: 16 bytes, seed then offset (little endian), as a CPU uint8 tensor.
c10::intrusive_ptr<c10::TensorImpl> VkmlGeneratorImpl::get_state() const {
  // Not through the dispatcher: torch.compile asks for the state under fake tensors
  // (run_and_save_rng_state), where at::empty would make a tensor without data.
  auto t = at::detail::empty_cpu({16}, at::kByte, std::nullopt, std::nullopt, std::nullopt,
                                 std::nullopt);
  std::memcpy(t.data_ptr(), &seed_, 8);
  std::memcpy(static_cast<char*>(t.data_ptr()) + 8, &offset_, 8);
  return t.getIntrusivePtr();
}

void VkmlGeneratorImpl::set_state(const c10::TensorImpl& state) {
  at::detail::check_rng_state(state);
  TORCH_CHECK(state.numel() == 16, "vkml RNG state must be 16 bytes, got ", state.numel());
  const char* p = static_cast<const char*>(state.data());
  std::memcpy(&seed_, p, 8);
  std::memcpy(&offset_, p + 8, 8);
}

VkmlGeneratorImpl* VkmlGeneratorImpl::clone_impl() const {
  auto* g = new VkmlGeneratorImpl(device().index());
  g->seed_ = seed_;
  g->offset_ = offset_;
  return g;
}

at::Generator make_generator(c10::DeviceIndex index) {
  return at::make_generator<VkmlGeneratorImpl>(index);
}

const at::Generator& default_generator(c10::DeviceIndex index) {
  static std::mutex m;
  static std::deque<at::Generator> generators;  // deque: references stay valid
  std::lock_guard<std::mutex> lock(m);
  if (generators.empty()) {
    int n = vkml::Runtime::get().device_count();
    for (int i = 0; i < std::max(n, 1); ++i) {
      generators.push_back(make_generator(c10::DeviceIndex(i)));
      generators.back().set_current_seed(67280421310721ull);
    }
  }
  if (index < 0) index = current_device();
  TORCH_CHECK_VALUE(index < c10::DeviceIndex(generators.size()), "vkml device index ", index,
                    " is out of range (", generators.size(), " device(s))");
  return generators[index];
}

VkmlGeneratorImpl* get_generator(const std::optional<at::Generator>& gen, c10::DeviceIndex index) {
  const at::Generator& g = (gen.has_value() && gen->defined()) ? *gen : default_generator(index);
  return at::check_generator<VkmlGeneratorImpl>(g);
}

}  // namespace vkml_aten
