"""torch.compile on vkml: graphs with vkml tensors go through AOT autograd and run vkml's
eager kernels (Inductor has no vkml code generator); CPU graphs still go to Inductor.

Each model trains a few steps eagerly and, from the same weights, under torch.compile;
the losses must agree and no op may fall back to the CPU.
"""

import pytest
import torch
from conftest import VKML, describe, run_python
from torch import nn
from torch.nn import functional as F

import torch_vkml

BACKENDS = [
    pytest.param({}, id="default"),  # what user scripts write: Inductor's entry point
    pytest.param({"backend": "aot_eager"}, id="aot_eager"),
]
LOSS_TOL = dict(rtol=1e-4, atol=1e-6)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _data(*shape, classes=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if classes is not None:
        return torch.randint(0, classes, shape, generator=gen).to(VKML)
    return torch.randn(*shape, generator=gen).to(VKML)


def _train(factory, batches, loss_fn, compile_kw=None, lr=0.05):
    """Losses of SGD steps over ``batches``, eagerly or with ``torch.compile(model)``."""
    torch.manual_seed(0)
    model = factory().to(VKML)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    run = model if compile_kw is None else torch.compile(model, **compile_kw)
    losses = []
    for batch in batches:
        opt.zero_grad()
        loss = loss_fn(run, *batch)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


def _assert_trains_like_eager(factory, batches, loss_fn, compile_kw):
    eager, eager_model = _train(factory, batches, loss_fn)
    torch_vkml.reset_fallback_counts()
    compiled, compiled_model = _train(factory, batches, loss_fn, compile_kw)
    assert torch_vkml.fallback_counts() == {}
    torch.testing.assert_close(compiled, eager, **LOSS_TOL)
    eager_state = eager_model.state_dict()
    for name, value in compiled_model.state_dict().items():
        torch.testing.assert_close(value.cpu(), eager_state[name].cpu(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- functions


@pytest.mark.parametrize("compile_kw", BACKENDS)
def test_pointwise(compile_kw):
    def fn(x, y):
        return torch.sin(x) * 2 + y.relu() - (x * y).sum(1, keepdim=True)

    x, y = _data(8, 16), _data(8, 16, seed=1)
    torch_vkml.reset_fallback_counts()
    out = torch.compile(fn, **compile_kw)(x, y)
    assert torch_vkml.fallback_counts() == {}
    assert out.device.type == VKML
    torch.testing.assert_close(out.cpu(), fn(x, y).cpu())


def test_vkml_graphs_skip_inductor_codegen_cpu_graphs_use_it():
    """In one process: a vkml graph generates no Inductor code, a CPU graph does."""
    from torch._inductor.utils import run_and_get_code

    def fn(x):
        return torch.cos(x) + x * 3

    out, code = run_and_get_code(torch.compile(fn), _data(4, 4))
    assert out.device.type == VKML and code == []
    torch._dynamo.reset()
    x = torch.randn(4, 4)
    out, code = run_and_get_code(torch.compile(fn), x)
    assert len(code) == 1 and "cpp" in code[0]  # Inductor's C++ kernel for the CPU
    torch.testing.assert_close(out, fn(x))


def test_mixed_cpu_and_vkml_graph():
    def fn(a, b):
        moved = a.to(VKML) * 2 + b
        return moved.cpu().sum(0) + a.sum(0), moved.exp()

    a, b = torch.randn(4, 8), _data(4, 8)
    torch_vkml.reset_fallback_counts()
    out = torch.compile(fn)(a, b)
    assert torch_vkml.fallback_counts() == {}
    expected = fn(a, b)
    assert out[0].device.type == "cpu" and out[1].device.type == VKML
    torch.testing.assert_close(out[0], expected[0])
    torch.testing.assert_close(out[1].cpu(), expected[1].cpu())


# ---------------------------------------------------------------- training


def _mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def _classify(model, x, y):
    return F.cross_entropy(model(x), y)


@pytest.mark.parametrize("compile_kw", BACKENDS)
def test_mlp_trains_like_eager(compile_kw):
    batches = [(_data(8, 16, seed=s), _data(8, classes=4, seed=s)) for s in range(4)]
    _assert_trains_like_eager(_mlp, batches, _classify, compile_kw)


def test_compiled_step_with_new_batch_sizes():
    """Forward, backward and the optimizer step in one compiled function; batch sizes 8,
    then 12 and 5 (Dynamo recompiles once with a dynamic batch dimension)."""

    def losses(compiled):
        torch.manual_seed(0)
        model = _mlp().to(VKML)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        run = torch.compile(step) if compiled else step
        sizes = (8, 8, 12, 5)
        return [
            run(_data(n, 16, seed=i), _data(n, 4, seed=9 + i)).item() for i, n in enumerate(sizes)
        ]

    eager = losses(False)
    torch_vkml.reset_fallback_counts()
    compiled = losses(True)
    assert torch_vkml.fallback_counts() == {}
    torch.testing.assert_close(compiled, eager, **LOSS_TOL)


def _cnn():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 5),
    )


def test_cnn_trains_like_eager():
    # the state_dict comparison covers BatchNorm's running statistics, which the
    # compiled graph updates as an input mutation
    batches = [(_data(4, 3, 8, 8, seed=s), _data(4, classes=5, seed=s)) for s in range(3)]
    _assert_trains_like_eager(_cnn, batches, _classify, {})


VOCAB, SEQ, DIM, HEADS = 16, 8, 16, 2


def _model_test(name):
    """A module of tests/models, whose models the model tests train against the CPU."""
    import importlib
    import sys
    from pathlib import Path

    models = str(Path(__file__).parent / "models")
    if models not in sys.path:
        sys.path.insert(0, models)
    return importlib.import_module(name)


def test_model_tests_mlp_cnn_and_lm_train_like_eager():
    """The model tests' digits MLP, digits CNN (batch norm; dropout off, as there) and
    Transformer LM train under torch.compile to eager's losses and weights."""
    mlp, cnn, lm = (_model_test(f"test_model_{n}") for n in ("mlp", "cnn", "transformer"))
    digits = [(_data(16, 64, seed=s), _data(16, classes=10, seed=s)) for s in range(3)]
    _assert_trains_like_eager(mlp.mlp, digits, _classify, {})
    images = [(x.reshape(16, 1, 8, 8), y) for x, y in digits]
    _assert_trains_like_eager(
        lambda: cnn._deterministic_train(cnn.DigitsCNN()), images, _classify, {}
    )
    sequences = [(idx.to(VKML), target.to(VKML)) for idx, target in lm._batches()]
    _assert_trains_like_eager(lm.TinyLM, sequences, lm._loss, {})


# ---------------------------------------------------------------- fused vkml kernels in the graph


def _recording_backend():
    """AOT autograd whose forward and backward graphs run as they are, their code kept."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    code = {"forward": [], "backward": []}

    def keep(kind):
        def compiler(gm, example_inputs):
            code[kind].append(gm.code)
            return make_boxed_func(gm.forward)

        return compiler

    return aot_autograd(fw_compiler=keep("forward"), bw_compiler=keep("backward")), code


def _ce(x, y, w):
    # [n, c] scores, and [n, c, 1] ones with reduction="none": the fused op on rows,
    # reached through a reshape of symbolic sizes once the batch is dynamic
    loss = F.cross_entropy(x, y, weight=w, label_smoothing=0.1, ignore_index=2)
    rows = F.cross_entropy(x.unsqueeze(2), y.unsqueeze(1), reduction="none")
    return loss + 0.5 * rows.sum()


@pytest.mark.parametrize("compile_kw", BACKENDS)
def test_cross_entropy_inside_the_compiled_graph(compile_kw):
    """vkml's fused cross_entropy traced as its custom ops: losses and gradients like the
    CPU's over batch sizes 8, 12 and 5 (a dynamic batch after the first recompile)."""
    run = torch.compile(_ce, **compile_kw)
    w = _data(5, seed=7).abs() + 0.1
    torch_vkml.reset_fallback_counts()
    for i, n in enumerate((8, 12, 5)):
        x, y = _data(n, 5, seed=i).requires_grad_(), _data(n, classes=5, seed=i)
        loss = run(x, y, w)
        loss.backward()
        ref_x = x.detach().cpu().requires_grad_()
        ref = _ce(ref_x, y.cpu(), w.cpu())
        ref.backward()
        torch.testing.assert_close(loss.cpu(), ref, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(x.grad.cpu(), ref_x.grad, rtol=1e-5, atol=1e-6)
    assert torch_vkml.fallback_counts() == {}


def _encoder_layer():
    return nn.TransformerEncoderLayer(DIM, HEADS, 2 * DIM, dropout=0.0, batch_first=True)


def _encode(model, x, mask):
    return model(x, src_mask=mask, is_causal=True)


def _causal_mask():
    return nn.Transformer.generate_square_subsequent_mask(SEQ, device=VKML)


def test_transformer_encoder_layer_trains_like_eager():
    # nn.MultiheadAttention's q, k, v are [L, B * H, E] projections viewed as
    # [B, H, L, E]; the graph's views of the fused attention's output and gradients
    # rely on the strides the meta functions give them.
    batches = [(_data(2, SEQ, DIM, seed=s), _causal_mask()) for s in range(2)]
    _assert_trains_like_eager(
        _encoder_layer, batches, lambda m, x, mask: _encode(m, x, mask).square().mean(), {}
    )


def test_graphs_call_the_fused_kernels():
    """The forward and backward graphs hold vkml's fused attention and cross_entropy,
    not their decompositions; loss and gradients match eager."""
    torch.manual_seed(0)
    layer, head = _encoder_layer().to(VKML), nn.Linear(DIM, VOCAB).to(VKML)
    params = [*layer.parameters(), *head.parameters()]

    def fn(x, y, mask):
        return F.cross_entropy(head(_encode(layer, x, mask)).reshape(-1, VOCAB), y.reshape(-1))

    x, y, mask = _data(2, SEQ, DIM), _data(2, SEQ, classes=VOCAB), _causal_mask()
    expected = fn(x, y, mask)
    expected_grads = torch.autograd.grad(expected, params)
    backend, code = _recording_backend()
    torch_vkml.reset_fallback_counts()
    loss = torch.compile(fn, backend=backend)(x, y, mask)
    grads = torch.autograd.grad(loss, params)
    assert torch_vkml.fallback_counts() == {}
    forward, backward = "\n".join(code["forward"]), "\n".join(code["backward"])
    assert "torch.ops.vkml.cross_entropy_forward.default" in forward
    assert "torch.ops.vkml.cross_entropy_backward.default" in backward
    assert "_scaled_dot_product_fused_attention_overrideable.default" in forward
    assert "_scaled_dot_product_fused_attention_overrideable_backward.default" in backward
    assert "log_softmax" not in forward and "nll_loss" not in forward + backward
    torch.testing.assert_close(loss.cpu(), expected.cpu(), **LOSS_TOL)
    for got, want in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(got.cpu(), want.cpu(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "make_opt",
    [
        pytest.param(lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True), id="adam-foreach"),
        pytest.param(lambda p: torch.optim.AdamW(p, lr=1e-2, fused=True), id="adamw-fused"),
        pytest.param(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), id="sgd-momentum"),
    ],
)
def test_compiled_optimizer_step_updates_in_place(make_opt):
    """A compiled optimizer step (no autograd in its graph) runs as Dynamo captured it:
    its in-place updates stay in place, with none of AOT functionalisation's copies of
    every updated state tensor back into place; parameters match eager steps."""

    def trained(compiled):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 4)).to(VKML)
        opt = make_opt(model.parameters())
        step = torch.compile(opt.step) if compiled else opt.step
        copies = 0
        for i in range(3):
            opt.zero_grad()
            model(_data(8, 12, seed=i)).square().mean().backward()
            with torch_vkml.profile() as prof:
                step()
            copies = sum(k.calls for k in prof.kernels if k.name == "copy")
        return [p.detach().cpu() for p in model.parameters()], copies

    torch_vkml.reset_fallback_counts()
    want, _ = trained(False)
    got, copies = trained(True)
    assert torch_vkml.fallback_counts() == {}
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
    # Functionalised, each step copied every parameter and state tensor back (4 tensors
    # of 3 per parameter here: 12 or more copies).
    assert copies < 4, copies


