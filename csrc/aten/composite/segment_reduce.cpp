// torch.segment_reduce and its backward from native scatters and gathers: each element
// along `axis` finds its segment by a binary search in the segment ends, then scatter_reduce
// folds it in. Elements outside every segment (offsets that do not start at 0, or
// `unsafe` lengths that sum short) go to one spare slot past the last segment, cut off.
// The lengths' checks (no negative length; without `unsafe`, the sum is the axis' size)
// run on the device and raise at the host's next read, in the CPU's words.
#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>
#include <torch/library.h>

#include <limits>
#include <optional>
#include <vector>

#include "aten/op_helpers.h"

namespace vkml_aten {
namespace {

enum class SegmentOp { Sum, Mean, Max, Min, Prod };

SegmentOp segment_op_of(c10::string_view reduce) {
  if (reduce == "sum") return SegmentOp::Sum;
  if (reduce == "mean") return SegmentOp::Mean;
  // "amax" and "amin" are the CPU's other names (PyG's segment reductions pass them).
  if (reduce == "max" || reduce == "amax") return SegmentOp::Max;
  if (reduce == "min" || reduce == "amin") return SegmentOp::Min;
  if (reduce == "prod") return SegmentOp::Prod;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
  return SegmentOp::Sum;  // not reached
}

// Where each element along the axis goes: its segment's slot in [0, S), or S (the spare
// slot) outside every segment. For data [lead..., N, trail...] and lengths / offsets
// [lead..., S(+1)]: the slots as [lead..., N, 1...] (one 1 per trailing dim) and S.
struct SegmentSlots {
  at::Tensor slot;     // int64, [lead..., N, 1...]
  at::Tensor lengths;  // int64, [lead..., S]
  int64_t segments = 0;
};

SegmentSlots segment_slots(const at::Tensor& data, const std::optional<at::Tensor>& lengths,
                           const std::optional<at::Tensor>& offsets, int64_t axis, bool check,
                           bool unsafe) {
  const bool by_lengths = lengths.has_value() && lengths->defined();
  const bool by_offsets = offsets.has_value() && offsets->defined();
  TORCH_CHECK(by_lengths || by_offsets,
              "segment_reduce(): Either lengths or offsets must be defined.");
  const at::Tensor& given = by_lengths ? *lengths : *offsets;
  TORCH_CHECK_NOT_IMPLEMENTED(given.scalar_type() == at::kLong || given.scalar_type() == at::kInt,
                              "segment_reduce(): lengths and offsets must be int32 or int64, got ",
                              given.scalar_type());
  TORCH_CHECK(given.device() == data.device(), "Expected all tensors to be on the same device, ",
              "but found at least two devices, ", data.device(), " and ", given.device(), "!");
  TORCH_CHECK(axis == given.dim() - 1,
              "segment_reduce(): Expected axis to be the last dimension of ",
              by_lengths ? "lengths" : "offsets", " but got ", axis, ".");
  for (int64_t d = 0; d < axis; ++d)
    TORCH_CHECK(given.size(d) == data.size(d),
                "segment_reduce(): ", by_lengths ? "lengths" : "offsets",
                " and data must agree on dim ", d, ", got ", given.sizes(), " and ", data.sizes());
  const int64_t n = data.size(axis);
  at::Tensor starts, ends, seg_lengths;
  if (by_lengths) {
    seg_lengths = given.to(at::kLong);
    ends = seg_lengths.cumsum(-1);
    starts = ends - seg_lengths;
  } else {
    TORCH_CHECK(given.size(-1) >= 1, "segment_reduce(): offsets must hold at least one value");
    at::Tensor o = given.to(at::kLong);
    starts = o.narrow(-1, 0, o.size(-1) - 1);
    ends = o.narrow(-1, 1, o.size(-1) - 1);
    seg_lengths = ends - starts;
  }
  // As the CPU's forward: a negative length always fails (its kernel checks), in the
  // front end's words for lengths without `unsafe`; the lengths' sum only without it.
  if (check) {
    const bool front_end = by_lengths && !unsafe;
    check_range_later(seg_lengths, 0, std::numeric_limits<int64_t>::max(),
                      front_end ? "lengths contains negative value!"
                                : "Expected segment_length >= 0 to be true, but got false.  "
                                  "(Could this error message be improved?  If so, please "
                                  "report an enhancement request to PyTorch.)");
    if (front_end)
      check_range_later(seg_lengths.sum(-1), n, n,
                        "segment_reduce(): Expected all rows of lengths along axis to sum to "
                        "data.size(lengths.dim()-1) when !unsafe.");
  }
  const int64_t segments = seg_lengths.size(-1);
  // positions [lead..., N]; the segment of j is the first whose end exceeds j.
  std::vector<int64_t> pos_shape(data.sizes().begin(), data.sizes().begin() + axis + 1);
  at::Tensor pos = at::arange(n, data.options().dtype(at::kLong)).expand(pos_shape).contiguous();
  at::Tensor slot = at::searchsorted(ends.contiguous(), pos, /*out_int32=*/false, /*right=*/true);
  // Before its segment's start (offsets not from 0), or past the last end: the spare slot.
  at::Tensor start_of = at::cat({starts, at::zeros_like(starts.narrow(-1, 0, 1))}, -1)
                            .gather(-1, slot.clamp_max(segments));
  slot = at::where(pos.lt(start_of), at::scalar_tensor(segments, slot.options()), slot);
  std::vector<int64_t> slot_shape = pos_shape;
  slot_shape.resize(data.dim(), 1);
  return {slot.view(slot_shape), seg_lengths, segments};
}

std::vector<int64_t> with_axis(const at::Tensor& data, int64_t axis, int64_t size) {
  std::vector<int64_t> s(data.sizes().begin(), data.sizes().end());
  s[axis] = size;
  return s;
}

// [lead..., S] lengths as [lead..., S, 1...] for broadcasting against the output.
at::Tensor per_segment(const at::Tensor& lengths, const at::Tensor& data) {
  std::vector<int64_t> s(lengths.sizes().begin(), lengths.sizes().end());
  s.resize(data.dim(), 1);
  return lengths.view(s);
}

at::Tensor vk_segment_reduce(const at::Tensor& data, c10::string_view reduce,
                             const std::optional<at::Tensor>& lengths,
                             const std::optional<at::Tensor>& indices,
                             const std::optional<at::Tensor>& offsets, int64_t axis, bool unsafe,
                             const std::optional<at::Scalar>& initial) {
  TORCH_CHECK(!indices.has_value() || !indices->defined(),
              "segment_reduce(): indices based reduction is not supported yet.");
  const SegmentOp op = segment_op_of(reduce);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(data.scalar_type()), "\"segment_reduce\" on ",
                              "vkml not implemented for '", data.scalar_type(), "'");
  TORCH_CHECK(data.dim() >= 1, "segment_reduce(): data must have at least one dimension");
  axis = at::maybe_wrap_dim(axis, data.dim());
  SegmentSlots s = segment_slots(data, lengths, offsets, axis, /*check=*/true, unsafe);
  const at::Tensor x = data.contiguous();
  double fill = 0;
  const char* how = "sum";
  switch (op) {
    case SegmentOp::Sum:
    case SegmentOp::Mean:
      fill = initial ? initial->toDouble() : 0.0;
      break;
    case SegmentOp::Prod:
      fill = initial ? initial->toDouble() : 1.0;
      how = "prod";
      break;
    case SegmentOp::Max:
      fill = initial ? initial->toDouble() : -std::numeric_limits<double>::infinity();
      how = "amax";
      break;
    case SegmentOp::Min:
      fill = initial ? initial->toDouble() : std::numeric_limits<double>::infinity();
      how = "amin";
      break;
  }
  at::Tensor out = at::full(with_axis(x, axis, s.segments + 1), fill, x.options());
  out = out.scatter_reduce(axis, s.slot.expand(x.sizes()), x, how, /*include_self=*/true)
            .narrow(axis, 0, s.segments);
  if (op == SegmentOp::Mean) {
    at::Tensor len = per_segment(s.lengths, x);
    // An empty segment is its initial value, or NaN without one.
    at::Tensor empty_value = at::scalar_tensor(
        initial ? initial->toDouble() : std::numeric_limits<double>::quiet_NaN(), x.options());
    out = at::where(len.eq(0), empty_value, out / len.to(x.scalar_type()));
  }
  return out.contiguous();
}

at::Tensor& vk_segment_reduce_out(const at::Tensor& data, c10::string_view reduce,
                                  const std::optional<at::Tensor>& lengths,
                                  const std::optional<at::Tensor>& indices,
                                  const std::optional<at::Tensor>& offsets, int64_t axis,
                                  bool unsafe, const std::optional<at::Scalar>& initial,
                                  at::Tensor& out) {
  return write_out(
      out, vk_segment_reduce(data, reduce, lengths, indices, offsets, axis, unsafe, initial));
}

// The gradient per element: the segment's gradient, to the elements that gave max / min,
// divided by the length for mean, times the product of the others for prod. The
// initial value takes no gradient.
at::Tensor vk_segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output,
                                      const at::Tensor& data, c10::string_view reduce,
                                      const std::optional<at::Tensor>& lengths,
                                      const std::optional<at::Tensor>& offsets, int64_t axis,
                                      const std::optional<at::Scalar>& initial) {
  const SegmentOp op = segment_op_of(reduce);
  axis = at::maybe_wrap_dim(axis, data.dim());
  SegmentSlots s = segment_slots(data, lengths, offsets, axis, /*check=*/false, true);
  const at::Tensor x = data.contiguous();
  const at::Tensor index = s.slot.expand(x.sizes());
  // Per-segment values with a zero for the spare slot, gathered onto the elements.
  auto onto_elements = [&](const at::Tensor& per_seg) {
    at::Tensor spare = at::zeros(with_axis(x, axis, 1), per_seg.options());
    return at::cat({per_seg.expand(with_axis(x, axis, s.segments)), spare}, axis)
        .gather(axis, index);
  };
  auto per_slot_sum = [&](const at::Tensor& v) {
    return at::zeros(with_axis(x, axis, s.segments + 1), v.options())
        .scatter_add(axis, index, v)
        .narrow(axis, 0, s.segments);
  };
  const at::Tensor g = onto_elements(grad.to(x.scalar_type()));
  switch (op) {
    case SegmentOp::Sum:
      return g;
    case SegmentOp::Mean: {
      // The spare slot's length is 0 and its gradient 0: 0 / 1.
      at::Tensor len = per_segment(s.lengths, x).to(x.scalar_type());
      return g / onto_elements(len).clamp_min(1);
    }
    case SegmentOp::Max:
    case SegmentOp::Min: {
      // As on the CPU and CUDA: NaN elements and those equal to the result take the
      // gradient, and where several do, only positive gradients are divided among them.
      at::Tensor out = onto_elements(output.to(x.scalar_type()));
      at::Tensor chosen = x.isnan().logical_or(x.eq(out));
      at::Tensor count = onto_elements(per_slot_sum(chosen.to(x.scalar_type())));
      at::Tensor shared = count.ge(2).logical_and(g.gt(0));
      return at::where(chosen, at::where(shared, g / count, g), at::zeros_like(g));
    }
    case SegmentOp::Prod: {
      // Zero and NaN elements get the product of the others (with the initial value),
      // the rest the result over themselves, as the CPU and CUDA compute them.
      at::Tensor nan = x.isnan(), zero = x.eq(0);
      at::Tensor special = nan.logical_or(zero);
      at::Tensor zeros_in = onto_elements(per_slot_sum(zero.to(x.scalar_type())));
      at::Tensor nans_in = onto_elements(per_slot_sum(nan.to(x.scalar_type())));
      at::Tensor rest_prod = onto_elements(
          at::full(with_axis(x, axis, s.segments + 1), initial ? initial->toDouble() : 1.0,
                   x.options())
              .scatter_reduce(axis, index, at::where(special, at::ones_like(x), x), "prod", true)
              .narrow(axis, 0, s.segments));
      at::Tensor other_zeros = zeros_in - zero.to(x.scalar_type());
      at::Tensor other_nans = nans_in - nan.to(x.scalar_type());
      at::Tensor exclusive =
          at::where(other_nans.gt(0), at::full_like(x, std::numeric_limits<double>::quiet_NaN()),
                    at::where(other_zeros.gt(0), rest_prod * 0, rest_prod));
      at::Tensor out = onto_elements(output.to(x.scalar_type()));
      return at::where(special, g * exclusive, g * out / x);
    }
  }
  return g;
}

at::Tensor& vk_segment_reduce_backward_out(const at::Tensor& grad, const at::Tensor& output,
                                           const at::Tensor& data, c10::string_view reduce,
                                           const std::optional<at::Tensor>& lengths,
                                           const std::optional<at::Tensor>& offsets, int64_t axis,
                                           const std::optional<at::Scalar>& initial,
                                           at::Tensor& out) {
  return write_out(
      out, vk_segment_reduce_backward(grad, output, data, reduce, lengths, offsets, axis, initial));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", TORCH_FN(vk_segment_reduce));
  m.impl("segment_reduce.out", TORCH_FN(vk_segment_reduce_out));
  m.impl("_segment_reduce_backward", TORCH_FN(vk_segment_reduce_backward));
  m.impl("_segment_reduce_backward.out", TORCH_FN(vk_segment_reduce_backward_out));
}

}  // namespace vkml_aten
