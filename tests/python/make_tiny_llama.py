#!/usr/bin/env python3
"""Writes one tiny random Llama model as a Hugging Face folder AND a GGUF file.

    python make_tiny_llama.py OUT_DIR [--seed S] [--tied] [--qkv-bias]
                                      [--llama3-rope] [--shards N] [--f16]

OUT_DIR/hf/       config.json, model.safetensors (or N shards plus
                  model.safetensors.index.json), tokenizer.json,
                  tokenizer_config.json, generation_config.json
OUT_DIR/tiny.gguf the same weights and tokenizer, arch "llama", with the q/k
                  rows permuted exactly as llama.cpp's convert_hf_to_gguf.py
                  permutes them.

Both files hold the same numbers, so an engine that reads HF weights with
half-split RoPE and GGUF weights with adjacent-pair RoPE must produce the same
logits from either: the pair pins the RoPE convention of both paths.

Variants:
  --tied         no lm_head.weight / output.weight (logits = h . embeddingT)
  --qkv-bias     Qwen2ForCausalLM with q/k/v biases (the GGUF stays arch
                 "llama" with attn_{q,k,v}.bias; q/k biases permuted like rows)
  --llama3-rope  Llama-3 rope_scaling in config.json; the GGUF carries the
                 per-frequency factors as rope_freqs.weight (as llama.cpp does)
  --shards N     split the safetensors into N files plus an index
  --f16          weights rounded to float16: safetensors in F16, GGUF matrices
                 in F16 (norms/biases F32, exactly the same values)

Every tensor is drawn from its own RNG stream (seed, crc32(HF name)), so the
variants share every tensor they have in common.
"""

import argparse
import json
import math
import pathlib
import sys
import zlib

import numpy as np

# ---------------------------------------------------------------- model shape

HIDDEN = 64
N_LAYERS = 3
N_HEADS = 4
N_KV_HEADS = 2
HEAD_DIM = 16
INTERMEDIATE = 128
MAX_POSITIONS = 256
RMS_EPS = 1e-5
ROPE_THETA = 10000.0
# Llama-3 scaling chosen so that, with head_dim 16 and theta 1e4, the eight
# frequencies fall in all three bands (kept, smoothed, divided by factor).
LLAMA3_SCALING = {
    "rope_type": "llama3",
    "factor": 4.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 64,
}

# ------------------------------------------------------------------ tokenizer

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 0, 1, 2
BOS_ID, EOS_ID, PAD_ID = 1, 2, 2
# Merges in rank order, in GPT-2 byte->unicode form (Ġ = space). Each merge's
# halves are byte tokens or results of earlier merges.
MERGES = [
    ("Ġ", "t"), ("h", "e"), ("i", "n"), ("e", "r"), ("Ġ", "a"), ("o", "n"),
    ("r", "e"), ("Ġt", "he"), ("a", "t"), ("e", "n"), ("o", "u"), ("Ġ", "s"),
    ("Ġ", "w"), ("l", "l"), ("i", "s"), ("o", "r"), ("Ġ", "h"), ("e", "ll"),
    ("H", "ell"), ("Hell", "o"), ("l", "d"), ("Ġw", "or"), ("Ġwor", "ld"),
    ("Ġthe", "re"), ("Ġ", "i"), ("Ġi", "s"),
]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
PRE_TOKENIZER_DIGITS = r"\p{N}"


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character table."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
                 list(range(ord("®"), ord("ÿ") + 1)))
    table = {}
    extra = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def build_vocab():
    """Returns (tokens, token_types) where id = list index."""
    byte_chars = bytes_to_unicode()
    tokens = list(SPECIAL_TOKENS) + [byte_chars[b] for b in range(256)]
    known = set(tokens)
    for left, right in MERGES:
        assert left in known and right in known, (left, right)
        merged = left + right
        assert merged not in known, merged
        tokens.append(merged)
        known.add(merged)
    n_special = len(SPECIAL_TOKENS)
    types = [3] * n_special + [1] * (len(tokens) - n_special)  # control, then normal
    return tokens, types


VOCAB = len(SPECIAL_TOKENS) + 256 + len(MERGES)

# -------------------------------------------------------------------- weights


