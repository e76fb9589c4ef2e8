"""Hugging Face transformers' own GGUF tokenizer conversion, as a subprocess.

    python hf_gguf_tokenizer.py MODEL.gguf < requests.jsonl > answers.jsonl

Builds the tokenizer with `AutoTokenizer.from_pretrained(dir, gguf_file=...)`
and answers each JSON line read: a string with the JSON list of ids of
`tokenizer.encode(text)` (with the BOS the file asks for), a list of ids with
the JSON string of `tokenizer.decode(ids)`.

transformers 5.24 needs torch for this only in name: its GGUF package
(`transformers.integrations.gguf`: reader, dequant, utils) imports torch at
module level, and `load_gguf_checkpoint` refuses to read the config without
`is_torch_available()`. No torch function runs while a tokenizer is built, so
a stand-in `torch` module (names only) is put in sys.modules and the check is
patched. That is why this runs in its own process: the stand-in must not leak
into the pytest process.
"""
import importlib.machinery
import json
import pathlib
import sys
import types


class _Anything:
    """Any attribute, call, subscript or union of it is another stand-in."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __getattr__(self, name):
        return _Anything()

    def __getitem__(self, key):
        return _Anything()

    def __or__(self, other):
        return _Anything()

    __ror__ = __or__


class _StandInModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything


def _install_torch_stand_in():
    for name in ("torch", "torch.nn"):
        module = _StandInModule(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        sys.modules[name] = module
    sys.modules["torch"].nn = sys.modules["torch.nn"]


def load(gguf_path):
    _install_torch_stand_in()
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers import AutoTokenizer

    gguf_utils.is_torch_available = lambda: True
    path = pathlib.Path(gguf_path).resolve()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def main(argv):
    tokenizer = load(argv[1])
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        item = json.loads(line)
        result = tokenizer.encode(item) if isinstance(item, str) else tokenizer.decode(item, skip_special_tokens=False)
        out.write(json.dumps(result) + "\n")
    out.flush()


if __name__ == "__main__":
    main(sys.argv)
