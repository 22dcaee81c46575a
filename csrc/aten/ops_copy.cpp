// Copies between the host and the device and within the device, reading one
// value back (item()), and filling.
#include <ATen/MemoryOverlap.h>
#include <torch/library.h>

#include <cstring>

#include "op_helpers.h"
#include "pinned.h"
#include "sync_debug.h"
#include "value_bounds.h"
#include "vkml/ops/copy.h"
#include "vkml/ops/elementwise.h"
#include "vkml_tensor.h"

namespace vkml_aten {
namespace {

at::Tensor device_empty(at::IntArrayRef sizes, at::ScalarType dtype, const at::Device& device) {
  return at::empty(sizes, at::TensorOptions().dtype(dtype).device(device));
}

// dst (vkml) = src (vkml, same device), converting dtype, honouring strides.
void device_copy(const at::Tensor& dst, at::Tensor src) {
  if (dst.numel() == 0) return;
  if (src.sizes() != dst.sizes()) src = src.expand(dst.sizes());
  vkml::Device& dev = vkml_device(dst);
  auto overlap = at::get_overlap_status(dst, src);
  bool may_overlap =
      overlap == at::MemOverlapStatus::Full || overlap == at::MemOverlapStatus::Partial ||
      (overlap == at::MemOverlapStatus::TooHard && dst.storage().is_alias_of(src.storage()));
  // A copy of an index keeps its known range (contiguous, gathered or narrowed).
  std::optional<vkml::IntRange> known = known_values(src);
  auto copy = [&](const at::Tensor& to, const at::Tensor& from) {
    if (to.dim() <= vkml::kMaxDims)
      return guarded([&] { vkml::ops::copy(dev, ref(to), ref(from)); });
    for_each_kernel_view({to, from}, [&](const std::vector<at::Tensor>& v) {
      guarded([&] { vkml::ops::copy(dev, ref(v[0]), ref(v[1])); });
    });
  };
  if (may_overlap) {  // read everything before writing anything
    at::Tensor tmp = at::empty(src.sizes(), src.options());
    copy(tmp, src);
    src = tmp;
  }
  copy(dst, src);
  if (known) note_values(dst, known->lo, known->hi);
}

void host_to_device(const at::Tensor& dst, const at::Tensor& src_cpu, bool non_blocking) {
  at::Tensor src = src_cpu;
  if (src.sizes() != dst.sizes()) src = src.expand(dst.sizes());
  TORCH_CHECK_TYPE(has_vkml_dtype(src.scalar_type()), "cannot copy a ", src.scalar_type(),
                   " tensor to vkml");
  vkml::Device& dev = vkml_device(dst);
  if (non_blocking && dst.is_contiguous() && src.is_contiguous() &&
      src.scalar_type() == dst.scalar_type()) {
    // From pinned memory: the GPU reads the tensor itself, later (as on CUDA,
    // the caller must not change it before synchronizing).
    if (uint64_t pinned = pinned_address(dev, src.data_ptr())) {
      guarded([&] { vkml::ops::copy_pinned_to_device(dev, addr(dst), pinned, src.nbytes()); });
      return;
    }
  }
  if (dst.is_contiguous() && src.scalar_type() == dst.scalar_type()) {
    src = src.contiguous();
    guarded([&] { vkml::ops::upload(dev, addr(dst), src.data_ptr(), src.nbytes()); });
    note_uploaded(dst, src);
    return;
  }
  // Stage as-is (contiguous, source dtype), then convert/scatter on the device.
  src = src.contiguous();
  at::Tensor staged = device_empty(src.sizes(), src.scalar_type(), dst.device());
  guarded([&] { vkml::ops::upload(dev, addr(staged), src.data_ptr(), src.nbytes()); });
  device_copy(dst, staged);
}

void device_to_host(const at::Tensor& dst_cpu, const at::Tensor& src, bool non_blocking) {
  at::Tensor s = src;
  if (s.sizes() != dst_cpu.sizes()) s = s.expand(dst_cpu.sizes());
  // Convert and make contiguous on the device, where it is cheap.
  if (!s.is_contiguous() || s.scalar_type() != dst_cpu.scalar_type()) {
    if (has_vkml_dtype(dst_cpu.scalar_type())) {
      at::Tensor tmp = device_empty(s.sizes(), dst_cpu.scalar_type(), s.device());
      device_copy(tmp, s);
      s = tmp;
    } else {
      s = s.contiguous();
    }
  }
  vkml::Device& dev = vkml_device(s);
  if (non_blocking && dst_cpu.is_contiguous() && dst_cpu.scalar_type() == s.scalar_type()) {
    // Into pinned memory: no wait; the bytes are there after a synchronize.
    if (uint64_t pinned = pinned_address(dev, dst_cpu.data_ptr())) {
      guarded([&] { vkml::ops::copy_device_to_pinned(dev, pinned, addr(s), s.nbytes()); });
      return;
    }
  }
  on_host_sync();
  if (dst_cpu.is_contiguous() && dst_cpu.scalar_type() == s.scalar_type()) {
    guarded([&] { vkml::ops::download(dev, dst_cpu.data_ptr(), addr(s), s.nbytes()); });
    return;
  }
  at::Tensor host = at::empty(s.sizes(), s.options().device(at::kCPU));
  guarded([&] { vkml::ops::download(dev, host.data_ptr(), addr(s), s.nbytes()); });
  dst_cpu.copy_(host);
}

// The tensor's stored elements, without its lazy conjugation and negation bits (conj() and
// _neg_view() of a flagged view clear the flag and keep the data).
at::Tensor raw(const at::Tensor& t) {
  at::Tensor r = t.is_conj() ? t.conj() : t;
  return r.is_neg() ? at::_neg_view(r) : r;
}

// Copies where either side is complex, on their float views (the bits already resolved by
// copy_from): complex to complex as pairs, real to complex into the real parts (imaginary
// parts zeroed), complex to real from the real parts, as PyTorch's copy_ does. Returns
// false where neither side is complex.
bool copy_complex(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  const bool src_c = src.is_complex(), dst_c = dst.is_complex();
  if (!src_c && !dst_c) return false;
  at::Tensor s = src.sizes() == dst.sizes() ? src : src.expand(dst.sizes());
  if (src_c && dst_c) {
    at::view_as_real(dst).copy_(at::view_as_real(s), non_blocking);
  } else if (dst_c) {
    at::Tensor d = at::view_as_real(dst);
    d.select(-1, 0).copy_(s, non_blocking);
    d.select(-1, 1).zero_();
  } else {
    TORCH_WARN_ONCE("Casting complex values to real discards the imaginary part");
    dst.copy_(at::view_as_real(s).select(-1, 0), non_blocking);
  }
  return true;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);

// The signed dtype of an unsigned storage dtype's width.
at::ScalarType signed_twin(at::ScalarType t) {
  switch (t) {
    case at::kUInt16:
      return at::kShort;
    case at::kUInt32:
      return at::kInt;
    default:
      return at::kLong;
  }
}

// A device tensor of any held dtype as the unsigned dtype `to`: through int32 (uint16)
// or int64 (uint32, uint64), whose low bits are the unsigned value's, as C++'s casts give.
at::Tensor to_unsigned(const at::Tensor& s, at::ScalarType to) {
  const at::ScalarType wide = to == at::kUInt16 ? at::kInt : at::kLong;
  return s.to(wide).to(signed_twin(to)).view(to);
}

// A device tensor of an unsigned dtype as the held dtype `to`: the value in a wider signed
// integer (uint16: int32, uint32: int64), or, for uint64, its two 32-bit halves.
at::Tensor from_unsigned(const at::Tensor& s, at::ScalarType to) {
  at::Tensor bits = s.view(signed_twin(s.scalar_type()));
  at::Tensor value;
  if (s.scalar_type() == at::kUInt16) {
    value = bits.to(at::kInt).bitwise_and(0xFFFF);
  } else if (s.scalar_type() == at::kUInt32) {
    value = bits.to(at::kLong).bitwise_and(0xFFFFFFFFLL);
  } else if (at::isFloatingType(to)) {
    const at::ScalarType f = vkml_device(s).info().supports_fp64 ? at::kDouble : at::kFloat;
    at::Tensor hi = bits.bitwise_right_shift(32).bitwise_and(0xFFFFFFFFLL).to(f);
    value = hi.mul_(4294967296.0).add_(bits.bitwise_and(0xFFFFFFFFLL).to(f));
  } else {
    value = bits;  // int64 and narrower integers: the same low bits
  }
  if (to == at::kBool) return bits.ne(0);
  return is_unsigned_storage(to) ? to_unsigned(value, to) : value.to(to);
}

// Copies where either side is uint16, uint32 or uint64. Returns false where neither is.
bool copy_unsigned(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  const at::ScalarType st = src.scalar_type(), dt = dst.scalar_type();
  if (!is_unsigned_storage(st) && !is_unsigned_storage(dt)) return false;
  at::Tensor s = src.sizes() == dst.sizes() ? src : src.expand(dst.sizes());
  if (st == dt) {  // the bits, as the signed dtype of the width
    copy_from(s.view(signed_twin(st)), dst.view(signed_twin(dt)), non_blocking);
  } else if (s.device().is_cpu()) {  // the CPU converts its own
    copy_from(s.to(dt), dst, non_blocking);
  } else if (dst.device().is_cpu()) {
    dst.copy_(s.cpu(), non_blocking);
  } else {
    at::Tensor converted = is_unsigned_storage(st) ? from_unsigned(s, dt) : to_unsigned(s, dt);
    copy_from(converted, dst, non_blocking);
  }
  return true;
}

// A copy from or into a conjugated or negated view (the Conjugate and Negative keys pass
// _copy_from through to us, below): the stored elements are copied, then negated where the
// two sides' bits disagree, on the float view, which has native kernels.
bool copy_flagged(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  if (!src.is_conj() && !src.is_neg() && !dst.is_conj() && !dst.is_neg()) return false;
  at::Tensor d = raw(dst);
  copy_from(raw(src), d, non_blocking);
  at::Tensor parts = d.is_complex() ? at::view_as_real(d) : d;
  if (src.is_neg() != dst.is_neg()) parts.neg_();
  if (src.is_conj() != dst.is_conj() && d.is_complex()) parts.select(-1, 1).neg_();
  return true;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0) return dst;
  // As the CPU's copy_ (its TensorIterator): no element of dst written twice, and no source
  // partly under dst, where the result would depend on the order of the writes.
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, self);
  if (copy_flagged(self, dst, non_blocking) || copy_complex(self, dst, non_blocking) ||
      copy_unsigned(self, dst, non_blocking))
    return dst;
  bool src_dev = self.device().is_privateuseone();
  bool dst_dev = dst.device().is_privateuseone();
  if (src_dev && dst_dev) {
    if (self.device() == dst.device()) {
      device_copy(dst, self);
    } else {
      // Between two vkml devices: through the host.
      host_to_device(dst, self.cpu(), false);
    }
  } else if (dst_dev) {
    TORCH_CHECK(self.device().is_cpu(), "vkml can copy from the CPU, not from ", self.device());
    host_to_device(dst, self, non_blocking);
  } else {
    TORCH_CHECK(dst.device().is_cpu(), "vkml can copy to the CPU, not to ", dst.device());
    device_to_host(dst, self, non_blocking);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "cannot read a value from an empty tensor");
  on_host_sync();
  at::Tensor host = at::empty({}, self.options().device(at::kCPU));
  guarded([&] {
    vkml::ops::download(vkml_device(self), host.data_ptr(), addr(self), self.element_size());
  });
  return host.item();
}

