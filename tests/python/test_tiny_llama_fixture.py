"""Checks the tiny-model fixture (make_tiny_llama.py) independently of Troupe.

A float64 numpy Llama forward pass run on the HF folder (half-split RoPE,
Llama-3 scaling as transformers computes it) and on tiny.gguf (adjacent-pair
RoPE, rope_freqs.weight as llama.cpp applies it) must give the same logits:
that is the property the C++ engine's HF-vs-GGUF test relies on. The HF
tokenizer files are checked with `tokenizers`/`transformers`, and the GGUF
vocabulary against them.
"""

import json
import math
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import make_tiny_llama as fixture  # noqa: E402

gguf = pytest.importorskip("gguf")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

VARIANTS = {
    "base": [],
    "sharded": ["--shards", "3"],
    "tied": ["--tied"],
    "qwen": ["--qkv-bias"],
    "llama3": ["--llama3-rope"],
    "f16": ["--f16"],
}
PROMPT = [1, 120, 118, 262, 10, 200, 37, 2, 5, 281, 40, 41, 42, 43, 270, 3]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    for name, flags in VARIANTS.items():
        assert fixture.main([str(root / name), "--seed", "7", *flags]) == 0
    return root

# ------------------------------------------------------------ reference model


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate(x, pos, inv_freq, style):
    """x: [T, H, D]. style 'halves' pairs (i, i + D/2); 'pairs' pairs (2i, 2i+1)."""
    ang = pos[:, None] * inv_freq[None, :]                   # [T, D/2]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    if style == "halves":
        a, b = np.split(x, 2, axis=-1)
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = b * cos + a * sin
    return out


