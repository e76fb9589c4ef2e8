// Shared output helpers of the command line: the token stream printer (plain
// or --json, the fixed output contract of `generate` and `submit`), peak RSS.
// No libtorch: both binaries use them (app/engine_commands.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/model/engine.h"  // GenerateStats, TokenEvent: plain structs

namespace troupe::app {

// Peak resident set size of this process in MiB.
double PeakRssMb();

class TokenPrinter {
 public:
  explicit TokenPrinter(bool json) : json_(json) {}
  void Token(const TokenEvent& ev);
  // The summary line; `extra` keys follow the documented ones, in order.
  void Done(const GenerateStats& stats, const std::vector<std::pair<std::string, double>>& extra = {});
  // A cluster job's id, added to the --json summary line as "job_id".
  void SetJobId(uint64_t job_id) { job_id_ = job_id; }

 private:
  bool json_;
  uint64_t job_id_ = 0;
};

// Beam search's answer (`generate --num-beams N`): with --json one line per
// returned sequence, best first, {"sequence": I, "tokens": [...], "text":
// "...", "score": S, "finish_reason": "eos" | "length"} (tokens without the
// eos token; score = sum of logprobs / generated length ^ length_penalty);
// plain: each sequence's text, separated by a blank line.
// texts[i] is sequences[i]'s text (DecodeAnswer, or the cluster's).
void PrintBeamSequences(bool json, const std::vector<BeamHypothesis>& sequences, const std::vector<std::string>& texts);

// An answer's text as a stream gives it: whole characters, U+FFFD for bytes
// that never form one.
std::string DecodeAnswer(const Tokenizer& tokenizer, const std::vector<int32_t>& tokens);

}  // namespace troupe::app
