#!/usr/bin/env python3
"""Writes a GGUF Llama model cut to its first layers: an amateur for contrastive decoding.

    python make_cut_model.py SRC.gguf DST.gguf --layers K [--rename-token ID TEXT]

The copy holds every metadata key of SRC with `<arch>.block_count` = K, and
every tensor of SRC except those of blocks K and above (`blk.N.*`, N >= K),
byte for byte with their types kept (quantized blocks stay quantized), so
llama.cpp loads it as well as troupe does. Since the embedding, the final
norm and the output (or tied) projection are the expert's, the cut model is
the expert's "early exit" after K layers: same vocabulary, weaker predictions.

--rename-token ID TEXT replaces one token's text in tokenizer.ggml.tokens (a
vocabulary of the same size but different bytes, for the mismatch test).
"""

import argparse
import re

import gguf


def write_cut_model(src, dst, layers, rename_token=None):
    reader = gguf.GGUFReader(str(src), "r")
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    block_count_key = f"{arch}.block_count"
    total = reader.get_field(block_count_key).contents()
    if not 1 <= layers <= total:
        raise ValueError(f"--layers {layers}: the model has {total} layers")
    writer = gguf.GGUFWriter(str(dst), arch=arch, endianess=reader.endianess)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # the writer writes these itself
        if field.name == gguf.Keys.General.ALIGNMENT:
            writer.data_alignment = field.contents()
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        if field.name == block_count_key:
            value = layers
        elif field.name == gguf.Keys.Tokenizer.LIST and rename_token is not None:
            value = list(value)
            value[rename_token[0]] = rename_token[1]
        writer.add_key_value(field.name, value, value_type, sub_type=sub_type)

    def kept(name):
        m = re.match(r"blk\.(\d+)\.", name)
        return m is None or int(m.group(1)) < layers

    tensors = [t for t in reader.tensors if kept(t.name)]
    for t in tensors:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in tensors:
        writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    writer.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--rename-token", nargs=2, metavar=("ID", "TEXT"))
    args = parser.parse_args()
    rename = (int(args.rename_token[0]), args.rename_token[1]) if args.rename_token else None
    write_cut_model(args.src, args.dst, args.layers, rename)


if __name__ == "__main__":
    main()
