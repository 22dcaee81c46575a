// torch.fft, torch.stft and torch.istft: ATen reduces them all to three primitives,
// _fft_c2c, _fft_r2c and _fft_c2r, run here through VkFFT (vkml/ops/fft.h). The
// rest (frequencies, shifts, the hermitian variants, stft's frames and windows,
// the backward formulas) composes these with native ops.
//
// VkFFT transforms up to three innermost dimensions of a contiguous batch: the
// transformed dimensions are moved last (one copy), more than three go in groups,
// and the normalization is a multiply afterwards.
#include <ATen/WrapDimUtils.h>
#include <torch/library.h>

#include <numeric>
#include <vector>

#include "op_helpers.h"
#include "vkml/ops/fft.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

using vkml::ops::FftKind;

// at::native::fft_norm_mode.
enum class Norm : int64_t { None = 0, ByRootN = 1, ByN = 2 };

void check_dtype(const at::Tensor& t, bool complex) {
  const at::ScalarType s = t.scalar_type();
  const bool ok = complex ? (s == at::kComplexFloat || s == at::kComplexDouble)
                          : (s == at::kFloat || s == at::kDouble);
  TORCH_CHECK(ok, "Unsupported dtype ", s);
}

at::Tensor transform(const at::Tensor& x, at::IntArrayRef all_dims, FftKind kind, bool inverse,
                     int64_t last_size = 0);

// R2C as a complex transform, keeping the onesided half.
at::Tensor r2c_as_complex(const at::Tensor& x, at::IntArrayRef dims) {
  const int64_t d = dims.back();
  at::Tensor full = transform(x.to(c10::toComplexType(x.scalar_type())), dims, FftKind::C2C, false);
  return full.narrow(d, 0, x.size(d) / 2 + 1);
}

// C2R along one dim `d` as a complex transform of the hermitian extension of the
// onesided spectrum, built as C2R reads it: no imaginary part in the zero bin, nor
// in the Nyquist bin of an even length `n`.
at::Tensor c2r_as_complex(const at::Tensor& x, int64_t d, int64_t n) {
  const int64_t m = n / 2 + 1;
  const bool even = n % 2 == 0;
  at::Tensor head = x.resolve_conj().resolve_neg();
  at::Tensor zero = at::real(head.narrow(d, 0, 1)).to(x.scalar_type());
  at::Tensor body = head.narrow(d, 1, even ? m - 2 : m - 1);
  std::vector<at::Tensor> parts{zero, body};
  if (even) parts.push_back(at::real(head.narrow(d, m - 1, 1)).to(x.scalar_type()));
  parts.push_back(body.flip(d).conj().resolve_conj());
  at::Tensor full = at::cat(parts, d);
  return at::real(transform(full, {d}, FftKind::C2C, true)).clone();
}

// One VkFFT call over `dims` (at most three, the last innermost) of `x`; the result
// keeps x's dimension order (a permuted view of a contiguous tensor). C2R writes
// `last_size` reals along the last of `dims`.
at::Tensor transform(const at::Tensor& x, at::IntArrayRef all_dims, FftKind kind, bool inverse,
                     int64_t last_size) {
  // A transform over one point is the identity, and VkFFT plans none: size-1 dims
  // (but the real one of R2C / C2R, never of size 1 here) join the batch.
  std::vector<int64_t> dims;
  for (size_t i = 0; i < all_dims.size(); ++i)
    if (x.size(all_dims[i]) > 1 || (kind != FftKind::C2C && i + 1 == all_dims.size()))
      dims.push_back(all_dims[i]);
  if (dims.empty()) return x.resolve_conj().resolve_neg().clone();
  const int64_t nd = x.dim();
  std::vector<bool> transformed(nd, false);
  for (int64_t d : dims) transformed[d] = true;
  std::vector<int64_t> perm;
  int64_t batch = 1;
  for (int64_t d = 0; d < nd; ++d)
    if (!transformed[d]) {
      perm.push_back(d);
      batch *= x.size(d);
    }
  perm.insert(perm.end(), dims.begin(), dims.end());
  const int rank = int(dims.size());
  at::Tensor in = x.permute(perm).resolve_conj().resolve_neg().contiguous();

  const bool dp = in.scalar_type() == at::kDouble || in.scalar_type() == at::kComplexDouble;
  std::vector<int64_t> out_sizes = in.sizes().vec();
  int64_t& last = out_sizes.back();
  if (kind == FftKind::R2C) last = last / 2 + 1;
  if (kind == FftKind::C2R) last = last_size;
  const at::ScalarType out_type = kind == FftKind::C2R ? c10::toRealValueType(in.scalar_type())
                                                       : c10::toComplexType(in.scalar_type());
  at::Tensor out = at::empty(out_sizes, in.options().dtype(out_type));

  if (out.numel() > 0 && in.numel() > 0) {
    vkml::ops::FftArgs a;
    a.kind = kind;
    a.inverse = inverse;
    a.double_precision = dp;
    a.rank = rank;
    for (int i = 0; i < a.rank; ++i) a.n[i] = in.size(nd - a.rank + i);
    if (kind == FftKind::C2R) a.n[a.rank - 1] = last_size;
    a.batch = batch;
    vkml::Device& dev = vkml_device(in);
    if (kind != FftKind::C2C && !guarded([&] { return vkml::ops::fft_plannable(dev, a); })) {
      if (kind == FftKind::R2C) return r2c_as_complex(x, dims);
      TORCH_INTERNAL_ASSERT(rank == 1, "vkml fft: C2R runs along one dim");
      return c2r_as_complex(x, dims.back(), last_size);
    }
    a.in = addr(in);
    a.out = addr(out);
    guarded([&] { vkml::ops::fft(dev, a); });
  }
  std::vector<int64_t> back(nd);
  for (int64_t i = 0; i < nd; ++i) back[perm[i]] = i;
  return out.permute(back);
}

