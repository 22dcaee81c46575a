#include "vkml/ops/fft.h"

#include <algorithm>
#include <compare>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "vkml/core/error.h"
#include "vkml/ops/copy.h"
#include "vkml/ops/launch.h"

#ifdef VKML_HAVE_VKFFT
#include "vkml/ops/fft_vkfft.h"
#endif

namespace vkml::ops {

#ifdef VKML_HAVE_VKFFT
namespace {

struct Key {
  FftKind kind;
  bool inverse;
  bool double_precision;
  int rank;
  int64_t n[3];
  int64_t batch;
  auto operator<=>(const Key&) const = default;
};

Key key_of(const FftArgs& a) {
  Key k{a.kind, a.kind == FftKind::C2C && a.inverse, a.double_precision, a.rank, {1, 1, 1},
        a.batch};
  std::copy(a.n, a.n + a.rank, k.n);
  return k;
}

// The bytes of the complex data (onesided for R2C / C2R) and of the real data, and
// the size of the buffer holding the real data: VkFFT 1.2.26 sizes the range it binds
// there as for the complex data, which is larger, so the buffer is that large.
struct Sizes {
  uint64_t complex_bytes = 0;
  uint64_t real_bytes = 0;
  uint64_t real_buffer_bytes = 0;
};

Sizes sizes_of(const FftArgs& a) {
  const uint64_t real_size = a.double_precision ? 8 : 4;
  uint64_t signal = 1;
  for (int i = 0; i < a.rank - 1; ++i) signal *= uint64_t(a.n[i]);
  const uint64_t last = uint64_t(a.n[a.rank - 1]);
  Sizes s;
  if (a.kind == FftKind::C2C) {
    s.complex_bytes = uint64_t(a.batch) * signal * last * 2 * real_size;
  } else {
    s.complex_bytes = uint64_t(a.batch) * signal * (last / 2 + 1) * 2 * real_size;
    s.real_bytes = uint64_t(a.batch) * signal * last * real_size;
    s.real_buffer_bytes = std::max(s.real_bytes, s.complex_bytes);
  }
  return s;
}

// A length VkFFT has no kernels for (fft_plannable).
struct UnsupportedLength : Error {
  using Error::Error;
};

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Working memory every plan of a device shares, as transforms run one after another
// (on another stream than the last transform's, after it: PlanCache::order): one
// chunk of the device pool, to which each plan binds buffers of
// its own (VkFFT's descriptor sets name buffers, fixed at plan time, while tensors
// are chunks of shared pool blocks). Inputs are copied in, results copied out.
struct Arena {
  Device& dev;
  Allocation alloc;
  BufferSlice slice;
  Arena(Device& d, uint64_t bytes) : dev(d), alloc(d.memory().allocate(bytes)) {
    slice = d.memory().find(alloc.address);
  }
  ~Arena() { dev.free_after_all_streams(dev.memory(), alloc.address); }
};

struct VkfftPlanDeleter {
  void operator()(VkmlFftPlan* p) const { vkml_vkfft_plan_destroy(p); }
};

void initialize_vkfft() {
  static std::once_flag once;
  std::call_once(once, [] {
    VkmlFftFunctions f{};
#define VKML_FFT_COPY(name) f.name = vk::name;
    VKML_VKFFT_FUNCS(VKML_FFT_COPY)
#undef VKML_FFT_COPY
    if (vkml_vkfft_initialize(&f) != 0)
      fail(ErrorKind::Internal, "vkml: glslang (VkFFT's compiler) failed to initialize");
  });
}

struct Plan {
  std::shared_ptr<Arena> arena;
  Sizes sizes;
  uint64_t real_offset = 0;  // of the real data in the arena
  VkOwned<VkBuffer> complex, real;
  // Last, so it goes before the buffers its descriptor sets name.
  std::unique_ptr<VkmlFftPlan, VkfftPlanDeleter> fft;
  uint64_t last_use = 0;  // timeline value of last_stream after which the GPU is done
  Stream* last_stream = nullptr;
};

class PlanCache : public Device::Attachment {
 public:
  explicit PlanCache(Device& dev) : dev_(dev), pool_(dev.handle()), fence_(dev.handle()) {
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = dev.queue_family();
    VKML_CHECK_VK(vk::vkCreateCommandPool(dev.handle(), &pi, nullptr, pool_.put()));
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKML_CHECK_VK(vk::vkCreateFence(dev.handle(), &fi, nullptr, fence_.put()));
  }
  // The device is idle when attachments go: plans are destroyed at once.
  ~PlanCache() override = default;

