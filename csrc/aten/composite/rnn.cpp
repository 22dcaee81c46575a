// The fused LSTM/GRU cells PyTorch calls on accelerators (nn.LSTM / nn.GRU on
// a PrivateUse1 device take the same path as CUDA, and these ops have no CPU
// kernel to fall back to). Built from native device ops; the workspace layout
// is private to this file: LSTM [i f g o] activated, GRU [r z n hn hx].
#include <torch/library.h>

#include "aten/vkml_tensor.h"

namespace vkml_aten {
namespace {

at::Tensor gates_sum(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                     const std::optional<at::Tensor>& input_bias,
                     const std::optional<at::Tensor>& hidden_bias) {
  at::Tensor g = input_gates + hidden_gates;
  if (input_bias.has_value() && input_bias->defined()) g = g + *input_bias;
  if (hidden_bias.has_value() && hidden_bias->defined()) g = g + *hidden_bias;
  return g;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.sizes() == hidden_gates.sizes(),
              "_thnn_fused_lstm_cell: input_gates and hidden_gates must be [batch, 4*hidden]");
  auto chunks = gates_sum(input_gates, hidden_gates, input_bias, hidden_bias).chunk(4, 1);
  at::Tensor i = chunks[0].sigmoid(), f = chunks[1].sigmoid();
  at::Tensor g = chunks[2].tanh(), o = chunks[3].sigmoid();
  at::Tensor cy = f * cx + i * g;
  at::Tensor hy = o * cy.tanh();
  at::Tensor workspace = at::cat({i, f, g, o}, 1);
  return {hy, cy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_backward(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  bool has_h = grad_hy.has_value() && grad_hy->defined();
  bool has_c = grad_cy.has_value() && grad_cy->defined();
  if (!has_h && !has_c) return {at::Tensor(), at::Tensor(), at::Tensor()};
  auto w = workspace.chunk(4, 1);
  const at::Tensor &i = w[0], &f = w[1], &g = w[2], &o = w[3];
  at::Tensor tcy = cy.tanh();
  at::Tensor gh = has_h ? *grad_hy : at::zeros_like(cy);
  at::Tensor gcx = gh * o * (1 - tcy * tcy);
  if (has_c) gcx = gcx + *grad_cy;
  at::Tensor gi = gcx * g * i * (1 - i);
  at::Tensor gf = gcx * cx * f * (1 - f);
  at::Tensor gg = gcx * i * (1 - g * g);
  at::Tensor go = gh * tcy * o * (1 - o);
  at::Tensor grad_gates = at::cat({gi, gf, gg, go}, 1);
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, gcx * f, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> gru_cell(const at::Tensor& input_gates,
                                            const at::Tensor& hidden_gates, const at::Tensor& hx,
                                            const std::optional<at::Tensor>& input_bias,
                                            const std::optional<at::Tensor>& hidden_bias) {
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.sizes() == hidden_gates.sizes(),
              "_thnn_fused_gru_cell: input_gates and hidden_gates must be [batch, 3*hidden]");
  at::Tensor ig = input_gates, hg = hidden_gates;
  if (input_bias.has_value() && input_bias->defined()) ig = ig + *input_bias;
  if (hidden_bias.has_value() && hidden_bias->defined()) hg = hg + *hidden_bias;
  auto ic = ig.chunk(3, 1), hc = hg.chunk(3, 1);
  at::Tensor r = (ic[0] + hc[0]).sigmoid();
  at::Tensor z = (ic[1] + hc[1]).sigmoid();
  at::Tensor n = (ic[2] + r * hc[2]).tanh();
  at::Tensor hy = n + z * (hx - n);
  at::Tensor workspace = at::cat({r, z, n, hc[2], hx}, 1);
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  auto w = workspace.chunk(5, 1);
  const at::Tensor &r = w[0], &z = w[1], &n = w[2], &hn = w[3], &hx = w[4];
  at::Tensor dn = grad_hy * (1 - z) * (1 - n * n);  // through tanh
  at::Tensor dz = grad_hy * (hx - n) * z * (1 - z);
  at::Tensor dr = dn * hn * r * (1 - r);
  at::Tensor grad_input_gates = at::cat({dr, dz, dn}, 1);
  at::Tensor grad_hidden_gates = at::cat({dr, dz, dn * r}, 1);
  at::Tensor grad_hx = grad_hy * z;
  at::Tensor gib, ghb;
  if (has_bias) {
    gib = grad_input_gates.sum(0);
    ghb = grad_hidden_gates.sum(0);
  }
  return {grad_input_gates, grad_hidden_gates, grad_hx, gib, ghb};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(gru_cell_backward));
}

}  // namespace vkml_aten
