// FindEndOfTurn: the token that ends a chat turn when a model file does not
// name one — the first of <|eot_id|> (Llama 3), <|im_end|> (ChatML),
// <|end|> (Phi-3) and <end_of_turn> (Gemma) that the vocabulary holds and
// that is not the EOS token, as llama.cpp also recognizes them by their text.
// -1 when there is none. Used by the GGUF and Hugging Face readers.
#pragma once

#include <cstdint>

#include "pipeline/tokenizer_spec.h"

namespace troupe {

int32_t FindEndOfTurn(const TokenizerSpec& spec);

}  // namespace troupe
