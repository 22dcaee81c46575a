#pragma once
// The device random generator: a Philox (seed, offset) pair. Each random op
// takes the current offset and advances it, so the stream of numbers depends
// only on the seed and the sequence of calls, as on CUDA.
#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace vkml_aten {

struct VkmlGeneratorImpl : public c10::GeneratorImpl {
  explicit VkmlGeneratorImpl(c10::DeviceIndex index);
  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  void set_state(const c10::TensorImpl& state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }
  // Reserves `n` counter steps and returns the first one. The caller holds mutex_.
  uint64_t take_offset(uint64_t n = 1);
  // A random op's Philox key and counter: the seed, and one offset reserved for it
  // (locks mutex_).
  struct Draw {
    uint64_t seed, offset;
  };
  Draw take_draw();

 private:
  VkmlGeneratorImpl* clone_impl() const override;
  uint64_t seed_ = 67280421310721ull;
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator make_generator(c10::DeviceIndex index);
// The generator to use: the one given, or the device's default.
VkmlGeneratorImpl* get_generator(const std::optional<at::Generator>& gen, c10::DeviceIndex index);

}  // namespace vkml_aten