// The dims of `dim` in groups of at most three, the last group holding the last dim
// (none for none).
std::vector<std::vector<int64_t>> groups_of(at::IntArrayRef dim) {
  std::vector<std::vector<int64_t>> groups;
  int64_t end = int64_t(dim.size());
  while (end > 0) {
    int64_t begin = std::max<int64_t>(0, end - 3);
    groups.insert(groups.begin(), std::vector<int64_t>(dim.begin() + begin, dim.begin() + end));
    end = begin;
  }
  return groups;
}

std::vector<int64_t> wrap_dims(at::IntArrayRef dim, int64_t nd) {
  std::vector<int64_t> out;
  for (int64_t d : dim) out.push_back(at::maybe_wrap_dim(d, nd));
  return out;
}

// Scales by the norm mode over `signal` points, in place (out is freshly made).
at::Tensor normalized(at::Tensor out, int64_t normalization, int64_t signal) {
  const auto norm = Norm(normalization);
  if (norm == Norm::None || signal <= 1) return out;
  const double n = double(signal);
  return out.mul_(norm == Norm::ByN ? 1.0 / n : 1.0 / std::sqrt(n));
}

int64_t signal_numel(const at::Tensor& t, at::IntArrayRef dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= t.size(d);
  return n;
}

at::Tensor fft_c2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                   bool forward) {
  check_dtype(self, true);
  if (dim.empty()) return self.clone();
  const std::vector<int64_t> dims = wrap_dims(dim, self.dim());
  at::Tensor out = self;
  for (const auto& group : groups_of(dims)) out = transform(out, group, FftKind::C2C, !forward);
  return normalized(out, normalization, signal_numel(self, dims));
}

at::Tensor fft_r2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                   bool onesided) {
  check_dtype(self, false);
  const std::vector<int64_t> dims = wrap_dims(dim, self.dim());
  TORCH_CHECK(!dims.empty(), "fft: expected at least one dimension to transform");
  if (!onesided || self.size(dims.back()) == 1) {
    // The full spectrum (or one of a single point, the same): a complex transform of
    // the real input.
    return fft_c2c(self.to(c10::toComplexType(self.scalar_type())), dims, normalization, true);
  }
  auto groups = groups_of(dims);
  at::Tensor out = transform(self, groups.back(), FftKind::R2C, false);
  for (size_t g = 0; g + 1 < groups.size(); ++g)
    out = transform(out, groups[g], FftKind::C2C, false);
  return normalized(out, normalization, signal_numel(self, dims));
}

at::Tensor fft_c2r(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                   int64_t last_dim_size) {
  check_dtype(self, true);
  const std::vector<int64_t> dims = wrap_dims(dim, self.dim());
  TORCH_CHECK(!dims.empty(), "fft: expected at least one dimension to transform");
  TORCH_CHECK(last_dim_size >= 1, "Invalid number of data points (", last_dim_size, ") specified");
  // The other dims first, then a one-dimensional C2R: a spectrum that is not
  // hermitian (the imaginary parts of its zero and Nyquist bins) is read as PyTorch's
  // CPU and CUDA read it only so; VkFFT's multi-dimensional C2R reads it otherwise.
  const std::vector<int64_t> others(dims.begin(), dims.end() - 1);
  at::Tensor in = self;
  for (const auto& group : groups_of(others)) in = transform(in, group, FftKind::C2C, true);
  at::Tensor out = last_dim_size == 1
                       ? at::real(in.narrow(dims.back(), 0, 1)).clone()
                       : transform(in, {dims.back()}, FftKind::C2R, true, last_dim_size);
  return normalized(out, normalization, signal_numel(out, dims));
}

at::Tensor& fft_c2c_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                        bool forward, at::Tensor& out) {
  return write_out(out, fft_c2c(self, dim, normalization, forward));
}
at::Tensor& fft_r2c_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                        bool onesided, at::Tensor& out) {
  return write_out(out, fft_r2c(self, dim, normalization, onesided));
}
at::Tensor& fft_c2r_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                        int64_t last_dim_size, at::Tensor& out) {
  return write_out(out, fft_c2r(self, dim, normalization, last_dim_size));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  if (!vkml::ops::fft_available()) return;  // the CPU fallback runs them
  m.impl("_fft_c2c", TORCH_FN(fft_c2c));
  m.impl("_fft_c2c.out", TORCH_FN(fft_c2c_out));
  m.impl("_fft_r2c", TORCH_FN(fft_r2c));
  m.impl("_fft_r2c.out", TORCH_FN(fft_r2c_out));
  m.impl("_fft_c2r", TORCH_FN(fft_c2r));
  m.impl("_fft_c2r.out", TORCH_FN(fft_c2r_out));
}

}  // namespace vkml_aten
