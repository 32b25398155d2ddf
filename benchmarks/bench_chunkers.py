"""Chunker speed and correctness against named peers, measured in one run.

    make bench            # installs benchmarks/requirements.txt, then runs this script
    nice -n 10 python benchmarks/bench_chunkers.py --repeats 9 --corpus chroma
    python benchmarks/bench_chunkers.py --grapheme-cost    # what the cluster checks cost course_lib

Corpus (no download beyond the course's data cache): `chroma` (default) is the five corpora of
Chroma's chunking evaluation set (1.45 MB), one document each; `all` adds the FLORES-200 English
and Spanish sentences (2 MB in all).
Every chunker gets the same documents, at 512 cl100k_base tokens, with overlap 0 and 50. Runs are
interleaved (every chunker once per round) and the median round counts; the ratios that the
targets name are also given per round (median, min-max), since a shared machine's load moves
every chunker's time but much less their ratio within a round. For each chunk we check:
the size limit (its text recounted with cl100k_base), its offsets (`doc[start:end] == text`; for
libraries without offsets, the text must be found in order in the document), and U+FFFD that
the document did not contain. Throughput is printed as a ratio to raw tiktoken encoding.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from importlib import metadata

import numpy as np

from course_lib.chunking import fixed_size_chunks, recursive_chunks
from course_lib.datasets import CHROMA_CORPORA, load_chroma_corpus, load_flores
from course_lib.settings import apply_quiet_offline_env
from course_lib.tokens import get_encoding

SIZE = 512
ENC = get_encoding("cl100k_base")

# A chunker maps (document, overlap) to a list of (text, start or None) pairs.
Result = list[tuple[str, int | None]]


def corpus(which: str = "chroma") -> list[str]:
    docs = [load_chroma_corpus(name) for name in CHROMA_CORPORA]
    if which == "chroma":
        return docs
    return [*docs, "\n".join(load_flores("eng")), "\n".join(load_flores("spa"))]


def ratio_spread(numerators: list[float], denominators: list[float]) -> str:
    """Median and min-max of the per-round ratios numerator / denominator."""
    ratios = [a / b for a, b in zip(numerators, denominators)]
    return f"{statistics.median(ratios):.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f})"


def raw_tiktoken(doc: str, overlap: int) -> Result:
    ENC.encode_ordinary(doc)
    return []


def course_fixed(doc: str, overlap: int) -> Result:
    return [(c.text, c.start) for c in fixed_size_chunks(doc, SIZE, overlap, tokenizer=ENC)]


def course_recursive(doc: str, overlap: int) -> Result:
    return [(c.text, c.start) for c in recursive_chunks(doc, SIZE, overlap, tokenizer=ENC)]


def peers(made: dict) -> dict[str, Callable[[str, int], Result]]:
    """The peers; each is built once per round and overlap and kept in `made` (cleared every
    round, so caches such as semchunk's memoized counts do not carry over between rounds)."""
    import semchunk
    from chonkie import RecursiveChunker, TokenChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter
    from semantic_text_splitter import TextSplitter

    def cached(key, build):
        if key not in made:
            made[key] = build()
        return made[key]

    def lc_recursive(doc, overlap):
        splitter = cached(("lcr", overlap), lambda: RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name="cl100k_base", chunk_size=SIZE, chunk_overlap=overlap))
        return [(t, None) for t in splitter.split_text(doc)]

    def lc_token(doc, overlap):
        splitter = cached(("lct", overlap), lambda: TokenTextSplitter(
            encoding_name="cl100k_base", chunk_size=SIZE, chunk_overlap=overlap))
        return [(t, None) for t in splitter.split_text(doc)]

    def chonkie_token(doc, overlap):
        chunker = cached(("ct", overlap), lambda: TokenChunker(tokenizer=ENC, chunk_size=SIZE, chunk_overlap=overlap))
        return [(c.text, c.start_index) for c in chunker.chunk(doc)]

    def chonkie_recursive(doc, overlap):
        chunker = cached(("cr",), lambda: RecursiveChunker(tokenizer=ENC, chunk_size=SIZE))
        return [(c.text, c.start_index) for c in chunker.chunk(doc)]

    def semchunk_(doc, overlap):
        chunker = cached(("sc",), lambda: semchunk.chunkerify(ENC, SIZE))
        texts, offsets = chunker(doc, offsets=True, overlap=overlap or None)
        return [(t, s) for t, (s, _) in zip(texts, offsets)]

    def text_splitter(doc, overlap):
        splitter = cached(("ts", overlap),
                          lambda: TextSplitter.from_tiktoken_model("gpt-3.5-turbo", SIZE, overlap=overlap))
        return [(t, s) for s, t in splitter.chunk_indices(doc)]

    return {
        "langchain RecursiveCharacterTextSplitter": lc_recursive,
        "langchain TokenTextSplitter": lc_token,
        "chonkie TokenChunker": chonkie_token,
        "chonkie RecursiveChunker": chonkie_recursive,  # no overlap option: run at overlap 0 only
        "semchunk": semchunk_,
        "semantic-text-splitter": text_splitter,
    }


def violations(doc: str, chunks: Result) -> tuple[int, int, int]:
    """(chunks over SIZE tokens, chunks whose offsets are wrong or missing, chunks with new U+FFFD)."""
    over = bad_offsets = broken = 0
    cursor = 0
    for text, start in chunks:
        over += len(ENC.encode_ordinary(text)) > SIZE
        if start is None:  # no offsets given: the text must occur, in order
            found = doc.find(text, cursor)
            bad_offsets += found < 0
            cursor = found if found >= 0 else cursor
        else:
            bad_offsets += doc[start:start + len(text)] != text
        broken += text.count("\ufffd") > 0 and "\ufffd" not in doc
    return over, bad_offsets, broken


