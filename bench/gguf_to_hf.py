"""A Hugging Face LlamaForCausalLM holding the weights of a Llama-family GGUF
file, dequantized (gguf's own numpy dequantizers) and with llama.cpp's
q/k row permutation undone, so that `transformers` runs the very model
Troupe runs. Used by bench/bench_torch.py for the side-by-side GPU figures.
"""
import numpy as np


def _field(reader, key):
    f = reader.fields[key]
    v = f.parts[f.data[0]]
    return v.tobytes().decode() if v.dtype == np.uint8 else v[0].item()


def _unpermute(w, n_head):
    """Inverse of llama.cpp's convert permute (rows grouped per head in pairs)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load_llama_from_gguf(path, dtype, device):
    import torch
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from transformers import LlamaConfig, LlamaForCausalLM

    r = GGUFReader(str(path))
    arch = _field(r, "general.architecture")
    assert arch == "llama", f"{path}: architecture {arch}, not llama"
    n_head = int(_field(r, "llama.attention.head_count"))
    n_kv = int(_field(r, "llama.attention.head_count_kv"))
    tensors = {t.name: t for t in r.tensors}
    vocab = len(r.fields["tokenizer.ggml.tokens"].data)
    hidden = int(_field(r, "llama.embedding_length"))
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=hidden,
        intermediate_size=int(_field(r, "llama.feed_forward_length")),
        num_hidden_layers=int(_field(r, "llama.block_count")), num_attention_heads=n_head,
        num_key_value_heads=n_kv, max_position_embeddings=int(_field(r, "llama.context_length")),
        rms_norm_eps=float(_field(r, "llama.attention.layer_norm_rms_epsilon")),
        rope_theta=float(_field(r, "llama.rope.freq_base")),
        tie_word_embeddings="output.weight" not in tensors, attention_bias=False, mlp_bias=False,
        bos_token_id=1, eos_token_id=2, pad_token_id=2, torch_dtype=dtype)

    def get(name):
        t = tensors[name]
        a = dequantize(t.data, t.tensor_type).astype(np.float32)
        shape = [int(d) for d in reversed(t.shape)]
        return a.reshape(shape)

    sd = {"model.embed_tokens.weight": get("token_embd.weight"), "model.norm.weight": get("output_norm.weight")}
    if "output.weight" in tensors:
        sd["lm_head.weight"] = get("output.weight")
    for i in range(config.num_hidden_layers):
        p, q = f"blk.{i}.", f"model.layers.{i}."
        sd[q + "self_attn.q_proj.weight"] = _unpermute(get(p + "attn_q.weight"), n_head)
        sd[q + "self_attn.k_proj.weight"] = _unpermute(get(p + "attn_k.weight"), n_kv)
        sd[q + "self_attn.v_proj.weight"] = get(p + "attn_v.weight")
        sd[q + "self_attn.o_proj.weight"] = get(p + "attn_output.weight")
        sd[q + "mlp.gate_proj.weight"] = get(p + "ffn_gate.weight")
        sd[q + "mlp.up_proj.weight"] = get(p + "ffn_up.weight")
        sd[q + "mlp.down_proj.weight"] = get(p + "ffn_down.weight")
        sd[q + "input_layernorm.weight"] = get(p + "attn_norm.weight")
        sd[q + "post_attention_layernorm.weight"] = get(p + "ffn_norm.weight")
    model = LlamaForCausalLM(config)
    missing, unexpected = model.load_state_dict(
        {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    if config.tie_word_embeddings:
        model.tie_weights()
    return model.to(device=device, dtype=dtype).eval()