  std::mutex mutex;

  // Orders a transform recorded on `stream` after the last one, which used the shared
  // arena, where that ran on another stream; then notes this one's end.
  void order(Stream& stream) {
    if (last_stream_ && last_stream_ != &stream) stream.wait_for(*last_stream_, last_value_);
    last_stream_ = &stream;
  }
  void ran(uint64_t value) { last_value_ = value; }

  Plan& get(const FftArgs& a) {
    const Key key = key_of(a);
    auto found = index_.find(key);
    if (found != index_.end()) {
      lru_.splice(lru_.begin(), lru_, found->second);
      return *found->second->second;
    }
    sweep_retired();
    auto plan = make_plan(a);
    lru_.emplace_front(key, std::move(plan));
    index_[key] = lru_.begin();
    return *lru_.front().second;
  }

  bool plannable(const FftArgs& a) {
    const Key key = key_of(a);
    if (index_.count(key)) return true;
    if (rejected_.count(key)) return false;
    try {
      get(a);
      trim();
      return true;
    } catch (const UnsupportedLength&) {
      rejected_.insert(key);
      return false;
    }
  }

  // Retires the least recently used plans beyond max_size.
  void trim() {
    while (int64_t(lru_.size()) > max_size_) {
      index_.erase(lru_.back().first);
      retired_.push_back(std::move(lru_.back().second));
      lru_.pop_back();
    }
  }

  FftPlanCacheInfo info() const { return {int64_t(lru_.size()), max_size_}; }
  void set_max_size(int64_t n) {
    max_size_ = n;
    trim();
    sweep_retired();
  }
  // Drops every plan and the working buffer, waiting for the GPU to finish with them
  // (as empty_cache does), so that their memory is back in the pool on return.
  void clear() {
    const int64_t keep = max_size_;
    max_size_ = 0;
    trim();
    max_size_ = keep;
    arena_.reset();
    dev_.wait_idle();
    retired_.clear();
  }

  // cuFFT's default plan cache size in PyTorch.
  static constexpr int64_t kDefaultMaxSize = 4096;

 private:
  using Entry = std::pair<Key, std::unique_ptr<Plan>>;

  // Destroys retired plans the GPU has finished with (no wait).
  void sweep_retired() {
    if (retired_.empty()) return;
    std::erase_if(retired_, [](const std::unique_ptr<Plan>& p) {
      return !p->last_stream || p->last_use <= p->last_stream->completed_value();
    });
  }

  // The arena, replaced by one at least twice as large when `bytes` do not fit; plans
  // bound to the old one retire (they are rebuilt when used again), so the memory
  // held stays below twice the largest transform's.
  std::shared_ptr<Arena> arena_for(uint64_t bytes) {
    if (arena_ && arena_->alloc.size >= bytes) return arena_;
    const uint64_t grown = arena_ ? std::max(bytes, 2 * arena_->alloc.size) : bytes;
    std::shared_ptr<Arena> next;
    try {
      next = std::make_shared<Arena>(dev_, grown);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::OutOfMemory || grown == bytes) throw;
      next = std::make_shared<Arena>(dev_, bytes);
    }
    for (auto it = lru_.begin(); it != lru_.end();) {
      if (it->second->arena == arena_) {
        index_.erase(it->first);
        retired_.push_back(std::move(it->second));
        it = lru_.erase(it);
      } else {
        ++it;
      }
    }
    arena_ = std::move(next);
    return arena_;
  }

