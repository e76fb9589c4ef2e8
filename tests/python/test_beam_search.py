"""Beam search (`troupe generate --num-beams`) equals an independent Python beam
search over llama.cpp's logits that follows Hugging Face's rules
(transformers' BeamSearchScorer / BeamHypotheses, v4.38-4.47):

* log_softmax of each live beam's raw logits; candidate score = the beam's sum
  of logprobs + the token's; the best max(2, 1 + #eos ids) * num_beams
  candidates over all beams, ties to the lower (beam * vocab + token);
* walking them best first, an eos candidate ranked within the first num_beams
  finishes a hypothesis (its length counts the eos), a lower one is dropped,
  any other becomes a live beam until num_beams are live;
* at most num_beams finished hypotheses are kept, scored
  sum_logprobs / generated_len ** length_penalty; a new one enters while fewer
  are kept or when it beats the worst, which then leaves;
* done once num_beams are kept and early_stopping is true, or (false) the
  worst kept >= best candidate sum / cur_len ** length_penalty, or (never)
  the same bound with max_new_tokens when length_penalty > 0;
* at max_new_tokens the live beams are offered to the kept ones (unless done),
  and the best come out first (Python's stable sort, popped from the end).

The eos ids are llama.cpp's eos and eot. The reference logits are llama.cpp's
one-token path (n_batch = n_ubatch = 1), the prompt fed one token at a time
too: that is the path our forward pass reproduces bit for bit (see
test_conformance.py), and our beams run as rows of one batch, which our
kernels compute exactly as single rows. Both sides sum logprobs in float64
(Hugging Face sums in float32), so equal logits give equal decisions; the
comparison is exact: the same sequences, tokens and order, for every returned
sequence (num_return_sequences = num_beams).

5 chat prompts with short answers (so that eos hypotheses, early stopping and
the length penalty matter) x num_beams {2, 4} x length_penalty {0.5, 1, 2} x
early_stopping {true, false}, 24 new tokens. The running beams do not depend
on length_penalty or early_stopping, so each (prompt, num_beams) explores the
same prefixes: their logits are cached.
"""
import jinja2
import numpy as np
import pytest

from conftest import run_troupe_json_lines

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by scripts/setup.sh --with-test-deps")

PROMPTS = [
    "What is the capital of France?",
    "What is the capital of Italy?",
    "What is 2+2? Answer with a number only.",
    "Say hello.",
    "Translate 'cat' into French.",
]
NUM_BEAMS = [2, 4]
LENGTH_PENALTIES = [0.5, 1.0, 2.0]
EARLY_STOPPING = [True, False]
MAX_NEW = 24


@pytest.fixture(scope="module")
def llm(model_path):
    # One thread: a one-token decode of this small model does not gain from two, and on a busy machine a
    # second spinning thread makes it several times slower. (Each row of a product is one thread's work either way.)
    return llama_cpp.Llama(model_path=str(model_path), n_ctx=512, n_threads=1, n_batch=1, n_ubatch=1,
                           logits_all=True, verbose=False)


class PrefixLogprobs:
    """The best `keep` (token, logprob) of log_softmax(llama.cpp logits) after a token prefix, cached per prefix.
    Only a row's best `keep` candidates can rank among the best `keep` over all rows, so they suffice."""

    def __init__(self, llm, keep):
        self.llm, self.keep, self.cache = llm, keep, {}

    def prefetch(self, prefixes):
        # Lexicographic order re-evaluates the fewest tokens between prefixes.
        for p in sorted(set(prefixes) - self.cache.keys()):
            self._eval(p)

    def __call__(self, prefix):
        if prefix not in self.cache:
            self._eval(prefix)
        return self.cache[prefix]

    def _eval(self, prefix):
        llm = self.llm
        have = llm.input_ids[: llm.n_tokens].tolist()
        common = 0
        while common < min(len(have), len(prefix) - 1) and have[common] == prefix[common]:
            common += 1
        llm.n_tokens = common  # eval() drops the KV cells from here on
        llm.eval(list(prefix[common:]))
        x = np.array(llm.scores[len(prefix) - 1], dtype=np.float64)
        m = x.max()
        lp = x - (m + np.log(np.exp(x - m).sum()))
        top = np.argsort(-lp, kind="stable")[: self.keep]  # equal logprobs: the lower id first
        self.cache[prefix] = [(int(t), float(lp[t])) for t in top]