def test_tensors_made_inside_compiled_code():
    """A vkml tensor created inside the compiled function (a causal mask, zeros on
    "vkml" without an index): fake tensors ask torch.vkml.is_initialized()."""

    def fn(x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=VKML)
        return (x @ x.transpose(1, 2) + mask).softmax(-1) + torch.zeros(1, device=VKML)

    x = _data(2, SEQ, DIM)
    torch_vkml.reset_fallback_counts()
    got = torch.compile(fn)(x)
    assert torch_vkml.fallback_counts() == {}
    torch.testing.assert_close(got.cpu(), fn(x).cpu(), rtol=1e-5, atol=1e-6)
    assert torch_vkml.is_initialized()


# ---------------------------------------------------------------- device interface


def test_dynamo_device_interface():
    from torch._dynamo.device_interface import get_interface_for_device

    interface = get_interface_for_device(VKML)
    assert interface.device_count() == torch_vkml.device_count()
    assert interface.current_device() == torch_vkml.current_device()
    assert interface.is_available()
    assert interface.get_device_properties() == torch_vkml.get_device_properties()
    assert interface.Worker.get_device_properties(0) == torch_vkml.get_device_properties(0)
    stream = interface.current_stream()
    assert stream.device_type == torch.accelerator.current_stream().device_type
    assert stream.device == torch.device(VKML, torch_vkml.current_device())
    with interface.device(0):
        assert interface.current_device() == 0
    start, end = interface.Event(enable_timing=True), interface.Event(enable_timing=True)
    assert isinstance(start, torch.Event) and start.device.type == VKML
    start.record()
    _data(64, 64) @ _data(64, 64)
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    interface.synchronize()


