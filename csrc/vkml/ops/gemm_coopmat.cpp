#include "vkml/ops/gemm_coopmat.h"

#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

#include "vkml/core/error.h"
#include "vkml/ops/copy.h"
#include "vkml/ops/gemm_quads.h"
#include "vkml/ops/launch.h"
#include "vkml/runtime/pipeline_slots.h"
#include "vkml/runtime/shader_registry.h"

namespace vkml::ops {

namespace {

using namespace gemm_detail;

// Subgroups per workgroup: 2 x 2, as gemm_coopmat.comp lays them out (2 x 4 when the
// tuning asks for 8). The start-up check runs with the default.
constexpr int32_t kSubgroups = 4;
constexpr int64_t kLargeTile = 128, kSmallTile = 64;
// Products smaller than this on any side stay on the scalar kernel: a 64 x 64
// tile would be mostly empty.
constexpr int64_t kMinSide = 32;

int mode_from_env() {
  const char* v = std::getenv("TORCH_VKML_COOPMAT");
  if (!v || !*v || std::strcmp(v, "1") == 0) return int(CoopmatMode::kAuto);
  if (std::strcmp(v, "0") == 0) return int(CoopmatMode::kOff);
  if (std::strcmp(v, "emulate") == 0) return int(CoopmatMode::kEmulated);
  if (std::strcmp(v, "fp16") == 0) return int(CoopmatMode::kFp16Only);
  std::fprintf(stderr, "torch-vkml: TORCH_VKML_COOPMAT=%s is not 0, 1, fp16 or emulate; using 1\n",
               v);
  return int(CoopmatMode::kAuto);
}

std::atomic<int>& mode_value() {
  static std::atomic<int> mode{mode_from_env()};
  return mode;
}

int32_t env_choice(const char* name, std::initializer_list<int32_t> allowed, int32_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  for (int32_t a : allowed)
    if (std::atoi(v) == a) return a;
  std::fprintf(stderr, "torch-vkml: %s=%s is not one of its values; ignored\n", name, v);
  return fallback;
}

// The tuning as bk | tile << 8 | warps << 16, one atomic so that a reader sees one
// setting.
std::atomic<int32_t>& tuning_value() {
  static std::atomic<int32_t> t{env_choice("TORCH_VKML_COOPMAT_BK", {16, 32}, 0) |
                                env_choice("TORCH_VKML_COOPMAT_TILE", {64, 128}, 0) << 8 |
                                env_choice("TORCH_VKML_COOPMAT_WARPS", {4, 8}, 0) << 16};
  return t;
}

uint32_t bk_class(int32_t bk) { return bk == 16 ? 0 : 1; }

// The fragment shape and subgroup size a device's pipelines are made for;
// `required`: the pipeline requires that size (subgroup size control).
struct Shape {
  uint32_t m = 0, n = 0, k = 0, sg = 0;
  bool required = false;
  bool emulated = false;
  bool bf16 = false;
  Shader shader = Shader::none;
};

bool switched_off(CoopmatMode mode, DType dtype) {
  return mode == CoopmatMode::kOff || (mode == CoopmatMode::kFp16Only && dtype == DType::bf16);
}

bool shape_for(Device& dev, CoopmatMode mode, DType dtype, Shape* s) {
  const DeviceInfo& info = dev.info();
  s->bf16 = dtype == DType::bf16;
  s->emulated = mode == CoopmatMode::kEmulated;
  static constexpr Shader kShaders[2][2] = {
      {Shader::gemm_coopmat_f16, Shader::gemm_coopmat_emulated},
      {Shader::gemm_coopmat_bf16, Shader::gemm_coopmat_emulated_bf16}};
  s->shader = kShaders[s->bf16][s->emulated];
  if (switched_off(mode, dtype) || !info.supports_fp16) return false;
  if (s->bf16 && !info.supports_int16) return false;
  if (s->emulated) {
    s->m = s->n = s->k = 16;
  } else if (s->bf16) {
    s->m = info.coopmat_bf16_m;
    s->n = info.coopmat_bf16_n;
    s->k = info.coopmat_bf16_k;
  } else {
    s->m = info.coopmat_m;
    s->n = info.coopmat_n;
    s->k = info.coopmat_k;
  }
  s->sg = info.subgroup_size;
  s->required = false;
  return s->m != 0 && s->sg != 0 && shader_blob(s->shader);
}

// Whether the kernel can run with subgroups of s.sg.
bool runs_with(const DeviceInfo& info, const Shape& s) {
  if (s.sg == 0 || uint64_t(kSubgroups) * s.sg > info.max_workgroup_invocations) return false;
  // Each thread stages a whole number of quads of the smaller tile (AQ, BQ in the shader),
  // at the forced depth or, automatic, at the shallower one.
  const uint64_t bk = uint64_t(coopmat_tuning().bk ? coopmat_tuning().bk : 16);
  if (uint64_t(kSmallTile) * bk / 4 % (uint64_t(kSubgroups) * s.sg) != 0) return false;
  // Each lane of the emulation owns a whole number of fragment elements.
  return !s.emulated || (s.m * s.n) % s.sg == 0;
}

// The subgroup sizes the start-up check tries, in order. Drivers that pick a compute
// shader's subgroup size themselves (Intel; AMD between 32 and 64) may not run the
// kernel at the size it was built for, and matrix units may need a particular one:
// with subgroup size control each size the device allows is required in turn, the
// device's default first; without it, the default as the driver runs it.
std::vector<Shape> candidates(const DeviceInfo& info, const Shape& base) {
  std::vector<Shape> out;
  auto add = [&](uint32_t sg, bool required) {
    Shape c = base;
    c.sg = sg;
    c.required = required;
    if (runs_with(info, c)) out.push_back(c);
  };
  if (!info.subgroup_size_control) {
    add(info.subgroup_size, false);
    return out;
  }
  const uint32_t lo = info.min_subgroup_size, hi = info.max_subgroup_size;
  if (info.subgroup_size >= lo && info.subgroup_size <= hi) add(info.subgroup_size, true);
  for (uint32_t sg = lo; sg != 0 && sg <= hi; sg *= 2)
    if (sg != info.subgroup_size) add(sg, true);
  return out;
}

// An operand's staged form and load width, gemm_coopmat.comp's A_MFAST / B_KFAST and
// A_VEC / B_VEC.
struct OperandLoad {
  bool transposed = false;  // A contiguous along m, B along k
  int32_t width = 1;        // 1, 4 or 8 elements per load
  uint32_t slot() const { return uint32_t(transposed) * 3 + (width == 8 ? 2 : width == 4 ? 1 : 0); }
};

VkPipeline make_pipeline(Device& dev, const Shape& s, int32_t tile, int32_t bk, int32_t warps,
                         const OperandLoad& a, const OperandLoad& b) {
  return dev.pipelines().get(
      s.shader, {{tile, tile, bk, int32_t(warps * s.sg), int32_t(s.m), int32_t(s.n), int32_t(s.k),
                  int32_t(s.sg), int32_t(a.transposed), int32_t(b.transposed), a.width, b.width},
                 s.required ? s.sg : 0u});
}

// Two stages of the A and B tiles (16-bit, rows padded by 8; each stage holds its
// operand as [tile][bk] or [bk][tile], the first being the larger) and a float staging
// fragment per subgroup.
uint64_t shared_bytes(int64_t tile, int64_t bk, int64_t warps, const Shape& s) {
  return 2 * uint64_t(2 * tile * (bk + 8)) * 2 + uint64_t(warps) * s.m * (s.n + 4) * 4;
}

// Start-up check outcomes, per device and kernel (fp16 / bf16, real / emulated):
// 0 unchecked, kRejected, or the subgroup size that passed (with kRequired where
// required).
constexpr uint32_t kRejected = ~0u, kRequired = 1u << 31;
constexpr int kMaxDevices = 64;
std::array<std::array<std::atomic<uint32_t>, 4>, kMaxDevices> g_outcomes{};
std::mutex g_check_mutex;
// During a check, the candidate the check's own product runs with.
thread_local const Shape* t_checking = nullptr;
// The staging depth the check's product runs with: it checks both, since products
// take either (coopmat_kernel).
thread_local int32_t t_checking_bk = 0;

std::atomic<uint32_t>* outcome_of(Device& dev, const Shape& s) {
  int i = dev.index();
  const size_t kind = (s.bf16 ? 2 : 0) + (s.emulated ? 1 : 0);
  return i >= 0 && i < kMaxDevices ? &g_outcomes[size_t(i)][kind] : nullptr;
}

// IEEE half or bfloat16 bits of the few values the check uses, and back (normal
// values and zero; bfloat16 is fp32's upper half).
uint16_t bits16(float v, bool bf16) {
  if (v == 0.0f) return 0;
  uint32_t x;
  std::memcpy(&x, &v, 4);
  if (bf16) return uint16_t(x >> 16);
  return uint16_t(((x >> 16) & 0x8000u) | ((((x >> 23) & 0xffu) - 112u) << 10) |
                  ((x >> 13) & 0x3ffu));
}
float value16(uint16_t h, bool bf16) {
  uint32_t x = uint32_t(h) << 16;
  if (!bf16) {
    uint32_t e = (h >> 10) & 0x1fu;
    if (e == 0 || e == 31) return (h & 0x7fffu) == 0 ? 0.0f : NAN;
    x = (uint32_t(h & 0x8000u) << 16) | ((e + 112u) << 23) | (uint32_t(h & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// The bfloat16 nearest to f (ties to even), as a float.
float round_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x = (x + 0x7fffu + ((x >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&f, &x, 4);
  return f;
}

// A 101 x 104 by 104 x 88 product of values in {-1, -0.5, 0, 0.5, 1}: every
// partial sum is exact in fp32 (and in fp16), so the answer must be exact in
// any summation order, up to the one rounding of the bf16 store. The sizes
// cover full and ragged tiles and K slices, and the row strides allow eight-element
// loads (A along k, B along n; transposed, B along k and A element-wise). C starts as
// NaN. The product runs at both staging depths, with the operands as given and
// transposed (staged in the other layout, read as column-major fragments).
bool self_check(Device& dev, bool bf16) {
  const int64_t m = 101, n = 88, k = 104;
  auto value = [](int64_t i, int64_t salt) { return float((i * 7 + salt) % 5 - 2) * 0.5f; };
  std::vector<uint16_t> a(size_t(m * k)), b(size_t(k * n));
  std::vector<uint16_t> c(size_t(m * n), bf16 ? 0x7fc0 : 0x7e00);
  for (int64_t i = 0; i < m * k; ++i) a[size_t(i)] = bits16(value(i, 3), bf16);
  for (int64_t i = 0; i < k * n; ++i) b[size_t(i)] = bits16(value(i, 1), bf16);
  std::vector<float> want(c.size());  // every variant's answer, as the store rounds it
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += double(value(i * k + kk, 3)) * double(value(kk * n + j, 1));
      want[size_t(i * n + j)] = bf16 ? round_bf16(float(sum)) : float(sum);
    }
  std::vector<uint16_t> at(a.size()), bt(b.size());  // [k][m] and [n][k]
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk) at[size_t(kk * m + i)] = a[size_t(i * k + kk)];
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < n; ++j) bt[size_t(j * k + kk)] = b[size_t(kk * n + j)];
  uint64_t addr[5] = {0, 0, 0, 0, 0};
  bool ok = false;
  try {
    addr[0] = dev.memory().allocate(a.size() * 2).address;
    addr[1] = dev.memory().allocate(b.size() * 2).address;
    addr[2] = dev.memory().allocate(c.size() * 2).address;
    addr[3] = dev.memory().allocate(at.size() * 2).address;
    addr[4] = dev.memory().allocate(bt.size() * 2).address;
    upload(dev, addr[0], a.data(), a.size() * 2);
    upload(dev, addr[1], b.data(), b.size() * 2);
    upload(dev, addr[3], at.data(), at.size() * 2);
    upload(dev, addr[4], bt.data(), bt.size() * 2);
    GemmArgs g;
    g.dtype = bf16 ? DType::bf16 : DType::f16;
    g.m = m, g.n = n, g.k = k;
    g.a = addr[0], g.a_batch = m * k, g.a_row = k, g.a_col = 1;
    g.b = addr[1], g.b_batch = k * n, g.b_row = n, g.b_col = 1;
    g.c = addr[2], g.c_batch = m * n, g.c_row = n, g.c_col = 1;
    ok = true;
    for (int variant = 0; variant < 4 && ok; ++variant) {
      const int32_t bk = variant % 2 ? 32 : 16;
      if (variant == 2) {  // transposed: A contiguous along m, B along k
        g.a = addr[3], g.a_row = 1, g.a_col = m;
        g.b = addr[4], g.b_row = 1, g.b_col = k;
      }
      upload(dev, addr[2], c.data(), c.size() * 2);  // NaN again
      t_checking_bk = bk;
      gemm(dev, g);
      t_checking_bk = 0;
      std::vector<uint16_t> got(c.size());
      download(dev, got.data(), addr[2], got.size() * 2);
      for (size_t i = 0; i < got.size() && ok; ++i) ok = value16(got[i], bf16) == want[i];
    }
  } catch (const std::exception& e) {
    t_checking_bk = 0;
    std::fprintf(stderr, "torch-vkml: cooperative-matrix GEMM check: %s\n", e.what());
    ok = false;
  }
  for (uint64_t address : addr)
    if (address) dev.memory().free(address);
  return ok;
}

// Fills s.sg / s.required with what passed the start-up check on this device
// (running the check on first use); false when nothing did.
bool checked_shape(Device& dev, Shape& s) {
  if (t_checking) {  // the check's own product
    s = *t_checking;
    return true;
  }
  std::atomic<uint32_t>* outcome = outcome_of(dev, s);
  if (!outcome) return false;
  uint32_t v = outcome->load(std::memory_order_acquire);
  if (v == 0) {
    std::lock_guard<std::mutex> lock(g_check_mutex);
    v = outcome->load(std::memory_order_acquire);
    if (v == 0) {
      v = kRejected;
      const std::vector<Shape> tries = candidates(dev.info(), s);
      for (const Shape& c : tries) {
        t_checking = &c;
        const bool ok = self_check(dev, s.bf16);
        t_checking = nullptr;
        if (ok) {
          v = c.sg | (c.required ? kRequired : 0);
          break;
        }
      }
      outcome->store(v, std::memory_order_release);
      if (v == kRejected && !tries.empty())
        std::fprintf(stderr,
                     "torch-vkml: the cooperative-matrix GEMM gave wrong results on %s; %s "
                     "matrix products use the scalar kernel (TORCH_VKML_COOPMAT=0 skips the "
                     "check)\n",
                     dev.info().name.c_str(), s.bf16 ? "bf16" : "fp16");
    }
  }
  if (v == kRejected) return false;
  s.sg = v & ~kRequired;
  s.required = (v & kRequired) != 0;
  return true;
}

}  // namespace

CoopmatMode coopmat_mode() { return CoopmatMode(mode_value().load()); }
void set_coopmat_mode(CoopmatMode mode) { mode_value().store(int(mode)); }

CoopmatTuning coopmat_tuning() {
  const int32_t v = tuning_value().load();
  return {v & 0xff, (v >> 8) & 0xff, v >> 16};
}
void set_coopmat_tuning(CoopmatTuning t) {
  VKML_CHECK_ARG(t.bk == 0 || t.bk == 16 || t.bk == 32,
                 "coopmat tuning: bk must be 0 (automatic), 16 or 32");
  VKML_CHECK_ARG(t.tile == 0 || t.tile == 64 || t.tile == 128,
                 "coopmat tuning: tile must be 0, 64 or 128");
  VKML_CHECK_ARG(t.warps == 0 || t.warps == 4 || t.warps == 8,
                 "coopmat tuning: warps must be 0 (automatic: 4), 4 or 8");
  tuning_value().store(t.bk | t.tile << 8 | t.warps << 16);
}

CoopmatKernel coopmat_kernel(Device& dev, const GemmArgs& g) {
  if (g.dtype != DType::f16 && g.dtype != DType::bf16) return {};
  if (g.m < kMinSide || g.n < kMinSide || g.k < kMinSide) return {};
  Shape s;
  if (!shape_for(dev, coopmat_mode(), g.dtype, &s)) return {};
  // Measured on an H200 (scripts/gpu_gemm_sweep.py, 2026-12-04): fp16 ran fastest on
  // 128 x 128 tiles two 32-deep steps at a time where there are enough tiles and K is
  // long (4096^3: 60 TFLOP/s against 52 on 64 x 64), on 64 x 64 tiles otherwise (1024^3:
  // 45 against 23), 16 deep for short K (4096 x 512 x 14336: 57 against 50). bf16 ran
  // fastest on 64 x 64 tiles, 16 deep, at every size. The emulation takes the large
  // tiles as soon as they fit, so tests reach both.
  CoopmatTuning tuning = coopmat_tuning();
  const int64_t large_tiles = ceil_div(g.m, kLargeTile) * ceil_div(g.n, kLargeTile) * g.batch;
  const bool long_k = g.k >= 1024;
  bool large =
      s.emulated ? g.m >= kLargeTile && g.n >= kLargeTile : !s.bf16 && long_k && large_tiles >= 256;
  if (tuning.tile) large = tuning.tile == kLargeTile;
  if (!tuning.bk) tuning.bk = s.bf16 || !long_k ? 16 : 32;
  if (t_checking_bk) tuning.bk = t_checking_bk;
  const uint32_t shared = dev.info().max_shared_memory;
  // Eight subgroups (2 x 4) only when asked for, and where they fit and each thread
  // stages whole quads of the tile; never during the check.
  int32_t warps = kSubgroups;
  const int64_t eight = 8 * int64_t(s.sg);
  if (tuning.warps == 8 && !t_checking && eight <= int64_t(dev.info().max_workgroup_invocations) &&
      (kSmallTile * tuning.bk / 4) % eight == 0 && (kSmallTile / 4) % s.n == 0)
    warps = 8;
  if (large && shared_bytes(kLargeTile, tuning.bk, warps, s) > shared) large = false;
  if (!large && shared_bytes(kSmallTile, tuning.bk, warps, s) > shared) return {};
  const bool checking = t_checking != nullptr;
  if (!checked_shape(dev, s)) return {};

  CoopmatKernel kernel;
  kernel.bm = kernel.bn = large ? kLargeTile : kSmallTile;
  const int32_t tile = int32_t(kernel.bm);
  // Eight-element loads where each thread's share of a tile is whole units of eight.
  const bool eights = (int64_t(tile) * tuning.bk / 8) % (int64_t(warps) * s.sg) == 0;
  auto load = [&](bool a) {
    OperandLoad l;
    l.transposed = a ? g.a_row == 1 && g.a_col != 1 : g.b_row == 1 && g.b_col != 1;
    l.width = int32_t(eights ? vector_width(g, a, 2, {8, 4}) : vector_width(g, a, 2, {4}));
    return l;
  };
  const OperandLoad a = load(true), b = load(false);
  // (bf16, emulated), (large, bk, warps), A's load, B's load
  static const PipelineSlots slots({4, 8, 6, 6});
  // The check tries candidates: none of them may take the slot.
  auto make = [&] { return make_pipeline(dev, s, tile, tuning.bk, warps, a, b); };
  kernel.pipeline =
      checking ? make()
               : slots.get(dev,
                           {uint32_t(s.bf16) * 2 + uint32_t(s.emulated),
                            uint32_t(large) * 4 + bk_class(tuning.bk) * 2 + uint32_t(warps == 8),
                            a.slot(), b.slot()},
                           make);
  return kernel;
}

MatrixUnits matrix_units(Device& dev, DType dtype) {
  if (dtype != DType::f16 && dtype != DType::bf16) return {};
  Shape s;
  if (!shape_for(dev, coopmat_mode(), dtype, &s) || !checked_shape(dev, s)) return {};
  return {s.m, s.n, s.k, s.sg, s.required, s.emulated};
}

const char* coopmat_status(Device& dev, DType dtype) {
  VKML_CHECK_ARG(
      dtype == DType::f16 || dtype == DType::bf16,
      std::string("coopmat_status: the matrix-unit GEMM has no ") + dtype_name(dtype) + " kernel");
  const CoopmatMode mode = coopmat_mode();
  if (switched_off(mode, dtype)) return "off";
  Shape s;
  if (!shape_for(dev, mode, dtype, &s)) {
    const DeviceInfo& info = dev.info();
    const uint32_t offered = dtype == DType::bf16 ? info.coopmat_bf16_m : info.coopmat_m;
    if (mode != CoopmatMode::kEmulated && offered != 0 && !shader_blob(s.shader))
      return "not built";
    return "unsupported";
  }
  std::atomic<uint32_t>* outcome = outcome_of(dev, s);
  const uint32_t v = outcome ? outcome->load() : kRejected;
  if (v == kRejected) return "rejected";
  if (v == 0) return "unchecked";
  return s.emulated ? "emulated" : "active";
}

}  // namespace vkml::ops