def reference_beam_search(logprobs, prompt, num_beams, length_penalty, early_stopping, max_new, eos_ids):
    """Hugging Face's beam search; returns [(tokens, score, ended_by_eos)], best first (all kept hypotheses)."""
    n_keep = max(2, 1 + len(eos_ids)) * num_beams
    beams = [((), 0.0)]  # (generated tokens, sum of logprobs)
    kept, worst = [], 1e9
    done = False

    def add(tokens, sum_lp, length, eos):
        nonlocal worst
        score = sum_lp / (length ** length_penalty)
        if len(kept) < num_beams or score > worst:
            kept.append((score, tokens, eos))
            if len(kept) > num_beams:
                order = sorted((s, i) for i, (s, _, _) in enumerate(kept))
                del kept[order[0][1]]
                worst = order[1][0]
            else:
                worst = min(score, worst)

    def hyps_done(best_sum, cur_len):
        if len(kept) < num_beams:
            return False
        if early_stopping is True:
            return True
        if early_stopping == "never" and length_penalty > 0:
            return worst >= best_sum / (max_new ** length_penalty)
        return worst >= best_sum / (cur_len ** length_penalty)

    step = 0
    while step < max_new and not done:
        logprobs.prefetch([tuple(prompt) + toks for toks, _ in beams])
        cands = []
        for row, (toks, total) in enumerate(beams):
            for token, lp in logprobs(tuple(prompt) + toks):
                cands.append((total + lp, row, token))
        cands.sort(key=lambda c: (-c[0], c[1], c[2]))  # (row, token) order = (row * vocab + token) order
        cands = cands[:n_keep]
        cur_len = step + 1
        nxt = []
        for rank, (score, row, token) in enumerate(cands):
            if token in eos_ids:
                if rank < num_beams:
                    add(beams[row][0], score, cur_len, True)
            else:
                nxt.append((beams[row][0] + (token,), score))
            if len(nxt) == num_beams:
                break
        assert len(nxt) == num_beams
        done = hyps_done(cands[0][0], cur_len)
        beams = nxt
        step += 1
    if not done:
        for toks, total in beams:
            add(toks, total, step, False)
    ordered = sorted(kept, key=lambda h: h[0])
    return [(list(toks), score, eos) for score, toks, eos in reversed(ordered)]


def chat_tokens(llm, template, prompt):
    """The chat prompt rendered from the GGUF's own template (jinja2), tokenized by llama.cpp."""
    text = template.render(messages=[{"role": "user", "content": prompt}], add_generation_prompt=True)
    return llm.tokenize(text.encode(), add_bos=False, special=True)


@pytest.fixture(scope="module")
def references(llm, model_path):
    """(prompt, num_beams, length_penalty, early_stopping) -> (prompt tokens, reference sequences)."""
    from gguf import GGUFReader

    field = GGUFReader(str(model_path)).fields["tokenizer.chat_template"]
    template = jinja2.Environment().from_string(bytes(field.parts[field.data[0]]).decode())
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    eos_ids = {t for t in (llama_cpp.llama_vocab_eos(vocab), llama_cpp.llama_vocab_eot(vocab)) if t >= 0}
    out = {}
    for prompt in PROMPTS:
        tokens = chat_tokens(llm, template, prompt)
        for k in NUM_BEAMS:
            logprobs = PrefixLogprobs(llm, max(2, 1 + len(eos_ids)) * k)
            for lp in LENGTH_PENALTIES:
                for es in EARLY_STOPPING:
                    out[prompt, k, lp, es] = tokens, reference_beam_search(logprobs, tokens, k, lp, es, MAX_NEW,
                                                                           eos_ids)
    return out


def test_settings_change_the_reference_answers(references):
    """The comparison below is only worth something if length_penalty and early_stopping change answers
    (eos hypotheses compete with running beams) on these prompts."""
    by_lp = by_es = 0
    for prompt in PROMPTS:
        for k in NUM_BEAMS:
            for es in EARLY_STOPPING:
                by_lp += len({str(references[prompt, k, lp, es][1][:k]) for lp in LENGTH_PENALTIES}) > 1
            for lp in LENGTH_PENALTIES:
                by_es += len({str(references[prompt, k, lp, es][1][:k]) for es in EARLY_STOPPING}) > 1
    print(f"length_penalty changes the answers in {by_lp} (prompt, num_beams, early_stopping) groups, "
          f"early_stopping in {by_es} (prompt, num_beams, length_penalty) groups")
    assert by_lp >= 3 and by_es >= 2


@pytest.mark.parametrize("prompt", PROMPTS)
def test_beam_search_matches_reference(troupe_bin, references, prompt):
    checked = eos_first = 0
    answers = set()
    for k in NUM_BEAMS:
        for lp in LENGTH_PENALTIES:
            for es in EARLY_STOPPING:
                prompt_tokens, ref = references[prompt, k, lp, es]
                lines = run_troupe_json_lines("generate", "--chat", "--prompt", prompt, "--max-tokens", MAX_NEW,
                                              "--num-beams", k, "--length-penalty", lp, "--early-stopping",
                                              "true" if es else "false", "--num-return-sequences", k, "--json",
                                              "--threads", 1)
                seqs = [l for l in lines if "sequence" in l]
                done = lines[-1]
                assert done["done"] is True and done["prompt_tokens"] == len(prompt_tokens)
                label = f"num_beams={k} length_penalty={lp} early_stopping={es}"
                assert [s["sequence"] for s in seqs] == list(range(k)), label
                ours = [(s["tokens"], s["finish_reason"] == "eos") for s in seqs]
                assert ours == [(toks, eos) for toks, _, eos in ref[:k]], f"{label}\nours {ours}\nref  {ref[:k]}"
                for s, (_, score, _) in zip(seqs, ref):
                    assert s["score"] == pytest.approx(score, rel=1e-9, abs=1e-12), label
                checked += 1
                eos_first += seqs[0]["finish_reason"] == "eos"
                answers.add(tuple(tuple(t) for t, _ in ours))
    print(f"{prompt!r}: {checked} settings equal to the reference; best sequence ended by eos in {eos_first}; "
          f"{len(answers)} distinct answers")