  // A buffer of `bytes` over the arena's memory at `offset`.
  VkOwned<VkBuffer> bind(const Arena& arena, uint64_t offset, uint64_t bytes) {
    VkDevice d = dev_.handle();
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkOwned<VkBuffer> buffer(d);
    VKML_CHECK_VK(vk::vkCreateBuffer(d, &bi, nullptr, buffer.put()));
    VkMemoryRequirements req;
    vk::vkGetBufferMemoryRequirements(d, buffer.get(), &req);
    const uint64_t at = arena.slice.offset + offset;
    if (at % req.alignment != 0)
      fail(ErrorKind::Internal, "vkml: FFT working memory misaligned for the driver");
    VKML_CHECK_VK(vk::vkBindBufferMemory(d, buffer.get(), arena.slice.memory, at));
    return buffer;
  }

  std::unique_ptr<Plan> make_plan(const FftArgs& a) {
    auto plan = std::make_unique<Plan>();
    plan->sizes = sizes_of(a);
    plan->real_offset = align_up(plan->sizes.complex_bytes, MemoryPool::kAlignment);
    plan->arena = arena_for(plan->real_offset + plan->sizes.real_buffer_bytes);
    plan->complex = bind(*plan->arena, 0, plan->sizes.complex_bytes);
    if (plan->sizes.real_bytes)
      plan->real = bind(*plan->arena, plan->real_offset, plan->sizes.real_buffer_bytes);
    initialize_vkfft();
    VkmlFftProblem p{};
    p.kind = a.kind == FftKind::C2C   ? VKML_FFT_C2C
             : a.kind == FftKind::R2C ? VKML_FFT_R2C
                                      : VKML_FFT_C2R;
    p.inverse = a.inverse;
    p.double_precision = a.double_precision;
    p.rank = a.rank;
    for (int i = 0; i < a.rank; ++i) p.size[i] = uint64_t(a.n[a.rank - 1 - i]);  // x innermost
    p.batch = uint64_t(a.batch);
    p.physical = dev_.physical();
    p.device = dev_.handle();
    p.command_pool = pool_.get();
    p.fence = fence_.get();
    p.complex_buffer = plan->complex.get();
    p.complex_bytes = plan->sizes.complex_bytes;
    p.real_buffer = plan->real.get();
    p.real_bytes = plan->sizes.real_buffer_bytes;
    int result = 0;
    VkmlFftPlan* made = nullptr;
    dev_.stream().with_queue([&](VkQueue queue) {
      p.queue = queue;
      result = vkml_vkfft_plan_create(&p, &made);
    });
    if (result != 0) {
      const bool unsupported = result == VKML_VKFFT_UNSUPPORTED_RADIX ||
                               result == VKML_VKFFT_UNSUPPORTED_LENGTH ||
                               result == VKML_VKFFT_UNSUPPORTED_LENGTH_R2C;
      std::string shape;
      for (int i = 0; i < a.rank; ++i) shape += (i ? "x" : "") + std::to_string(a.n[i]);
      const std::string what = "vkml: VkFFT cannot plan a transform of size " + shape + " (batch " +
                               std::to_string(a.batch) + "): VkFFT error " + std::to_string(result);
      if (unsupported) throw UnsupportedLength(ErrorKind::InvalidArgument, what);
      fail(result == 1 ? ErrorKind::OutOfMemory : ErrorKind::InvalidArgument, what);
    }
    plan->fft.reset(made);
    return plan;
  }