// float64 fills in double: through a float32 element it would lose digits.
bool has_elementwise_kernel(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kDouble ||
         t == at::kLong || t == at::kInt || t == at::kByte || t == at::kBool;
}

vkml::Scalar to_vkml_scalar(const at::Scalar& s, at::ScalarType t) {
  if (at::isFloatingType(t)) return vkml::Scalar::of(s.toDouble());
  if (t == at::kBool) return vkml::Scalar::of_int(s.toBool());
  return vkml::Scalar::of_int(s.toLong());
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  if (is_unsigned_storage(self.scalar_type())) {  // the value's bits, in the signed twin
    int64_t bits = 0;
    switch (self.scalar_type()) {
      case at::kUInt16:
        bits = int16_t(value.to<uint16_t>());
        break;
      case at::kUInt32:
        bits = int32_t(value.to<uint32_t>());
        break;
      default:
        bits = int64_t(value.to<uint64_t>());
    }
    at::Tensor twin = self.view(signed_twin(self.scalar_type()));
    fill_scalar(twin, bits);
    return self;
  }
  check_scalar_fits(value, self.scalar_type());
  if (self.numel() == 0) return self;
  auto t = self.scalar_type();
  if (self.is_complex()) {  // the real and imaginary parts, on the float view
    const c10::complex<double> v = value.toComplexDouble();
    at::Tensor parts = at::view_as_real(raw(self));
    const double sign = self.is_neg() ? -1 : 1;
    parts.select(-1, 0).fill_(sign * v.real());
    parts.select(-1, 1).fill_(sign * (self.is_conj() ? -v.imag() : v.imag()));
    return self;
  }
  if (t == at::kDouble && !vkml_device(self).info().supports_fp64) {
    // No float64 kernels: the value's 8 bytes, uploaded, copied out by broadcast.
    device_copy(self, at::scalar_tensor(value, at::kDouble).to(self.device()));
    return self;
  }
  if (has_elementwise_kernel(t)) {
    const vkml::Scalar fill_value = to_vkml_scalar(value, t);
    if (self.dim() <= vkml::kMaxDims) {
      guarded([&] { vkml::ops::fill(vkml_device(self), ref(self), fill_value); });
    } else {
      for_each_kernel_view({self}, [&](const std::vector<at::Tensor>& views) {
        guarded([&] { vkml::ops::fill(vkml_device(self), ref(views[0]), fill_value); });
      });
    }
    // A filled index holds one known value (torch.full, zeros, a padding index).
    if (at::isIntegralType(t, /*includeBool=*/false)) {
      const int64_t v = value.toLong();
      note_values(self, v, v);
    }
    return self;
  }
  // Other dtypes: fill one element of a kernel dtype, convert by broadcast copy.
  auto wide = at::isFloatingType(t) ? at::kFloat : at::kLong;
  at::Tensor one = device_empty({}, wide, self.device());
  guarded([&] { vkml::ops::fill(vkml_device(one), ref(one), to_vkml_scalar(value, wide)); });
  device_copy(self, one);
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  if (value.device().is_cpu()) return fill_scalar(self, value.item());
  device_copy(self, value);
  return self;
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar(self, 0); }

}  // namespace