def forward(w, hp, tokens, style, inv_freq):
    """Logits [T, vocab] of a Llama decoder; w maps GGUF names to float64 arrays."""
    n_head, n_kv, d = hp["n_head"], hp["n_kv"], hp["head_dim"]
    pos = np.arange(len(tokens), dtype=np.float64)
    mask = np.triu(np.full((len(tokens), len(tokens)), -np.inf), 1)
    h = w["token_embd.weight"][tokens]                                   # [T, hidden]
    for i in range(hp["n_layers"]):
        p = f"blk.{i}."
        x = rms_norm(h, w[p + "attn_norm.weight"], hp["eps"])
        q = x @ w[p + "attn_q.weight"].T + w.get(p + "attn_q.bias", 0)
        k = x @ w[p + "attn_k.weight"].T + w.get(p + "attn_k.bias", 0)
        v = x @ w[p + "attn_v.weight"].T + w.get(p + "attn_v.bias", 0)
        q = rotate(q.reshape(len(tokens), n_head, d), pos, inv_freq, style)
        k = rotate(k.reshape(len(tokens), n_kv, d), pos, inv_freq, style)
        v = v.reshape(len(tokens), n_kv, d)
        k = np.repeat(k, n_head // n_kv, axis=1)
        v = np.repeat(v, n_head // n_kv, axis=1)
        scores = np.einsum("thd,shd->hts", q, k) / math.sqrt(d) + mask
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        att = np.einsum("hts,shd->thd", probs, v).reshape(len(tokens), n_head * d)
        h = h + att @ w[p + "attn_output.weight"].T
        x = rms_norm(h, w[p + "ffn_norm.weight"], hp["eps"])
        gate = x @ w[p + "ffn_gate.weight"].T
        act = (gate / (1 + np.exp(-gate))) * (x @ w[p + "ffn_up.weight"].T)   # SwiGLU
        h = h + act @ w[p + "ffn_down.weight"].T
    h = rms_norm(h, w["output_norm.weight"], hp["eps"])
    return h @ w.get("output.weight", w["token_embd.weight"]).T


def load_hf(hf_dir):
    """(weights by GGUF name, hparams, inv_freq) from config.json + safetensors."""
    cfg = json.loads((hf_dir / "config.json").read_text())
    tensors = {}
    for f in sorted(hf_dir.glob("*.safetensors")):
        tensors.update(safetensors_numpy.load_file(str(f)))
    w = {fixture.gguf_name(k): v.astype(np.float64) for k, v in tensors.items()}
    n_head = cfg["num_attention_heads"]
    d = cfg.get("head_dim") or cfg["hidden_size"] // n_head
    hp = {"n_layers": cfg["num_hidden_layers"], "n_head": n_head,
          "n_kv": cfg.get("num_key_value_heads") or n_head, "head_dim": d,
          "eps": cfg["rms_norm_eps"]}
    inv_freq = 1.0 / cfg.get("rope_theta", 10000.0) ** (np.arange(0, d, 2, dtype=np.float64) / d)
    s = cfg.get("rope_scaling")
    if s and s.get("rope_type") == "llama3":  # transformers' _compute_llama3_parameters
        old = s["original_max_position_embeddings"]
        low_wl, high_wl = old / s["low_freq_factor"], old / s["high_freq_factor"]
        wavelen = 2 * math.pi / inv_freq
        scaled = np.where(wavelen > low_wl, inv_freq / s["factor"], inv_freq)
        lo, hi = s["low_freq_factor"], s["high_freq_factor"]
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / s["factor"] + smooth * scaled
        medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
        inv_freq = np.where(medium, smoothed, scaled)
    return w, hp, inv_freq


def load_gguf(path):
    r = gguf.GGUFReader(str(path))

    def field(key):
        return r.get_field(key).contents()

    w = {t.name: np.asarray(t.data, dtype=np.float64).reshape([int(n) for n in reversed(t.shape)])
         for t in r.tensors}
    d = field("llama.rope.dimension_count")
    hp = {"n_layers": field("llama.block_count"), "n_head": field("llama.attention.head_count"),
          "n_kv": field("llama.attention.head_count_kv"), "head_dim": d,
          "eps": field("llama.attention.layer_norm_rms_epsilon")}
    inv_freq = 1.0 / field("llama.rope.freq_base") ** (np.arange(0, d, 2, dtype=np.float64) / d)
    if "rope_freqs.weight" in w:
        inv_freq = inv_freq / w.pop("rope_freqs.weight")
    return w, hp, inv_freq

# ---------------------------------------------------------------------- tests


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_hf_and_gguf_give_the_same_logits(made, variant):
    w_hf, hp_hf, f_hf = load_hf(made / variant / "hf")
    w_gg, hp_gg, f_gg = load_gguf(made / variant / "tiny.gguf")
    assert hp_hf == pytest.approx(hp_gg)
    assert sorted(w_hf) == sorted(w_gg)
    np.testing.assert_allclose(f_hf, f_gg, rtol=1e-6)
    hf = forward(w_hf, hp_hf, PROMPT, "halves", f_hf)
    gg = forward(w_gg, hp_gg, PROMPT, "pairs", f_gg)
    np.testing.assert_allclose(hf, gg, rtol=0, atol=1e-6)  # rope_freqs is stored as f32
    # The check has teeth: the wrong RoPE convention changes the logits.
    wrong = forward(w_gg, hp_gg, PROMPT, "halves", f_gg)
    assert np.abs(wrong - hf).max() > 1e-2


def test_variants_share_their_common_tensors(made):
    base, _, _ = load_hf(made / "base" / "hf")
    for variant in ("sharded", "tied", "qwen", "llama3"):
        other, _, _ = load_hf(made / variant / "hf")
        for name, x in other.items():
            if name in base:
                np.testing.assert_array_equal(x, base[name], err_msg=f"{variant}: {name}")
    assert "output.weight" not in load_hf(made / "tied" / "hf")[0]
    assert (made / "sharded" / "hf" / "model.safetensors.index.json").exists()


def test_gguf_metadata_and_tensor_types(made):
    r = gguf.GGUFReader(str(made / "f16" / "tiny.gguf"))
    assert r.get_field("general.architecture").contents() == "llama"
    assert r.get_field("llama.context_length").contents() == fixture.MAX_POSITIONS
    assert r.get_field("llama.embedding_length").contents() == fixture.HIDDEN
    assert r.get_field("llama.feed_forward_length").contents() == fixture.INTERMEDIATE
    assert "general.alignment" not in r.fields  # default 32
    types = {t.name: t.tensor_type for t in r.tensors}
    assert types["blk.0.attn_q.weight"] == gguf.GGMLQuantizationType.F16
    assert types["blk.0.attn_norm.weight"] == gguf.GGMLQuantizationType.F32
    r32 = gguf.GGUFReader(str(made / "base" / "tiny.gguf"))
    assert all(t.tensor_type == gguf.GGMLQuantizationType.F32 for t in r32.tensors)


def test_tokenizer_files_agree_with_gguf(made):
    tokenizers = pytest.importorskip("tokenizers")
    hf_dir = made / "base" / "hf"
    tok = tokenizers.Tokenizer.from_file(str(hf_dir / "tokenizer.json"))
    enc = tok.encode("Hello world, is there 42?")
    assert enc.tokens == ["Hello", "Ġworld", ",", "Ġ", "is", "Ġthere", "Ġ", "4", "2", "?"]
    assert tok.encode("<|im_start|>user").ids[0] == 1
    assert tok.decode(enc.ids) == "Hello world, is there 42?"

    r = gguf.GGUFReader(str(made / "base" / "tiny.gguf"))
    tokens = r.get_field("tokenizer.ggml.tokens").contents()
    assert tokens == [tok.id_to_token(i) for i in range(tok.get_vocab_size())]
    assert len(tokens) == fixture.VOCAB
    merges = json.loads((hf_dir / "tokenizer.json").read_text())["model"]["merges"]
    assert r.get_field("tokenizer.ggml.merges").contents() == merges
    types = r.get_field("tokenizer.ggml.token_type").contents()
    assert types[:3] == [3, 3, 3] and set(types[3:]) == {1}
    assert r.get_field("tokenizer.ggml.bos_token_id").contents() == 1
    assert r.get_field("tokenizer.ggml.eos_token_id").contents() == 2
    config = json.loads((hf_dir / "tokenizer_config.json").read_text())
    assert r.get_field("tokenizer.chat_template").contents() == config["chat_template"]


def test_transformers_reads_config_and_chat_template(made):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.AutoConfig.from_pretrained(str(made / "llama3" / "hf"))
    assert cfg.num_key_value_heads == fixture.N_KV_HEADS
    tok = transformers.AutoTokenizer.from_pretrained(str(made / "base" / "hf"))
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                   add_generation_prompt=True)
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
