"""Hugging Face ``transformers`` models (code nobody in this project wrote) on vkml.

Each model is built on the CPU from a tiny config (random init under
``torch.manual_seed``, no download), deep-copied and moved to vkml, and both copies are
trained a few AdamW steps (lr 1e-3) on the same batch with every dropout probability 0.
The vkml run must follow the CPU: the loss at each step, every parameter's gradient after
the first backward, ``generate`` tokens (greedy, and beam search for two) and their scores
for the decoder LMs and the encoder-decoders, and no op may run on the CPU fallback.
Models with tied input/output embeddings must stay tied through ``.to("vkml")``, and an
optimizer built before the move must update the device parameters.

Besides GPT-2, Llama, BERT, T5, BART, ViT, wav2vec2 and Whisper, a few more architectures
cover other op families (sliding-window and ALiBi attention, a mixture of experts, a
state-space scan, relative-position gathers, shifted windows, depthwise convolutions, a
contrastive loss),
and GPT-2, Llama and BERT run through both sdpa attention (the default) and eager.

``TORCH_VKML_LONG_TESTS=1`` trains more steps and generates more tokens.
"""

import copy
import functools
import os

# Nothing may be downloaded: every model comes from a config, not from the hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402  (requirements-dev.txt; no skip: a missing one must fail)
from model_utils import LONG_TESTS, VKML, assert_no_fallback, to_device  # noqa: E402

import torch_vkml  # noqa: E402

STEPS = 10 if LONG_TESTS else 3
NEW_TOKENS = 16 if LONG_TESTS else 8
VOCAB, SEQ, BATCH, HIDDEN = 128, 12, 2, 32

# Tolerances: float32 on both devices, only the order of summation differs.
# Loss: a mean over <= BATCH x SEQ token losses of size ~log(VOCAB) ~ 5, a few AdamW
# steps in. Adam turns rounding noise in ~zero gradient elements (e.g. the key biases,
# whose exact gradient is 0) into lr-sized steps, but those move the loss only at second
# order: agreement is ~1e-6 relative, 1e-4 leaves margin.
LOSS_TOL = dict(atol=1e-4, rtol=1e-4)
# Gradients after the first backward: each element is a sum of at most ~BATCH x SEQ x
# 4 HIDDEN (~800) float32 products, accumulated in another order: error ~sqrt(n) x 6e-8
# ~ 2e-6 relative to the size of the terms. Elements that are sums of cancelling terms
# carry that error relative to the terms, not to their own value: a key bias's gradient
# is 0 in exact arithmetic (softmax is shift-invariant), so both devices hold only
# rounding noise there (~1e-12 vs ~1e-10). Hence atol = 1e-5 x the model's largest
# gradient element, rtol 1e-4. Measured: <= 2.2e-6 x that scale (wav2vec2's CTC head,
# CLIP's contrastive loss; each within 5x of the CPU's own float32 error against
# float64), <= 4e-7 x for the others.
GRAD_RTOL, GRAD_ATOL_SCALE = 1e-4, 1e-5
# Generation: the scores (processed logits) of each step, same reasoning as the loss.
SCORE_TOL = dict(atol=1e-4, rtol=1e-4)


# --------------------------------------------------------------------------
# Models: tiny configs, every dropout 0
# --------------------------------------------------------------------------


def _gpt2(**overrides):
    kw = dict(
        vocab_size=VOCAB,
        n_positions=64,
        n_embd=HIDDEN,
        n_layer=2,
        n_head=4,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(**(kw | overrides)))


def _llama(**overrides):
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention
        max_position_embeddings=64,
        attention_dropout=0.0,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        **overrides,
    )
    return transformers.LlamaForCausalLM(cfg)


def _bert(**overrides):
    cfg = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        tie_word_embeddings=True,
        pad_token_id=0,
        **overrides,
    )
    return transformers.BertForMaskedLM(cfg)


