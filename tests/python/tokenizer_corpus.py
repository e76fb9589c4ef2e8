"""A deterministic corpus of tricky strings for tokenizer cross-checks.

`build_corpus()` returns the same list (well over 500 strings) on every run:
fixed samples per category, then seeded random mixtures of them. Categories:
English prose, code (Python, C++, JSON, shell), digit runs, whitespace runs,
emoji (ZWJ sequences, flags, skin tones, keycaps), CJK, accents and
combining marks, other scripts (Arabic, Hebrew, Cyrillic, Greek, Devanagari,
Thai), special-token text embedded in prose (ChatML, Gemma, Llama 2),
contractions, punctuation runs, odd Unicode (zero-width, non-breaking and
other Unicode spaces) and SentencePiece traps (long space, tab and newline
runs, leading and trailing spaces, a literal U+2581 "▁").
"""
import random

PROSE = [
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times, it was the age of wisdom.",
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong stepped out first.",
    "Machine learning models are trained on large datasets to recognize patterns.",
    "Please summarize the following paragraph in two sentences or fewer.",
    "Dr. Smith's appointment is at 3:45 p.m. on Tuesday, March 5th, 2024.",
    "She said, \"Don't worry about it\" -- but he worried anyway.",
    "What is the capital of France? The capital of France is Paris.",
    "Once upon a time, in a land far, far away, there lived a curious dragon.",
    "E-mail me at john.doe@example.com or visit https://example.org/path?q=1&r=2.",
    "The temperature dropped to -12.5 degrees Celsius overnight.",
    "HELLO WORLD! THIS IS AN ALL-CAPS SENTENCE WITH NUMBERS 12345.",
    "lowercase text without any punctuation at all just words",
    "Supercalifragilisticexpialidocious is a very long word indeed.",
    "Their research, published in Nature (vol. 598), was cited 1,024 times.",
]

CODE = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "import numpy as np\n\nx = np.arange(10)\nprint(x.reshape(2, 5).T)\n",
    "class Foo(Bar):\n\tdef __init__(self, *args, **kwargs):\n\t\tsuper().__init__(*args, **kwargs)\n",
    "#include <iostream>\n\nint main() {\n  std::cout << \"Hello\" << std::endl;\n  return 0;\n}\n",
    "template <typename T>\nstd::vector<T> v{1, 2, 3};  // init\nauto it = v.begin(); ++it;\n",
    "for (int i = 0; i < n; ++i) { a[i] = b[i] * c[i] + d; }",
    '{"name": "troupe", "version": "0.1.0", "tags": ["llm", "c++"], "nested": {"a": null, "b": true}}',
    '[\n  {\n    "id": 1,\n    "value": 3.14159\n  },\n  {\n    "id": 2,\n    "value": -2.5e-10\n  }\n]',
    "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%smith%' ORDER BY id DESC;",
    "$ ls -la /usr/local/bin | grep -E '^d' && echo \"done\" >> log.txt 2>&1",
    "<html><body><div class=\"main\" id='x'>Hello &amp; welcome</div></body></html>",
    "    \n    \n\tindented with mixed whitespace\n",
    "x=1;y=2;z=x+y;print(f'{x}+{y}={z}')",
    "fn main() -> Result<(), Box<dyn Error>> { let s = String::from(\"hi\"); Ok(()) }",
    "// TODO(alice): fix this!!!\n/* multi\n * line\n */",
]

DIGITS = [
    "0", "7", "42", "123", "1234", "12345", "3.14159265358979", "1,000,000", "2024-06-01",
    "+1 (555) 123-4567", "0xDEADBEEF", "1e-9", "9999999999999999999999", "v1.2.3-rc4",
    "IPv4 192.168.0.1", "٠١٢٣٤٥٦٧٨٩", "１２３４５", "²³¹", "Ⅻ and ⅷ", "½ + ¼ = ¾",
    "Room 101, floor 3", "a1b2c3d4", "$19.99", "50%",
]

WHITESPACE_UNITS = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n", "\n ", " \t ", "\u00a0", "\u3000",
                    "\u2003", "\u2028", "\u0085", "\u200b", "\x0b", "\x0c"]

EMOJI = [
    "😀", "😂🤣", "👍🏽", "👩\u200d💻", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "🇫🇷🇯🇵🇺🇸", "1️⃣#️⃣",
    "❤️", "✨🎉🎊", "🧑🏿\u200d🚀", "🐈\u200d⬛", "I love 🍕 and 🍣!", "🙂🙃🙂🙃🙂",
]

CJK = [
    "你好，世界！", "我爱自然语言处理。", "日本語のテキストです。", "東京都渋谷区", "カタカナとひらがな",
    "안녕하세요 세계", "한국어 문장입니다.", "中文 English 混合 text", "漢字かな交じり文", "《三国演义》第一回",
]

ACCENTS = [
    "café naïve résumé", "cafe\u0301 nai\u0308ve", "Ångström Øresund Æsir", "São Paulo, Bogotá, Zürich",
    "Crème brûlée à la française", "ñandú pingüino", "Łódź Kraków Gdańsk", "ẞtraße Straße",
    "Z\u0351\u036b\u0343a\u0352l\u0310g\u0308o\u0364", "e\u0301\u0301\u0301",
]