def version(package: str) -> str:
    return metadata.version(package)


def grapheme_cost(docs: list[str], repeats: int) -> None:
    """What the rule "never cut inside a user-perceived character" costs: each chunker as it is,
    against the same chunker told that every position is a cluster boundary (no cluster checks),
    interleaved in one process. The chunks are the same on these corpora, checked below."""
    from course_lib.chunking import _measure

    with_rule = _measure._doubtful_positions
    without_rule = lambda text, codes: np.zeros(0, dtype=np.int64)  # noqa: E731
    times: dict[str, list[float]] = {}
    modes = [("with", with_rule), ("without", without_rule)]
    for round_ in range(repeats):
        for name, chunker in (("fixed_size_chunks", fixed_size_chunks), ("recursive_chunks", recursive_chunks)):
            outputs = []
            for mode, doubtful in modes if round_ % 2 else modes[::-1]:  # alternate which runs first
                _measure._doubtful_positions = doubtful
                began = time.perf_counter()
                outputs.append([[(c.start, c.end) for c in chunker(doc, SIZE, tokenizer=ENC)] for doc in docs])
                times.setdefault(f"{name} {mode}", []).append(time.perf_counter() - began)
            _measure._doubtful_positions = with_rule
            assert outputs[0] == outputs[1], "the cluster checks moved a cut on this corpus"
    print(f"\n### The grapheme rule's cost (overlap 0, {repeats} interleaved rounds)\n")
    for name in ("fixed_size_chunks", "recursive_chunks"):
        on, off = times[f"{name} with"], times[f"{name} without"]
        print(f"{name}: {statistics.median(on):.3f} s with the cluster checks, {statistics.median(off):.3f} s "
              f"without; {ratio_spread(on, off)} the time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="interleaved rounds (median counts)")
    parser.add_argument("--corpus", choices=("chroma", "all"), default="chroma",
                        help="chroma: the five Chroma corpora (1.45 MB); all: plus FLORES-200 eng and spa")
    parser.add_argument("--grapheme-cost", action="store_true",
                        help="only measure what the cluster checks cost (course_lib with and without them)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    apply_quiet_offline_env()

    docs = corpus(args.corpus)
    if args.grapheme_cost:
        grapheme_cost(docs, args.repeats)
        return
    n_chars = sum(map(len, docs))
    n_bytes = sum(len(d.encode()) for d in docs)
    built: dict = {}
    chunkers: dict[str, Callable] = {
        "tiktoken encode_ordinary (raw)": raw_tiktoken,
        "course_lib fixed_size_chunks": course_fixed,
        "course_lib recursive_chunks": course_recursive,
        **peers(built),
    }
    print(f"corpus: {len(docs)} documents, {n_chars:,} characters, {n_bytes / 1e6:.2f} MB; size {SIZE} "
          f"cl100k_base tokens; {args.repeats} interleaved rounds")
    print("versions: " + ", ".join(f"{p} {version(p)}" for p in (
        "tiktoken", "langchain-text-splitters", "chonkie", "semchunk", "semantic-text-splitter")))

    for overlap in (0, 50):
        active = {name: fn for name, fn in chunkers.items() if not (overlap and name == "chonkie RecursiveChunker")}
        times: dict[str, list[float]] = {name: [] for name in active}
        outputs: dict[str, list[Result]] = {}
        for _ in range(args.repeats):
            built.clear()
            for name, fn in active.items():
                began = time.perf_counter()
                outputs[name] = [fn(doc, overlap) for doc in docs]
                times[name].append(time.perf_counter() - began)
        base = statistics.median(times["tiktoken encode_ordinary (raw)"])
        print(f"\n### overlap {overlap}\n")
        print("| chunker | median s | MB/s | speed vs raw tiktoken | chunks | over size | bad offsets | U+FFFD |")
        print("|---|---|---|---|---|---|---|---|")
        for name in active:
            seconds = statistics.median(times[name])
            counts = [violations(doc, out) for doc, out in zip(docs, outputs[name])]
            over, bad, broken = (sum(c[i] for c in counts) for i in range(3))
            n_chunks = sum(map(len, outputs[name]))
            shown = "-" if name.startswith("tiktoken") else f"{n_chunks:,}"
            checks = ("-", "-", "-") if name.startswith("tiktoken") else (over, bad, broken)
            print(f"| {name} | {seconds:.3f} | {n_bytes / 1e6 / seconds:.2f} | {base / seconds:.2f}x | {shown} | "
                  f"{checks[0]} | {checks[1]} | {checks[2]} |")
        ours_r = times["course_lib recursive_chunks"]
        print()
        for peer in ("chonkie RecursiveChunker", "langchain RecursiveCharacterTextSplitter", "semchunk",
                     "semantic-text-splitter"):
            if peer in active:
                print(f"recursive_chunks is {ratio_spread(times[peer], ours_r)} as fast as {peer}")
        raw = times["tiktoken encode_ordinary (raw)"]
        print(f"fixed_size_chunks runs at {ratio_spread(raw, times['course_lib fixed_size_chunks'])} "
              f"the speed of raw tiktoken encoding")


if __name__ == "__main__":
    main()