def _t5():
    cfg = transformers.T5Config(
        vocab_size=VOCAB,
        d_model=HIDDEN,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        dropout_rate=0.0,
        tie_word_embeddings=True,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    return transformers.T5ForConditionalGeneration(cfg)


def _bart():
    cfg = transformers.BartConfig(
        vocab_size=VOCAB,
        d_model=HIDDEN,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        tie_word_embeddings=True,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_bos_token_id=None,
        forced_eos_token_id=None,
    )
    return transformers.BartForConditionalGeneration(cfg)


def _vit():
    cfg = transformers.ViTConfig(
        image_size=16,
        patch_size=4,
        num_channels=3,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=5,
    )
    return transformers.ViTForImageClassification(cfg)


def _wav2vec2():
    cfg = transformers.Wav2Vec2Config(
        vocab_size=32,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        conv_dim=(16, 16, 16),
        conv_kernel=(10, 3, 3),
        conv_stride=(5, 2, 2),
        feat_extract_norm="group",
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        hidden_dropout=0.0,
        activation_dropout=0.0,
        attention_dropout=0.0,
        feat_proj_dropout=0.0,
        final_dropout=0.0,
        layerdrop=0.0,
        apply_spec_augment=False,
        mask_time_prob=0.0,
        mask_feature_prob=0.0,
        ctc_loss_reduction="mean",
        pad_token_id=0,
    )
    return transformers.Wav2Vec2ForCTC(cfg)


def _whisper():
    cfg = transformers.WhisperConfig(
        vocab_size=VOCAB,
        num_mel_bins=16,
        d_model=HIDDEN,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=16,  # input features: 2 x 16 frames
        max_target_positions=32,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        tie_word_embeddings=True,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        begin_suppress_tokens=None,
        suppress_tokens=None,
    )
    return transformers.WhisperForConditionalGeneration(cfg)


# More architectures, each for an op family the models above do not use.
def _lm_config(cls, **kw):
    base = dict(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    return cls(**{**base, **kw})


def _mistral():  # sliding-window causal mask
    cfg = _lm_config(transformers.MistralConfig, num_key_value_heads=2, sliding_window=4)
    return transformers.MistralForCausalLM(cfg)


def _mixtral():
    # A mixture of experts: top-2 routing, the experts through torch._grouped_mm (tokens
    # sorted by expert, device offsets from an int32 histc), the router's balancing loss
    cfg = _lm_config(
        transformers.MixtralConfig,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        router_aux_loss_coef=0.02,
    )
    return transformers.MixtralForCausalLM(cfg)


def _bloom():  # ALiBi position biases through baddbmm
    cfg = _lm_config(
        transformers.BloomConfig, n_layer=2, n_head=4, hidden_dropout=0.0, attention_dropout=0.0
    )
    return transformers.BloomForCausalLM(cfg)


def _mamba():  # selective state-space scan (the pure-PyTorch path), causal conv1d
    cfg = _lm_config(
        transformers.MambaConfig, state_size=8, expand=2, conv_kernel=4, use_mambapy=False
    )
    return transformers.MambaForCausalLM(cfg)


def _deberta_v2():  # disentangled relative-position attention (gathers of position scores)
    cfg = _lm_config(
        transformers.DebertaV2Config,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        relative_attention=True,
        position_buckets=8,
        max_relative_positions=16,
        pos_att_type=["p2c", "c2p"],
    )
    return transformers.DebertaV2ForMaskedLM(cfg)


def _swin():  # shifted windows: roll, window partition / merge, relative position bias
    cfg = transformers.SwinConfig(
        image_size=16,
        patch_size=2,
        embed_dim=16,
        depths=[2, 2],
        num_heads=[2, 4],
        window_size=4,
        mlp_ratio=2.0,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        drop_path_rate=0.0,
        num_labels=5,
    )
    return transformers.SwinForImageClassification(cfg)


def _convnext():  # depthwise 7x7 convolution, channels-first LayerNorm, layer scale
    cfg = transformers.ConvNextConfig(
        num_stages=2,
        patch_size=2,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        image_size=16,
        drop_path_rate=0.0,
        num_labels=5,
    )
    return transformers.ConvNextForImageClassification(cfg)


def _clip():  # two towers, contrastive loss over the batch
    cfg = transformers.CLIPConfig(
        text_config=dict(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=32,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
        ),
        vision_config=dict(
            image_size=16,
            patch_size=4,
            hidden_size=HIDDEN,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
        ),
        projection_dim=16,
    )
    return transformers.CLIPModel(cfg)


# --------------------------------------------------------------------------
# Batches (CPU tensors from a private generator)
# --------------------------------------------------------------------------


def _gen():
    return torch.Generator().manual_seed(1234)


def _causal_batch():
    gen = _gen()
    ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=gen)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    ids[1, -3:] = 0  # the second row is right-padded
    mask[1, -3:] = 0
    labels = ids.masked_fill(mask == 0, -100)
    return dict(input_ids=ids, attention_mask=mask, labels=labels)


def _router_loss_batch():
    # The router's balancing loss joins the training loss (per call: transformers 5.25's
    # generate() fails on the CPU alike with it in the config and an attention mask).
    return _causal_batch() | dict(output_router_logits=True)


def _mamba_batch():
    batch = _causal_batch()
    del batch["attention_mask"]  # Mamba has none: the padded tail is only unlabelled
    return batch


def _clip_batch():
    return dict(
        input_ids=_causal_batch()["input_ids"],
        pixel_values=_image_batch()["pixel_values"],
        return_loss=True,
    )


def _mlm_batch():
    gen = _gen()
    labels = torch.randint(3, VOCAB, (BATCH, SEQ), generator=gen)
    masked = torch.rand(BATCH, SEQ, generator=gen) < 0.3
    masked[:, 0] = True  # at least one prediction per row
    ids = labels.masked_fill(masked, 2)  # 2: the [MASK] token here
    return dict(input_ids=ids, labels=labels.masked_fill(~masked, -100))


def _seq2seq_batch():
    gen = _gen()
    ids = torch.randint(2, VOCAB, (BATCH, SEQ), generator=gen)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    ids[1, -4:] = 0
    mask[1, -4:] = 0
    labels = torch.randint(2, VOCAB, (BATCH, 8), generator=gen)
    return dict(input_ids=ids, attention_mask=mask, labels=labels)


def _mel_batch():
    gen = _gen()
    return dict(
        input_features=torch.randn(BATCH, 16, 32, generator=gen),
        labels=torch.randint(3, VOCAB, (BATCH, 8), generator=gen),
    )


def _image_batch():
    gen = _gen()
    return dict(
        pixel_values=torch.randn(BATCH, 3, 16, 16, generator=gen),
        labels=torch.randint(0, 5, (BATCH,), generator=gen),
    )


def _speech_batch():
    gen = _gen()
    # 800 samples -> 39 frames through the (10/5, 3/2, 3/2) feature convolutions
    labels = torch.randint(1, 32, (BATCH, 6), generator=gen)
    labels[1, -2:] = -100  # a shorter transcript in the second row
    return dict(input_values=torch.randn(BATCH, 800, generator=gen), labels=labels)


MODELS = {
    "gpt2": (_gpt2, _causal_batch),
    "gpt2_eager": (functools.partial(_gpt2, attn_implementation="eager"), _causal_batch),
    "llama": (_llama, _causal_batch),
    "llama_eager": (functools.partial(_llama, attn_implementation="eager"), _causal_batch),
    "bert_mlm": (_bert, _mlm_batch),
    "bert_mlm_eager": (functools.partial(_bert, attn_implementation="eager"), _mlm_batch),
    "t5": (_t5, _seq2seq_batch),
    "bart": (_bart, _seq2seq_batch),
    "vit": (_vit, _image_batch),
    "wav2vec2_ctc": (_wav2vec2, _speech_batch),
    "whisper": (_whisper, _mel_batch),
    "mistral": (_mistral, _causal_batch),
    "mixtral": (_mixtral, _router_loss_batch),
    "bloom": (_bloom, _causal_batch),
    "mamba": (_mamba, _mamba_batch),
    "deberta_v2": (_deberta_v2, _mlm_batch),
    "swin": (_swin, _image_batch),
    "convnext": (_convnext, _image_batch),
    "clip": (_clip, _clip_batch),
}
TIED = ["gpt2", "llama", "bert_mlm", "t5", "bart", "whisper"]
GENERATE = [
    ("gpt2", {}),
    ("llama", {}),
    ("t5", {}),
    ("bart", {}),
    ("whisper", {}),
    ("mistral", {}),
    ("mixtral", {}),
    ("bloom", {}),
    ("mamba", {}),
    ("gpt2", dict(num_beams=3)),
    ("t5", dict(num_beams=3)),
]


def _params(names):
    return [pytest.param(name, id=name) for name in names]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _build(name):
    torch.manual_seed(0)
    model = MODELS[name][0]()
    model.train()  # every dropout probability in the configs is 0
    return model


def _twins(name):
    """The CPU model and a deep copy of it moved to vkml (same weights, same ties)."""
    cpu = _build(name)
    return cpu, copy.deepcopy(cpu).to(VKML)


def _on(batch, device):
    return {k: to_device(v, device) for k, v in batch.items()}


def _compare_grads(vk_model, cpu_model):
    """Every parameter's gradient on vkml matches the CPU's; returns the max abs diff."""
    vk_params = dict(vk_model.named_parameters(remove_duplicate=False))
    scale = max(p.grad.abs().max().item() for p in cpu_model.parameters() if p.grad is not None)
    worst = 0.0
    for name, cpu_p in cpu_model.named_parameters():
        vk_p = vk_params[name]
        assert vk_p.device.type == VKML, f"{name} is on {vk_p.device}"
        if not cpu_p.requires_grad:  # frozen (Whisper's sinusoidal positions)
            assert vk_p.grad is None and not vk_p.requires_grad, name
            continue
        assert cpu_p.grad is not None, f"{name}: no gradient on the CPU"
        assert vk_p.grad is not None, f"{name}: no gradient on vkml"
        got, want = vk_p.grad.cpu(), cpu_p.grad
        torch.testing.assert_close(
            got,
            want,
            rtol=GRAD_RTOL,
            atol=GRAD_ATOL_SCALE * scale,
            msg=lambda m, n=name: f"grad of {n}: {m}",
        )
        worst = max(worst, (got - want).abs().max().item())
    # the same parameters (a tied pair counted once on both devices)
    assert [n for n, _ in vk_model.named_parameters()] == [
        n for n, _ in cpu_model.named_parameters()
    ]
    return worst


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------


def _train_both(name, cpu, vk, batch):
    """STEPS AdamW steps on each twin: the first gradients and every loss agree."""
    opts = {m: torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (cpu, vk)}
    losses = {cpu: [], vk: []}
    torch_vkml.reset_fallback_counts()
    for step in range(STEPS):
        for model, device in ((cpu, "cpu"), (vk, VKML)):
            opts[model].zero_grad()
            loss = model(**_on(batch, device)).loss
            loss.backward()
            losses[model].append(loss.detach().cpu())
        if step == 0:
            worst = _compare_grads(vk, cpu)
            print(f"{name}: max |grad diff| after the first backward {worst:.3g}")
        for opt in opts.values():
            opt.step()
    cpu_losses, vk_losses = torch.stack(losses[cpu]), torch.stack(losses[vk])
    torch.testing.assert_close(
        vk_losses,
        cpu_losses,
        **LOSS_TOL,
        msg=lambda m: f"losses differ\ncpu  {cpu_losses.tolist()}\nvkml {vk_losses.tolist()}\n{m}",
    )
    assert torch.isfinite(cpu_losses).all()
    assert cpu_losses[-1] < cpu_losses[0], f"the CPU run did not learn: {cpu_losses}"
    assert_no_fallback()


@pytest.mark.parametrize("name", _params(MODELS))
def test_trains_like_cpu(name):
    cpu, vk = _twins(name)
    _train_both(name, cpu, vk, MODELS[name][1]())


def test_flex_attention_trains_and_generates_like_cpu():
    """attn_implementation="flex_attention" on vkml: PyTorch's FlexAttention refused
    devices outside its own list ("only supported on CUDA, CPU, HPU, or MPS devices")
    until torch_vkml widened that check. Its padding and causal block masks, forward and
    backward, train as the CPU's sdpa attention does (the CPU cannot take FlexAttention's
    backward), and greedy generation through it gives the CPU's tokens."""
    cpu, vk = _twins("llama")
    vk.set_attn_implementation("flex_attention")
    assert vk.config._attn_implementation == "flex_attention"
    _train_both("llama_flex", cpu, vk, _causal_batch())
    prompt = _prompt("llama")
    outs = {}
    for model, device in ((cpu, "cpu"), (vk, VKML)):
        model.eval()
        with torch.no_grad():
            outs[device] = model.generate(
                **_on(prompt, device), do_sample=False, max_new_tokens=NEW_TOKENS
            )
    assert outs[VKML].cpu().tolist() == outs["cpu"].tolist()
    assert_no_fallback()


def _prompt(name):
    """The generate() inputs: token prompts (padded in the second row) or mel features."""
    gen = _gen()
    if name == "whisper":
        return dict(input_features=torch.randn(BATCH, 16, 32, generator=gen))
    ids = torch.randint(3, VOCAB, (BATCH, 6), generator=gen)
    mask = torch.ones_like(ids)
    decoder_only = name in ("gpt2", "llama", "mistral", "mixtral", "bloom", "mamba")
    pad = slice(0, 2) if decoder_only else slice(-2, None)
    ids[1, pad] = 0  # decoder LMs: left padding; encoder inputs: right padding
    mask[1, pad] = 0
    if name == "mamba":
        return dict(input_ids=ids)
    return dict(input_ids=ids, attention_mask=mask)


@pytest.mark.parametrize(
    "name, options",
    [pytest.param(n, o, id=n + "".join(f"-{k}{v}" for k, v in o.items())) for n, o in GENERATE],
)
def test_generation_like_cpu(name, options):
    cpu, vk = _twins(name)
    prompt = _prompt(name)
    outs = {}
    torch_vkml.reset_fallback_counts()
    for model, device in ((cpu, "cpu"), (vk, VKML)):
        model.eval()
        with torch.no_grad():
            outs[device] = model.generate(
                **_on(prompt, device),
                do_sample=False,
                max_new_tokens=NEW_TOKENS,
                min_new_tokens=NEW_TOKENS,
                output_scores=True,
                return_dict_in_generate=True,
                **options,
            )
    cpu_out, vk_out = outs["cpu"], outs[VKML]
    assert vk_out.sequences.device.type == VKML
    torch.testing.assert_close(
        torch.stack(vk_out.scores).cpu(), torch.stack(cpu_out.scores), **SCORE_TOL
    )
    assert vk_out.sequences.cpu().tolist() == cpu_out.sequences.tolist()
    assert len(cpu_out.scores) == NEW_TOKENS
    assert_no_fallback()


@pytest.mark.parametrize("name", TIED)
def test_tied_embeddings_survive_move(name):
    model = _build(name)
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    ref = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # built before the move
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    model.to(VKML)
    out_w, in_w = model.get_output_embeddings().weight, model.get_input_embeddings().weight
    assert in_w.device.type == VKML
    tied = out_w is in_w
    assert tied, "the tied output/input embeddings are separate tensors on vkml"
    # the optimizer holds the module's (now device) parameters ...
    held = [p for group in opt.param_groups for p in group["params"]]
    assert len(held) == len(list(model.parameters()))
    assert all(h is p for h, p in zip(held, model.parameters(), strict=True)), (
        "the optimizer built before .to('vkml') holds stale parameters"
    )
    # ... and its step moves them like the same step on the CPU
    batch = MODELS[name][1]()
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-3)
    torch_vkml.reset_fallback_counts()
    for m, device in ((ref, "cpu"), (model, VKML)):
        m(**_on(batch, device)).loss.backward()
    # the tied weight's gradient holds both uses (input lookup and output projection)
    ref_grad = ref.get_input_embeddings().weight.grad
    torch.testing.assert_close(
        in_w.grad.cpu(),
        ref_grad,
        rtol=GRAD_RTOL,
        atol=GRAD_ATOL_SCALE * ref_grad.abs().max().item(),
        msg=lambda m: f"gradient of the tied embedding: {m}",
    )
    ref_opt.step()
    opt.step()
    for n, p in model.named_parameters():
        if p.requires_grad:
            assert not torch.equal(p.detach().cpu(), before[n]), f"{n} was not updated"
    torch.testing.assert_close(
        in_w.detach().cpu(),
        ref.get_input_embeddings().weight.detach(),
        atol=1e-5,
        rtol=1e-4,
        msg=lambda m: f"tied embedding after one AdamW step: {m}",
    )
    assert_no_fallback()


