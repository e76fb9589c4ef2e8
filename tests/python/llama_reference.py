"""An independent reference forward pass of a Llama-family GGUF model in
float64 numpy: the weights dequantized by the `gguf` package's own code
(not ours), the block written from the Llama definition (RMSNorm, RoPE on
adjacent pairs for GGUF's permuted q/k, grouped-query causal attention,
SwiGLU, tied or separate LM head). Slow and exact: what a float backend
should compute (test_torch_backend.py).

    ref = LlamaReference(path); logprobs = ref.log_softmax(tokens)  # [n, vocab]
    ref.greedy(prompt_ids, 32, eos=2)  # greedy tokens, one position a step over a key/value cache
"""
import numpy as np


def _field(reader, key):
    f = reader.fields[key]
    v = f.parts[f.data[0]]
    return v.tobytes().decode() if v.dtype == np.uint8 else v[0].item()


class LlamaReference:
    def __init__(self, path):
        from gguf import GGUFReader
        from gguf.quants import dequantize

        r = GGUFReader(str(path))
        assert _field(r, "general.architecture") == "llama"
        self.n_head = int(_field(r, "llama.attention.head_count"))
        self.n_kv = int(_field(r, "llama.attention.head_count_kv"))
        self.eps = float(_field(r, "llama.attention.layer_norm_rms_epsilon"))
        theta = float(_field(r, "llama.rope.freq_base"))
        n_layers = int(_field(r, "llama.block_count"))
        self.w = {}
        for t in r.tensors:
            a = dequantize(t.data, t.tensor_type).astype(np.float64)
            self.w[t.name] = a.reshape([int(d) for d in reversed(t.shape)])
        self.hd = self.w["blk.0.attn_q.weight"].shape[0] // self.n_head
        self.inv_freq = theta ** (-np.arange(0, self.hd, 2, dtype=np.float64) / self.hd)
        self.layers = range(n_layers)
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])

    def _norm(self, x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * w

    def _rope(self, x, pos):  # x [n, heads, hd], adjacent pairs
        ang = pos[:, None] * self.inv_freq[None, :]  # [n, hd/2]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
        return out

    def hidden(self, tokens, cache=None):
        """The final hidden states [n, hidden] (before the output norm). With `cache` (a dict, empty at first)
        the tokens continue the positions it holds, and it keeps every layer's keys and values for the next call:
        the same math as the whole sequence at once, without computing earlier positions again."""
        n = len(tokens)
        start = cache.get("n", 0) if cache is not None else 0
        x = self.w["token_embd.weight"][np.array(tokens)]
        pos = np.arange(start, start + n, dtype=np.float64)
        group = self.n_head // self.n_kv
        mask = np.triu(np.full((n, start + n), -np.inf), 1 + start)  # query start+i sees keys 0..start+i
        for i in self.layers:
            p = f"blk.{i}."
            h = self._norm(x, self.w[p + "attn_norm.weight"])
            q = self._rope((h @ self.w[p + "attn_q.weight"].T).reshape(n, self.n_head, self.hd), pos)
            k = self._rope((h @ self.w[p + "attn_k.weight"].T).reshape(n, self.n_kv, self.hd), pos)
            v = (h @ self.w[p + "attn_v.weight"].T).reshape(n, self.n_kv, self.hd)
            if cache is not None:
                if i in cache:
                    k, v = np.concatenate([cache[i][0], k]), np.concatenate([cache[i][1], v])
                cache[i] = (k, v)
            k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
            s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(self.hd) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = np.einsum("hqk,khd->qhd", s, v).reshape(n, -1)
            x = x + a @ self.w[p + "attn_output.weight"].T
            h = self._norm(x, self.w[p + "ffn_norm.weight"])
            g, u = h @ self.w[p + "ffn_gate.weight"].T, h @ self.w[p + "ffn_up.weight"].T
            x = x + (g / (1 + np.exp(-g)) * u) @ self.w[p + "ffn_down.weight"].T
        if cache is not None:
            cache["n"] = start + n
        return x

    def greedy(self, prompt_ids, n, eos):
        """Greedy tokens after prompt_ids, up to n, ending before eos (as troupe's stream does)."""
        cache, out = {}, []
        h = self.hidden(list(prompt_ids), cache)[-1:]
        for _ in range(n):
            token = int((self._norm(h, self.w["output_norm.weight"]) @ self.out.T)[0].argmax())
            if token == eos:
                break
            out.append(token)
            h = self.hidden([token], cache)
        return out

    def log_softmax(self, tokens):
        logits = self._norm(self.hidden(tokens), self.w["output_norm.weight"]) @ self.out.T
        m = logits.max(-1, keepdims=True)
        return logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))
