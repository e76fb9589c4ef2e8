"""Conversations for the chat template reference test (test_chat_templates.py):
system present and absent, multi-turn, Unicode (emoji, CJK, combining marks),
empty content, content that looks like Jinja, whitespace and newlines at both
ends, and shapes some templates refuse (roles that do not alternate, no
messages, a leading assistant turn)."""

_JINJA_LOOKING = "{{ x }} and {% if y %}z{% endif %} and {# c #} and {{- raise_exception('no') }}"

BASE = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}],
    [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."},
     {"role": "user", "content": "And 3+3?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "One"},
     {"role": "assistant", "content": "Two"}, {"role": "user", "content": "Three"},
     {"role": "assistant", "content": "Four"}, {"role": "user", "content": "Five"}],
    [{"role": "user", "content": "Emoji 😀👩\u200d💻🇫🇷 and CJK 你好世界, 日本語, 한국어"}],
    [{"role": "system", "content": "Réponds en français, s'il te plaît."},
     {"role": "user", "content": "Ça va ? e\u0301 naïve — “quotes” ‘single’"}],
    [{"role": "user", "content": ""}],
    [{"role": "system", "content": ""}, {"role": "user", "content": "empty system"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}, {"role": "user", "content": "again"}],
    [{"role": "user", "content": _JINJA_LOOKING}],
    [{"role": "system", "content": "{% for m in messages %}{{ m }}{% endfor %}"},
     {"role": "user", "content": "{{ bos_token }}{{ eos_token }}"}],
    [{"role": "user", "content": "  leading and trailing spaces  "}],
    [{"role": "user", "content": "\n\nnewlines around\n\n"}],
    [{"role": "system", "content": "\t tabbed system \t"}, {"role": "user", "content": " \n x \n "},
     {"role": "assistant", "content": "\n answer with space \n"}, {"role": "user", "content": "\r\nCRLF\r\n"}],
    [{"role": "user", "content": "\u00a0non-breaking\u3000ideographic space\u2003"}],
    [{"role": "user", "content": "line one\nline two\n\nline four"}],
    [{"role": "user", "content": "quotes ' \" \\ backslash \\n not a newline"}],
    [{"role": "user", "content": "<|im_start|>user\nfake turn<|im_end|> <start_of_turn> <|eot_id|> [INST] </s>"}],
    [{"role": "user", "content": "A long message. " * 40}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}],
    [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": "A"}],
    [{"role": "user", "content": "</think> tags <think>inside</think> after"},
     {"role": "assistant", "content": "<think>\nreasoning here\n</think>\n\nThe answer."},
     {"role": "user", "content": "next"}],
    [{"role": "user", "content": "tab\tseparated\tvalues"}],
    [{"role": "user", "content": "😀"}, {"role": "assistant", "content": "🙂"}, {"role": "user", "content": "🎉"}],
    [{"role": "system", "content": "multi\nline\nsystem"}, {"role": "user", "content": "q"},
     {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}],
    # Shapes some templates refuse (raise_exception) or render oddly.
    [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}],
    [{"role": "assistant", "content": "I speak first."}],
    [{"role": "system", "content": "only a system message"}],
    [],
    [{"role": "user", "content": "x"}, {"role": "system", "content": "late system"}],
    [{"role": "tool", "content": "tool output"}],
    [{"role": "user", "content": "control \x01\x1f chars \x7f"}],
]

# Each conversation with and without the generation prompt.
CASES = [{"messages": m, "add_generation_prompt": g} for m in BASE for g in (True, False)]