@pytest.mark.parametrize("device_map", [VKML, "auto"])
def test_from_pretrained_onto_vkml(tmp_path, device_map):
    """A saved checkpoint loads straight onto vkml with from_pretrained(device_map=...)
    ("auto" places it on PyTorch's accelerator, vkml), tied and with the CPU's logits.
    transformers 5.25 hands the model to the `kernels` package (its dependency), whose
    fixed list of device types has no vkml: the load raises unless hub kernels are off
    (use_kernels=False or USE_HUB_KERNELS=0; README, Troubleshooting). The second half
    pins that, so the README changes when a release lifts it."""
    torch.manual_seed(0)
    model = _llama().eval()
    model.save_pretrained(tmp_path)
    ids = _causal_batch()["input_ids"]
    torch_vkml.reset_fallback_counts()
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, device_map=device_map, use_kernels=False
    )
    assert loaded.device.type == VKML
    assert all(p.device.type == VKML for p in loaded.parameters())
    assert loaded.get_output_embeddings().weight is loaded.get_input_embeddings().weight
    with torch.no_grad():
        got, want = loaded(input_ids=ids.to(VKML)).logits, model(input_ids=ids).logits
    torch.testing.assert_close(got.cpu(), want, **SCORE_TOL)
    assert_no_fallback()
    with pytest.raises(ValueError, match="Unsupported device type 'vkml'"):
        transformers.AutoModelForCausalLM.from_pretrained(tmp_path, device_map=device_map)


