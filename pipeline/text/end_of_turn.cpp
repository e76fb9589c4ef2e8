#include "pipeline/text/end_of_turn.h"

#include <string_view>

namespace troupe {

int32_t FindEndOfTurn(const TokenizerSpec& spec) {
  for (std::string_view text : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>"}) {
    for (size_t id = 0; id < spec.tokens.size(); ++id) {
      if (spec.tokens[id] == text && static_cast<int32_t>(id) != spec.eos_id) return static_cast<int32_t>(id);
    }
  }
  return -1;
}

}  // namespace troupe