  Device& dev_;
  VkOwned<VkCommandPool> pool_;
  VkOwned<VkFence> fence_;
  std::shared_ptr<Arena> arena_;
  std::list<Entry> lru_;  // most recently used first
  std::map<Key, std::list<Entry>::iterator> index_;
  std::vector<std::unique_ptr<Plan>> retired_;  // until the GPU has run their last use
  std::set<Key> rejected_;                      // lengths VkFFT has no kernels for
  Stream* last_stream_ = nullptr;               // of the last transform (order())
  uint64_t last_value_ = 0;
  int64_t max_size_ = kDefaultMaxSize;
};

PlanCache& plan_cache(Device& dev) {
  return static_cast<PlanCache&>(
      dev.attachment("fft_plans", [&] { return std::make_unique<PlanCache>(dev); }));
}

void check_args(const FftArgs& a) {
  VKML_CHECK_ARG(a.rank >= 1 && a.rank <= 3, "vkml fft: 1 to 3 dimensions per transform");
  VKML_CHECK_ARG(a.batch >= 1, "vkml fft: empty batch");
  for (int i = 0; i < a.rank; ++i) VKML_CHECK_ARG(a.n[i] >= 1, "vkml fft: empty signal");
}

}  // namespace

bool fft_available() { return true; }

bool fft_plannable(Device& dev, const FftArgs& a) {
  check_args(a);
  PlanCache& cache = plan_cache(dev);
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.plannable(a);
}

void fft(Device& dev, const FftArgs& a) {
  check_args(a);
  PlanCache& cache = plan_cache(dev);
  std::lock_guard<std::mutex> lock(cache.mutex);
  Plan& plan = cache.get(a);
  const Arena& arena = *plan.arena;
  const uint64_t complex_at = arena.alloc.address;
  const uint64_t real_at = complex_at + plan.real_offset;
  const Span complex_span{complex_at, complex_at + plan.sizes.complex_bytes};
  const Span real_span{real_at, real_at + plan.sizes.real_bytes};
  const bool real_in = a.kind == FftKind::R2C, real_out = a.kind == FftKind::C2R;
  const Span in_span = real_in ? real_span : complex_span;
  const Span out_span = real_out ? real_span : complex_span;
  Stream& stream = dev.stream();
  cache.order(stream);

  auto copy = [&](uint64_t from, uint64_t to, uint64_t bytes) { copy_bytes(dev, to, from, bytes); };
  copy(a.in, in_span.begin, in_span.end - in_span.begin);
  Access access;
  access.update(complex_span);
  if (plan.sizes.real_bytes) access.update(Span{real_at, real_at + plan.sizes.real_buffer_bytes});
  int result = 0;
  plan.last_stream = &stream;
  plan.last_use = stream.record_external("vkfft", &access, [&](VkCommandBuffer cb) {
    result = vkml_vkfft_plan_record(plan.fft.get(), cb);
  });
  if (result != 0)
    fail(ErrorKind::Internal,
         "vkml: VkFFT failed to record a transform: VkFFT error " + std::to_string(result));
  copy(out_span.begin, a.out, out_span.end - out_span.begin);
  cache.ran(stream.recorded_value());
  cache.trim();
}

FftPlanCacheInfo fft_plan_cache_info(Device& dev) {
  PlanCache& cache = plan_cache(dev);
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.info();
}

void fft_plan_cache_set_max_size(Device& dev, int64_t max_size) {
  VKML_CHECK_ARG(max_size >= 0, "cuFFT plan cache size must be non-negative");
  PlanCache& cache = plan_cache(dev);
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.set_max_size(max_size);
}

void fft_plan_cache_clear(Device& dev) {
  PlanCache& cache = plan_cache(dev);
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.clear();
}

#else  // built without VkFFT

bool fft_available() { return false; }

[[noreturn]] static void no_vkfft() {
  fail(ErrorKind::Unavailable,
       "vkml was built without VkFFT (Debian: libvkfft-dev glslang-dev); rebuild to run FFTs");
}
bool fft_plannable(Device&, const FftArgs&) { return false; }
void fft(Device&, const FftArgs&) { no_vkfft(); }
FftPlanCacheInfo fft_plan_cache_info(Device&) { return {}; }
void fft_plan_cache_set_max_size(Device&, int64_t) {}
void fft_plan_cache_clear(Device&) {}

#endif

}  // namespace vkml::ops
