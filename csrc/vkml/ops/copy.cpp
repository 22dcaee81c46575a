#include "vkml/ops/copy.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "vkml/core/error.h"
#include "vkml/ops/launch.h"
#include "vkml/ops/layout.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/shaders/copy_push.h"
#include "vkml/shaders/copy_words_push.h"

namespace vkml::ops {

namespace {

using Push = copy_detail::Push;

// Staging chunks are bounded so a huge transfer does not need one huge
// host-visible allocation.
constexpr uint64_t kStagingChunk = 64ull << 20;

void launch(Device& dev, VkPipeline pipeline, const MultiLayout& l, uint64_t dst, uint64_t src,
            DType dt, DType st, int ndim) {
  if (ndim > 6) {
    int d = ndim - 1;
    for (int64_t i = 0; i < l.sizes[d]; ++i)
      launch(dev, pipeline, l, dst + uint64_t(i * l.strides[0][d] * int64_t(itemsize(dt))),
             src + uint64_t(i * l.strides[1][d] * int64_t(itemsize(st))), dt, st, ndim - 1);
    return;
  }
  Push p{};
  p.dst = dst;
  p.src = src;
  int64_t numel = 1, max_off = 0;
  for (int d = 0; d < ndim; ++d) {
    p.size[d] = int32_t(l.sizes[d]);
    p.dst_stride[d] = int32_t(l.strides[0][d]);
    p.src_stride[d] = int32_t(l.strides[1][d]);
    numel *= l.sizes[d];
    max_off =
        std::max({max_off, (l.sizes[d] - 1) * l.strides[0][d], (l.sizes[d] - 1) * l.strides[1][d]});
  }
  check_32bit_indexing(numel, max_off, "copy");
  p.numel = uint32_t(numel);
  p.ndim = ndim;
  p.dst_dtype = int32_t(dt);
  p.src_dtype = int32_t(st);
  Access access;
  access.write(span_of(dst, itemsize(dt), ndim, l.sizes, l.strides[0]));
  access.read(span_of(src, itemsize(st), ndim, l.sizes, l.strides[1]));
  dispatch_1d(dev, pipeline, &p, sizeof(p), uint64_t(numel), COPY_WG, &access);
}

// One transfer command between two addresses of the device's pools, declared
// to the hazard tracker.
void record_copy(Device& dev, MemoryPool& dst_pool, uint64_t dst_address, MemoryPool& src_pool,
                 uint64_t src_address, uint64_t nbytes) {
  if (!nbytes) return;
  BufferSlice d = dst_pool.find(dst_address);
  BufferSlice s = src_pool.find(src_address);
  Access access;
  access.write(Span{dst_address, dst_address + nbytes});
  access.read(Span{src_address, src_address + nbytes});
  dev.stream().copy_buffer(s.buffer, s.offset, d.buffer, d.offset, nbytes, &access);
}

}  // namespace

void copy_bytes(Device& dev, uint64_t dst_address, uint64_t src_address, uint64_t nbytes) {
  // Whole words go through a kernel where the device says so (DeviceInfo::copies_by_kernel
  // says why); the rest, and copies past the kernel's count of words, through the
  // transfer command.
  if (!nbytes) return;
  const uint64_t align = dst_address | src_address | nbytes;
  const uint64_t word = align % 16 == 0 ? 16 : align % 4 == 0 ? 4 : 0;
  if (!word || nbytes / word > UINT32_MAX || !dev.info().copies_by_kernel) {
    record_copy(dev, dev.memory(), dst_address, dev.memory(), src_address, nbytes);
    return;
  }
  copy_words_detail::Push p{};
  p.dst = dst_address;
  p.src = src_address;
  p.words = uint32_t(nbytes / word);
  Access access;
  access.write(Span{dst_address, dst_address + nbytes});
  access.read(Span{src_address, src_address + nbytes});
  static const PipelineSlots slots({2});
  VkPipeline pipeline = slots.get(dev, {word == 16}, [&] {
    return dev.pipelines().get(word == 16 ? Shader::copy_words_w16 : Shader::copy_words_w4);
  });
  dispatch_1d(dev, pipeline, &p, sizeof(p), p.words, COPY_WORDS_WG, &access);
}

void copy(Device& dev, const TensorRef& dst, const TensorRef& src) {
  VKML_CHECK_ARG(dst.ndim == src.ndim, "copy: rank mismatch");
  MultiLayout l;
  l.noperands = 2;
  set_operand_from(l, 0, dst);
  set_operand_from(l, 1, src);
  l.coalesce();
  if (l.numel() == 0) return;
  DType dt = dst.dtype, st = src.dtype;
  if (dt == st && l.all_contiguous()) {
    copy_bytes(dev, dst.address, src.address, uint64_t(l.numel()) * itemsize(dt));
    return;
  }
  // float64 without shaderFloat64 converts through its bits (integer arithmetic).
  const bool f64 = dt == DType::f64 || st == DType::f64;
  const uint32_t variant = !f64 ? 0 : dev.info().supports_fp64 ? 1 : 2;
  static const PipelineSlots slots({3});
  VkPipeline pipeline = slots.get(dev, {variant}, [&] {
    return dev.pipelines().get(variant == 0   ? Shader::copy_base
                               : variant == 1 ? Shader::copy_f64
                                              : Shader::copy_f64_bits);
  });
  launch(dev, pipeline, l, dst.address, src.address, dt, st, l.ndim);
}

// Declared copies: an upload or download waits only for work touching its own bytes.
void upload(Device& dev, uint64_t dst_address, const void* src, uint64_t nbytes) {
  for (uint64_t done = 0; done < nbytes;) {
    uint64_t n = std::min(kStagingChunk, nbytes - done);
    Allocation staging = dev.staging().allocate(n);
    std::memcpy(staging.host, static_cast<const char*>(src) + done, n);
    record_copy(dev, dev.memory(), dst_address + done, dev.staging(), staging.address, n);
    dev.stream().free_after_use(dev.staging(), staging.address);
    done += n;
  }
}

void download(Device& dev, void* dst, uint64_t src_address, uint64_t nbytes, uint64_t chunk) {
  if (!nbytes) return;
  chunk = std::max<uint64_t>(chunk, 1);
  struct InFlight {
    Allocation staging;
    uint64_t done, n, value;
  };
  auto start = [&](uint64_t done) {
    uint64_t n = std::min(chunk, nbytes - done);
    Allocation staging = dev.staging().allocate(n);
    record_copy(dev, dev.staging(), staging.address, dev.memory(), src_address + done, n);
    return InFlight{staging, done, n, dev.stream().flush()};
  };
  auto finish = [&](const InFlight& f) {
    dev.stream().wait(f.value);
    std::memcpy(static_cast<char*>(dst) + f.done, f.staging.host, f.n);
    dev.staging().free(f.staging.address);
  };
  InFlight current = start(0);
  while (current.done + current.n < nbytes) {
    InFlight next = start(current.done + current.n);  // the GPU copies it meanwhile
    finish(current);
    current = next;
  }
  finish(current);
  // The host reads the device: what the kernels before it found is raised here.
  dev.errors().raise_pending();
}

void copy_pinned_to_device(Device& dev, uint64_t dst_address, uint64_t pinned_address,
                           uint64_t nbytes) {
  record_copy(dev, dev.memory(), dst_address, dev.staging(), pinned_address, nbytes);
  // Submitted at once, as on a CUDA stream: the GPU starts the transfer as soon as it
  // reaches it, and the caller's next synchronize finds it under way.
  dev.stream().flush();
}

void copy_device_to_pinned(Device& dev, uint64_t pinned_address, uint64_t src_address,
                           uint64_t nbytes) {
  record_copy(dev, dev.staging(), pinned_address, dev.memory(), src_address, nbytes);
  // Submitted at once: the host reads these bytes without telling us when (after an
  // event or a synchronize, or by polling), so they must not wait in an open batch.
  dev.stream().flush();
}

KernelTable put_kernel_table(Device& dev, const void* records, uint64_t nbytes, uint64_t groups,
                             std::vector<Span>& reads) {
  constexpr uint64_t kDeviceTableGroups = 256;
  KernelTable t;
  t.on_device = groups >= kDeviceTableGroups;
  if (t.on_device) {
    t.address = dev.memory().allocate(nbytes).address;
    upload(dev, t.address, records, nbytes);
    reads.push_back(Span{t.address, t.address + nbytes});
  } else {
    Allocation staging = dev.staging().allocate(nbytes);
    std::memcpy(staging.host, records, nbytes);
    t.address = staging.address;
  }
  return t;
}

void release_kernel_table(Device& dev, const KernelTable& table) {
  if (table.on_device) {
    dev.memory().free(table.address);
  } else {
    dev.stream().free_after_use(dev.staging(), table.address);
  }
}

}  // namespace vkml::ops