def hf_tensor_shapes(args):
    """HF name -> torch-order shape, in checkpoint order."""
    q_rows, kv_rows = N_HEADS * HEAD_DIM, N_KV_HEADS * HEAD_DIM
    shapes = {"model.embed_tokens.weight": (VOCAB, HIDDEN)}
    for i in range(N_LAYERS):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = (HIDDEN,)
        shapes[p + "self_attn.q_proj.weight"] = (q_rows, HIDDEN)
        shapes[p + "self_attn.k_proj.weight"] = (kv_rows, HIDDEN)
        shapes[p + "self_attn.v_proj.weight"] = (kv_rows, HIDDEN)
        if args.qkv_bias:
            shapes[p + "self_attn.q_proj.bias"] = (q_rows,)
            shapes[p + "self_attn.k_proj.bias"] = (kv_rows,)
            shapes[p + "self_attn.v_proj.bias"] = (kv_rows,)
        shapes[p + "self_attn.o_proj.weight"] = (HIDDEN, q_rows)
        shapes[p + "post_attention_layernorm.weight"] = (HIDDEN,)
        shapes[p + "mlp.gate_proj.weight"] = (INTERMEDIATE, HIDDEN)
        shapes[p + "mlp.up_proj.weight"] = (INTERMEDIATE, HIDDEN)
        shapes[p + "mlp.down_proj.weight"] = (HIDDEN, INTERMEDIATE)
    shapes["model.norm.weight"] = (HIDDEN,)
    if not args.tied:
        shapes["lm_head.weight"] = (VOCAB, HIDDEN)
    return shapes


def make_weights(args):
    """HF name -> float32 array. Norms near 1, biases small, matrices ~1/sqrt(in)."""
    weights = {}
    for name, shape in hf_tensor_shapes(args).items():
        rng = np.random.default_rng([args.seed, zlib.crc32(name.encode())])
        x = rng.standard_normal(shape, dtype=np.float32)
        if name.endswith("norm.weight"):
            x = 1.0 + 0.1 * x
        elif name.endswith(".bias"):
            x = 0.1 * x
        elif name != "model.embed_tokens.weight":
            x = x / np.float32(math.sqrt(shape[1]))
        x = x.astype(np.float32)
        if args.f16:
            x = x.astype(np.float16).astype(np.float32)  # same values in both files
        weights[name] = x
    return weights


def permute_for_gguf(w, n_head):
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute: per head, rows
    [0..d/2) and [d/2..d) are interleaved so that RoPE rotates adjacent pairs."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2)
            .reshape(w.shape))


def llama3_rope_factors():
    """Per-frequency divisors, as llama.cpp writes them into rope_freqs.weight
    (original context length taken from rope_scaling, as transformers does)."""
    s = LLAMA3_SCALING
    freqs = 1.0 / (ROPE_THETA ** (np.arange(0, HEAD_DIM, 2, dtype=np.float32) / HEAD_DIM))
    low_wavelen = s["original_max_position_embeddings"] / s["low_freq_factor"]
    high_wavelen = s["original_max_position_embeddings"] / s["high_freq_factor"]
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(s["factor"])
        else:
            smooth = ((s["original_max_position_embeddings"] / wavelen - s["low_freq_factor"]) /
                      (s["high_freq_factor"] - s["low_freq_factor"]))
            factors.append(1 / ((1 - smooth) / s["factor"] + smooth))
    return np.array(factors, dtype=np.float32)

# --------------------------------------------------------------- HF folder


def write_hf(out, args, weights, tokens):
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    if args.qkv_bias:
        arch, model_type = "Qwen2ForCausalLM", "qwen2"
    else:
        arch, model_type = "LlamaForCausalLM", "llama"
    config = {
        "architectures": [arch],
        "model_type": model_type,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": N_LAYERS,
        "num_attention_heads": N_HEADS,
        "num_key_value_heads": N_KV_HEADS,
        "head_dim": HEAD_DIM,
        "vocab_size": VOCAB,
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": RMS_EPS,
        "rope_theta": ROPE_THETA,
        "rope_scaling": dict(LLAMA3_SCALING) if args.llama3_rope else None,
        "tie_word_embeddings": bool(args.tied),
        "attention_bias": False,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "torch_dtype": "float16" if args.f16 else "float32",
    }
    if args.qkv_bias:  # as Qwen2 checkpoints have it: a window that is not used
        del config["head_dim"], config["attention_bias"]
        config.update({"use_sliding_window": False, "sliding_window": 4096,
                       "max_window_layers": N_LAYERS})
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": BOS_ID, "eos_token_id": EOS_ID}, indent=2) + "\n")

    dtype = np.float16 if args.f16 else np.float32
    arrays = {k: np.ascontiguousarray(v.astype(dtype)) for k, v in weights.items()}
    names = list(arrays)
    if args.shards <= 1:
        save_file(arrays, str(out / "model.safetensors"), metadata={"format": "pt"})
    else:
        if args.shards > len(names):
            raise SystemExit(f"--shards {args.shards}: only {len(names)} tensors to split")
        weight_map, total = {}, 0
        for s, idx in enumerate(np.array_split(np.arange(len(names)), args.shards)):
            part = [names[i] for i in idx]
            fname = f"model-{s + 1:05d}-of-{args.shards:05d}.safetensors"
            save_file({k: arrays[k] for k in part}, str(out / fname), metadata={"format": "pt"})
            for k in part:
                weight_map[k] = fname
                total += arrays[k].nbytes
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")

    write_hf_tokenizer(out, tokens)


