// Contrastive decoding (Li et al. 2022, "Contrastive Decoding: Open-ended
// Text Generation as Optimization", arXiv 2210.15097; the form x-transformers'
// contrastive_decode_fn uses): one row of an expert model's logits and one
// row of a smaller amateur model's logits over the same vocabulary become one
// row of contrastive logits, which then go through the ordinary sampling
// chain (greedy argmax, or top-k/top-p/.../temperature and a draw).
//
//   plausible(i) = p_e(i) >= alpha * max_j p_e(j)
//                  (i.e. l_e(i) >= max_j l_e(j) + log(alpha); alpha = 0 keeps
//                  every token the expert does not rule out)
//   score(i)     = (1 + beta) * log p_e(i) - beta * log p_a(i)   if plausible
//                = -inf                                          otherwise
//
// The row written out is the score shifted by a per-row constant so that it
// stays on the expert's own logit scale:
//
//   out(i) = l_e(i) + beta * (log p_e(i) - log p_a(i))
//          = score(i) + logsumexp(l_e)
//
// A per-row constant changes nothing the chain does after it (argmax,
// softmax, temperature, top-k/p, min-p, top-a, logit bias are all
// shift-invariant); it keeps the one sign-sensitive step, the repetition
// penalty, acting on values that equal the expert's raw logits wherever the
// amateur agrees with the expert. x-transformers writes (1+beta)*l_e -
// beta*l_a, another per-row shift of the same score, and masks with -FLT_MAX
// where we write -inf.
//
// Where it sits in the sampling chain (the same in `troupe generate`, the
// cluster's sampler and HTTP, since all go through Generation::Next):
//
//   expert logits ─┐
//                  ├─▶ ContrastiveLogits ─▶ logit bias ─▶ repetition penalty
//   amateur logits ┘     ─▶ presence/frequency ─▶ no-repeat n-grams ─▶ eos mask
//                        ─▶ greedy argmax | top-k ... temperature ─▶ draw
//
// i.e. first, on the raw logits of both models, as x-transformers applies it
// before its filters and temperature (x-transformers also switches its
// filters off; ours stay as the params set them, all off by default). One
// exception, made by Generation: while step < min_tokens the eos ids are
// masked in the expert row before this step; otherwise a position where eos
// alone is plausible would leave the Sampler's eos mask nothing to keep, and
// eos would end the answer early.
// Logprobs (pipeline/sampling/logprobs.h) still report the expert's own raw
// distribution, not the contrastive scores.
//
// Amateur == expert (bitwise equal rows): log p_e - log p_a is exactly 0 for
// every finite token, so out(i) == l_e(i) bit for bit on the plausible set.
// The expert's argmax is always plausible (l_max >= l_max + log(alpha) since
// alpha <= 1), and every other token either keeps its own logit or becomes
// -inf, so the argmax (ties to the lowest id) is unchanged for any alpha and
// beta: greedy contrastive decoding with the expert as its own amateur is
// plain greedy decoding (as long as no penalty or bias moves a token outside
// the plausible set above the argmax). Sampled, it is plain sampling
// restricted to the plausible set, i.e. min-p = alpha without min-p's slack.
//
// Numbers: log-softmax and the score are computed in double, the result
// rounded to float. NaN in either row counts as -inf (impossible), +inf as
// the largest float (as the Sampler treats them). A plausible token the
// amateur rules out (amateur logit -inf) would score +inf; it gets the
// largest float instead, so the row stays comparable and safe to subtract
// from. A plausible token's result is always finite (clamped to the float
// range). If the expert rules out every token (all -inf/NaN), every output is
// -inf. If the amateur rules out every token, log p_a is taken as -inf for
// all and every plausible token gets the largest float (beta > 0) or its own
// logit (beta = 0).
//
// Pure function; thread-safe; never fails for valid arguments.
#pragma once

#include <cstdint>

namespace troupe {

// The two knobs (x-transformers' defaults). SamplingParams carries them as
// contrastive_alpha / contrastive_beta and validates them there.
struct ContrastiveParams {
  float alpha = 0.1f;  // plausibility cut, in [0, 1]
  float beta = 0.5f;   // amateur weight, finite and >= 0 (0 = only the alpha cut)
};

// Writes the contrastive logits of `expert` and `amateur` (each [vocab]) to
// `out` ([vocab]; may alias `expert` or `amateur`). Does nothing for vocab < 1.
// An alpha outside [0, 1] or a beta that is negative or not finite gives an
// unspecified row (never a crash); SamplingParams::Validate refuses them.
void ContrastiveLogits(const float* expert, const float* amateur, int64_t vocab, const ContrastiveParams& params,
                       float* out);

}  // namespace troupe