def test_grouped_query_attention_runs_fused():
    """Llama's 4 query heads over 2 k/v heads: with no padding mask, transformers' sdpa
    integration passes enable_gqa, and vkml's fused kernel must take k and v with their
    own 2 heads (no repeat_interleave of the math path), forward and backward, with the
    CPU's loss and gradients."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class FusedCalls(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.heads, self.ops = [], []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.__name__)
            if func.__name__.startswith("_scaled_dot_product_fused_attention_overrideable"):
                q, k, v = args[1:4] if "backward" in func.__name__ else args[:3]
                self.heads.append((q.shape[1], k.shape[1], v.shape[1]))
            return func(*args, **(kwargs or {}))

    cpu, vk = _twins("llama")
    ids = _causal_batch()["input_ids"]
    calls = FusedCalls()
    torch_vkml.reset_fallback_counts()
    with calls:
        loss = vk(input_ids=ids.to(VKML), labels=ids.to(VKML)).loss
        loss.backward()
    want = cpu(input_ids=ids, labels=ids).loss
    want.backward()
    # two layers, each one fused forward and one fused backward, with 4 q and 2 k/v heads
    assert calls.heads == [(4, 2, 2)] * 4, calls.heads
    assert not any(op.startswith("repeat_interleave") for op in calls.ops)
    torch.testing.assert_close(loss.detach().cpu(), want.detach(), **LOSS_TOL)
    _compare_grads(vk, cpu)
    assert_no_fallback()


def test_attention_dropout_runs_fused():
    """GPT-2 with attn_pdrop = 0.1 in training mode, as its default config trains:
    transformers' sdpa integration passes dropout_p, and vkml's fused kernels draw the
    mask themselves, forward and backward, with no fallback. The same seed gives the
    same loss and gradients (the mask follows torch.manual_seed); a step under another
    seed differs; in eval mode the model matches the CPU again. The kernels' masks
    against the math on the same mask: tests/test_attention.py."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class DropoutCalls(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.p = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__.startswith("_scaled_dot_product_fused_attention_overrideable"):
                kw = kwargs or {}
                self.p.append(
                    kw.get("dropout_p", args[4 if "backward" not in func.__name__ else 12])
                )
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    cpu = _gpt2(attn_pdrop=0.1)
    vk = copy.deepcopy(cpu).to(VKML)
    ids = _causal_batch()["input_ids"]
    torch_vkml.reset_fallback_counts()

    def step(seed, calls=None):
        vk.zero_grad()
        torch.manual_seed(seed)
        if calls is None:
            loss = vk(input_ids=ids.to(VKML), labels=ids.to(VKML)).loss
            loss.backward()
        else:
            with calls:
                loss = vk(input_ids=ids.to(VKML), labels=ids.to(VKML)).loss
                loss.backward()
        return loss.item(), vk.transformer.h[0].attn.c_attn.weight.grad.cpu()

    calls = DropoutCalls()
    loss_a, grad_a = step(5, calls)
    assert calls.p == [0.1] * 4, calls.p  # two layers, forward and backward each
    loss_b, grad_b = step(5)
    assert loss_a == loss_b and torch.equal(grad_a, grad_b)
    loss_c, _ = step(6)
    assert loss_c != loss_a
    vk.eval()
    cpu.eval()
    want = cpu(input_ids=ids, labels=ids).loss
    got = vk(input_ids=ids.to(VKML), labels=ids.to(VKML)).loss
    torch.testing.assert_close(got.detach().cpu(), want.detach(), **LOSS_TOL)
    assert_no_fallback()