// Without these, the Conjugate and Negative fallbacks materialize a flagged input of
// _copy_from by cloning it, and a clone copies through _copy_from again: endless recursion.
// copy_flagged resolves the bits instead. (Process-wide: other backends reaching _copy_from
// with a flagged tensor recursed the same way before.)
namespace {

// conj_physical: the conjugate materialized (the lazy conj bit resolved into a copy);
// a copy for real tensors.
at::Tensor& vk_conj_physical_(at::Tensor& self) {
  if (self.is_complex()) at::view_as_real(self).select(-1, 1).neg_();
  return self;
}

at::Tensor& conj_physical_out(const at::Tensor& self, at::Tensor& out) {
  if (out.is_same(self)) return vk_conj_physical_(out);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Found dtype ", out.scalar_type(),
              " but expected ", self.scalar_type());
  return write_out(out, self.is_complex() ? self.conj() : self);
}

// torch.complex(real, imag) and torch.polar's second step: the parts interleaved.
at::Tensor& complex_out(const at::Tensor& re, const at::Tensor& im, at::Tensor& out) {
  TORCH_CHECK(re.scalar_type() == im.scalar_type(), "Expected object of scalar type ",
              re.scalar_type(), " but got scalar type ", im.scalar_type(), " for second argument");
  const at::ScalarType want = c10::toComplexType(re.scalar_type());
  TORCH_CHECK(out.scalar_type() == want, "Expected object of scalar type ", want,
              " but got scalar type ", out.scalar_type(), " for argument 'out'");
  at::Tensor pairs = at::stack(at::broadcast_tensors({re, im}), -1).contiguous();
  return write_out(out, at::view_as_complex(pairs));
}

// torch.polar(abs, angle): abs (cos angle + i sin angle), as the CPU's kernel forms it.
at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out) {
  TORCH_CHECK(abs.scalar_type() == angle.scalar_type(), "Expected object of scalar type ",
              abs.scalar_type(), " but got scalar type ", angle.scalar_type(),
              " for second argument");
  return complex_out(abs * angle.cos(), abs * angle.sin(), out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  m.impl("fill_.Tensor", TORCH_FN(fill_tensor));
  m.impl("zero_", TORCH_FN(zero_));
  m.impl("conj_physical_", TORCH_FN(vk_conj_physical_));
  m.impl("conj_physical.out", TORCH_FN(conj_physical_out));
  m.impl("complex.out", TORCH_FN(complex_out));
  m.impl("polar.out", TORCH_FN(polar_out));
}

}  // namespace vkml_aten
