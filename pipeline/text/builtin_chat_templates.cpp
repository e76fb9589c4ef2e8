#include "pipeline/text/builtin_chat_templates.h"

namespace troupe {
namespace {

// ChatML as teknium/OpenHermes-2.5-Mistral-7B writes it (no default system message).
const char kChatMl[] =
    R"({% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})";

// google/gemma-3-*-it (tokenizer_config.json "chat_template"), verbatim; the
// same text as tests/pipeline/text/testdata/chat_templates/gemma-3-it.jinja.
const char kGemma3[] =
    R"({{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
)";

// meta-llama/Meta-Llama-3-8B-Instruct, verbatim; the same text as
// tests/pipeline/text/testdata/chat_templates/llama-3-8b-instruct.jinja.
const char kLlama3[] =
    R"({% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>

'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>

' }}{% endif %})";

}  // namespace

std::optional<BuiltinChatTemplate> FindBuiltinChatTemplate(const Tokenizer& tokenizer) {
  if (tokenizer.TokenId("<|im_start|>") && tokenizer.TokenId("<|im_end|>"))
    return BuiltinChatTemplate{"ChatML", kChatMl};
  if (tokenizer.TokenId("<start_of_turn>") && tokenizer.TokenId("<end_of_turn>")) {
    return BuiltinChatTemplate{"Gemma 3", kGemma3};
  }
  if (tokenizer.TokenId("<|start_header_id|>") && tokenizer.TokenId("<|eot_id|>")) {
    return BuiltinChatTemplate{"Llama 3", kLlama3};
  }
  return std::nullopt;
}

}  // namespace troupe
