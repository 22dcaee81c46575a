#pragma once
// Decides where the stream needs a pipeline barrier. Kernels reach memory
// through device addresses, so Vulkan cannot see their dependencies; a launcher
// that knows which address ranges a dispatch reads and writes declares them,
// and the stream places a barrier only before a dispatch that touches memory an
// earlier, not yet fenced dispatch wrote (read- or write-after-write), or that
// writes memory such a dispatch reads (write-after-read, e.g. an allocation
// reused after its tensor was freed). Independent dispatches then overlap on
// the GPU. A dispatch that declares nothing is fenced on both sides.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vkml {

// A byte range [begin, end) of device addresses.
struct Span {
  uint64_t begin = 0;
  uint64_t end = 0;
};

inline bool overlaps(const Span& a, const Span& b) { return a.begin < b.end && b.begin < a.end; }

// The ranges one command reads and writes. Fixed capacity so that declaring
// them costs no heap allocation on the per-op path.
struct Access {
  static constexpr int kMax = 8;
  Span reads[kMax];
  Span writes[kMax];
  int nreads = 0;
  int nwrites = 0;
  bool overflow = false;  // more spans than fit: treated as unknown (fenced)
  // Multi-tensor kernels: spans beyond the fixed ones, in caller-owned arrays
  // that outlive the call declaring them.
  const Span* more_reads = nullptr;
  size_t n_more_reads = 0;
  const Span* more_writes = nullptr;
  size_t n_more_writes = 0;

  void read(Span s) { add(reads, nreads, s); }
  void write(Span s) { add(writes, nwrites, s); }
  // Read and written: accumulated into, or updated in place.
  void update(Span s) {
    read(s);
    write(s);
  }
  // Declared by caller-owned lists alone (the vectors must outlive its use).
  static Access of_lists(const std::vector<Span>& reads, const std::vector<Span>& writes) {
    Access a;
    a.more_reads = reads.data();
    a.n_more_reads = reads.size();
    a.more_writes = writes.data();
    a.n_more_writes = writes.size();
    return a;
  }

 private:
  void add(Span* set, int& n, Span s) {
    if (s.end <= s.begin) return;
    if (n < kMax)
      set[n++] = s;
    else
      overflow = true;
  }
};

class HazardTracker {
 public:
  // Longer lists of spans are fenced rather than compared one by one.
  static constexpr size_t kMaxCompared = 512;

  HazardTracker();
  // True when a barrier must precede a command with this access (nullptr:
  // unknown access, always fenced).
  bool needs_barrier(const Access* access) const;
  // Records a command after the caller placed a barrier or decided it needs none.
  void record(const Access* access);
  // A barrier was recorded: nothing before it is pending any more.
  void fenced();

 private:
  static bool overlaps(const std::vector<Span>& set, const Span* spans, size_t n);

  // Spans read and written since the last barrier; kept short: past kLimit
  // entries the next command is fenced, so the checks stay cheap.
  static constexpr size_t kLimit = 64;
  std::vector<Span> reads_;
  std::vector<Span> writes_;
  bool unknown_ = false;  // an undeclared command ran since the last barrier
};

}  // namespace vkml