def write_hf_tokenizer(out, tokens):
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(SPECIAL_TOKENS)]
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": PRE_TOKENIZER_DIGITS},
                 "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                 "use_regex": True},
            ],
        },
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {t: i for i, t in enumerate(tokens)},
            "merges": [f"{a} {b}" for a, b in MERGES],
        },
    }
    (out / "tokenizer.json").write_text(json.dumps(tokenizer, indent=2, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
    config = {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"}
                                 for a in added},
        "bos_token": SPECIAL_TOKENS[BOS_ID],
        "eos_token": SPECIAL_TOKENS[EOS_ID],
        "pad_token": SPECIAL_TOKENS[PAD_ID],
        "unk_token": SPECIAL_TOKENS[0],
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": MAX_POSITIONS,
        "tokenizer_class": "GPT2Tokenizer",
        "vocab_size": VOCAB,
    }
    (out / "tokenizer_config.json").write_text(
        json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

# ------------------------------------------------------------------- GGUF


HF_TO_GGUF = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def gguf_name(hf_name):
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    if hf_name == "lm_head.weight":
        return "output.weight"
    _, _, layer, rest = hf_name.split(".", 3)  # model.layers.N.rest
    return f"blk.{layer}.{HF_TO_GGUF[rest]}"


def write_gguf(path, args, weights, tokens, token_types):
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama")
    w.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16 if args.f16 else gguf.LlamaFileType.ALL_F32))
    w.add_vocab_size(VOCAB)
    w.add_context_length(MAX_POSITIONS)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(N_LAYERS)
    w.add_feed_forward_length(INTERMEDIATE)
    w.add_head_count(N_HEADS)
    w.add_head_count_kv(N_KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_layer_norm_rms_eps(RMS_EPS)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_rope_dimension_count(HEAD_DIM)

    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(token_types)
    w.add_token_merges([f"{a} {b}" for a, b in MERGES])
    w.add_bos_token_id(BOS_ID)
    w.add_eos_token_id(EOS_ID)
    w.add_pad_token_id(PAD_ID)
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    if args.llama3_rope:
        w.add_tensor("rope_freqs.weight", llama3_rope_factors())
    for hf_name, x in weights.items():
        if hf_name.endswith(("q_proj.weight", "q_proj.bias")):
            x = permute_for_gguf(x, N_HEADS)
        elif hf_name.endswith(("k_proj.weight", "k_proj.bias")):
            x = permute_for_gguf(x, N_KV_HEADS)
        if args.f16 and x.ndim == 2:
            x = x.astype(np.float16)  # exact: values were rounded to f16 already
        w.add_tensor(gguf_name(hf_name), np.ascontiguousarray(x))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

# --------------------------------------------------------------------- CLI


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tied", action="store_true", help="tie lm_head to the embeddings")
    parser.add_argument("--qkv-bias", action="store_true", help="Qwen2-style q/k/v biases")
    parser.add_argument("--llama3-rope", action="store_true", help="Llama-3 rope_scaling")
    parser.add_argument("--shards", type=int, default=1, help="number of safetensors files")
    parser.add_argument("--f16", action="store_true", help="store weights as float16")
    args = parser.parse_args(argv)
    if args.shards < 1:
        parser.error("--shards must be at least 1")

    tokens, token_types = build_vocab()
    weights = make_weights(args)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_hf(args.out_dir / "hf", args, weights, tokens)
    write_gguf(args.out_dir / "tiny.gguf", args, weights, tokens, token_types)
    return 0


if __name__ == "__main__":
    sys.exit(main())