def test_import_loads_neither_dynamo_nor_inductor():
    """``import torch`` loads torch_vkml; the compile support waits for Dynamo's import."""
    proc = run_python(
        """
        import sys
        import torch, torch_vkml
        assert "torch._dynamo" not in sys.modules, "torch._dynamo imported"
        assert "torch._inductor" not in sys.modules, "torch._inductor imported"
        from torch._dynamo.device_interface import get_interface_for_device
        assert get_interface_for_device("vkml").device_count() >= 1
        import torch._inductor.compile_fx as compile_fx
        assert compile_fx.compile_fx._vkml_wrapped
        """
    )
    assert proc.returncode == 0, describe(proc)


@pytest.mark.parametrize("compile_kw", BACKENDS)
def test_checkpointed_dropout_compiles_and_replays_its_masks(compile_kw, no_fallback):
    """torch.utils.checkpoint inside a compiled function: AOT autograd recomputes the
    region in the backward and wraps its dropout in run_and_save_rng_state /
    run_with_rng_state, which raised "Backend not supported for vkml". Compiled, the loss
    and the gradients equal eager's under the same seed (the same draws)."""
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    lin = nn.Linear(32, 32).to(VKML)

    def block(x):
        return F.dropout(torch.tanh(lin(x)), 0.5, training=True)

    def loss_of(x):
        return checkpoint(block, x, use_reentrant=False).square().sum()

    x = _data(16, 32).requires_grad_()
    results = []
    for fn in (loss_of, torch.compile(loss_of, **compile_kw)):
        torch.manual_seed(3)
        loss = fn(x)
        loss.backward()
        results.append((loss.item(), x.grad.cpu(), lin.weight.grad.cpu()))
        x.grad = None
        lin.zero_grad()
    (eager_loss, *eager_grads), (compiled_loss, *compiled_grads) = results
    assert compiled_loss == pytest.approx(eager_loss, rel=1e-6)
    for got, want in zip(compiled_grads, eager_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