@pytest.mark.parametrize("use_reentrant", [False, True], ids=["nonreentrant", "reentrant"])
def test_gradient_checkpointing_replays_dropout(use_reentrant):
    """GPT-2 with its default dropouts (0.1 on embeddings, attention and residuals) under
    transformers' ``gradient_checkpointing_enable``: each block's forward runs again in
    the backward, and torch.utils.checkpoint must restore vkml's RNG state first so the
    recomputation draws the masks the forward drew. The loss and every gradient equal a
    run without checkpointing under the same seed. (They differed by up to the gradients'
    own size when torch could not see that vkml was initialised, and skipped saving its
    RNG state.)"""
    torch.manual_seed(0)
    vk = _gpt2(resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1).to(VKML)
    vk.train()
    ids = _causal_batch()["input_ids"].to(VKML)
    torch_vkml.reset_fallback_counts()

    def step():
        vk.zero_grad()
        torch.manual_seed(7)
        loss = vk(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss.item(), {n: p.grad.cpu() for n, p in vk.named_parameters()}

    loss_plain, grads_plain = step()
    vk.gradient_checkpointing_enable({"use_reentrant": use_reentrant})
    assert vk.transformer.gradient_checkpointing
    loss_ckpt, grads_ckpt = step()
    assert loss_ckpt == loss_plain
    for name, grad in grads_plain.items():
        torch.testing.assert_close(
            grads_ckpt[name], grad, rtol=1e-5, atol=1e-6, msg=lambda m, n=name: f"{n}: {m}"
        )
    assert_no_fallback()