SCRIPTS = [
    "مرحبا بالعالم", "السلام عليكم ورحمة الله", "שלום עולם", "Привет, мир!", "Съешь же ещё этих мягких булок.",
    "Γειά σου Κόσμε", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Բարեւ աշխարհ", "გამარჯობა", "Xin chào thế giới",
]

SPECIAL = [
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "text<|im_end|>more",
    "<|endoftext|><|endoftext|>",
    "<|im_start|><|im_start|>system",
    "prefix <|im_start|> suffix",
    "<|im_sta",
    "<|im_start|",
    "< |im_start| >",
    "<repo_name>troupe<file_sep>main.cpp<filename>x",
    "<jupyter_code>print(1)<jupyter_output>1<empty_output>",
    "<gh_stars>100<issue_start>bug<issue_comment>fix<issue_closed>",
    "<|IM_START|> is not special",
    # Gemma 3: control tokens, user-defined HTML and whitespace tokens.
    "<start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n",
    "<bos><start_of_turn>user\nWho are you?<end_of_turn>",
    "text<end_of_turn>more",
    "<eos><eos><pad><mask><unk>",
    "<start_of_tur",
    "< start_of_turn >",
    "<START_OF_TURN> is not special",
    "<unused0><unused41> unused <unused9999>",
    "<start_of_image>[multimodal]<end_of_image>",
    "<div class=\"x\">hi</div><table><tr><td>1</td></tr></table>",
    "<h1>Title</h1>\n<strong>bold</strong> <em>it</em> <code>x</code>",
    # Llama 2 / Mistral v0.x.
    "<s>[INST] Hello [/INST] Hi!</s>",
    "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nWhat is 2+2? [/INST]",
]

SENTENCEPIECE = [
    " leading space", "  two leading spaces", "trailing space ", "trailing spaces   ", " ", "  ", " " * 33,
    "a" + " " * 40 + "b", "\t" * 35 + "x", "\n" * 40, "x\n\n\n\ny", " \n \n \t\t ", "\r\n\r\n",
    "\u2581", "\u2581\u2581x", "\u2581 \u2581", "word\u2581word", "▁the ▁quick",
    "    def f():\n        return 1\n", "\t\tindent\n\t\t\tmore",
]

CONTRACTIONS = [
    "I'm", "you're", "they've", "she'll", "he'd", "it's", "don't", "DON'T", "I'M", "YOU'RE", "We'Ll",
    "can't won't shouldn't", "rock 'n' roll", "'s 't 're 've 'm 'll 'd", "it’s curly", "O'Brien's",
    "'tis the season", "''quoted''",
]

PUNCTUATION = [
    "!!!", "???", "...", "?!?!", "---", "***", "===>", "<<<>>>", "::", "/*", "*/", "&&||", "@#$%^&*()",
    "\"'`~", "«»„“”‘’", "。，、；：？！", "—–-", "…", "§¶†‡", "(((((((", "]]]]", "_-_-_", "~~~~~~",
]

CATEGORIES = [PROSE, CODE, DIGITS, EMOJI, CJK, ACCENTS, SCRIPTS, SPECIAL, CONTRACTIONS, PUNCTUATION, SENTENCEPIECE]


def _whitespace_run(rng):
    return "".join(rng.choice(WHITESPACE_UNITS) for _ in range(rng.randint(1, 6)))


def _digit_run(rng):
    return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))


def build_corpus(seed=20240601, mixtures=420):
    """The fixed samples plus `mixtures` seeded random combinations."""
    rng = random.Random(seed)
    corpus = [""]
    for category in CATEGORIES:
        corpus.extend(category)
    # Whitespace runs alone, around words and at the ends.
    for _ in range(40):
        w = _whitespace_run(rng)
        corpus.append(rng.choice([w, "word" + w + "word", w + "lead", "trail" + w, w + "x" + w]))
    for _ in range(25):
        corpus.append(rng.choice(["", " ", "n=", "id "]) + _digit_run(rng) + rng.choice(["", ".", " apples", "x"]))
    # Mixtures: fragments from several categories joined by random whitespace.
    pool = [s for category in CATEGORIES for s in category]
    for _ in range(mixtures):
        parts = []
        for _ in range(rng.randint(2, 6)):
            roll = rng.random()
            if roll < 0.15:
                parts.append(_digit_run(rng))
            elif roll < 0.3:
                parts.append(_whitespace_run(rng))
            else:
                fragment = rng.choice(pool)
                if len(fragment) > 8 and rng.random() < 0.3:  # a slice: cuts inside words and tokens
                    a = rng.randrange(len(fragment))
                    fragment = fragment[a:a + rng.randint(1, 12)]
                parts.append(fragment)
        joiner = rng.choice(["", " ", "\n", " ", ""])
        corpus.append(joiner.join(parts))
    return corpus


if __name__ == "__main__":
    strings = build_corpus()
    print(len(strings), "strings")
    for s in strings[:20]:
        print(repr(s))
