"""Giving chunks their context back: headers, small-to-big, sentence windows, hybrid search, blends.

Every method here ends in the same currency: a ranked list of character spans
`(doc, start, end)` into the source documents, so `course_lib.evaluation` scores them
all with one set of metrics. A method may change what is *embedded or searched* (a
chunk with its title and headings in front), or what is *returned* (the parent
section of a small chunk, the sentences around a hit), but a returned span always
points at the original text: `documents[doc][start:end]`.

Taught in notebooks/10_context_for_chunks.ipynb.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from course_lib.chunking import markdown_sections
from course_lib.evaluation import budget_cutoff
from course_lib.spans import DocSpan  # (doc, start, end): characters [start, end) of document `doc`
from course_lib.tokens import count_tokens

__all__ = [
    "BM25_LANGUAGES",
    "KEPT_STOP_WORDS",
    "LEXICAL_TOKEN",
    "RRF_K",
    "DocSpan",
    "blend_vectors",
    "bm25_index",
    "bm25_rankings",
    "budget_spans",
    "contextual_header",
    "headed_texts",
    "heading_path",
    "parent_of",
    "reciprocal_rank_fusion",
    "sentence_windows",
    "small_to_big",
]

RRF_K = 60  # the constant of Cormack, Clarke & Büttcher (2009), used by most hybrid search engines


# --- Contextual chunk headers: taught in notebooks/10_context_for_chunks.ipynb, section 2 ---


def heading_path(text: str, offset: int) -> list[str]:
    """The Markdown headings in force at character `offset` of `text`, outermost first, without `#`.

    Taught in notebooks/10_context_for_chunks.ipynb, section 2. Uses the same parser as
    `markdown_chunks` (`markdown_sections`), so it works for chunks of any chunker.
    """
    _check_heading_path_args(text, offset)
    path: list[str] = []
    for start, _end, headings in markdown_sections(text):
        if start > offset:
            break
        path = headings
    return [h.lstrip("#").strip() for h in path]


def contextual_header(title: str | None, headings: Sequence[str] = ()) -> str:
    """`"title > heading > subheading"`: the line put in front of a chunk before it is embedded.

    Taught in notebooks/10_context_for_chunks.ipynb, section 2. A first heading equal to the
    title (a Markdown file whose `#` line is its title) is not repeated.
    """
    headings = _check_contextual_header_args(title, headings)
    parts = [title.strip()] if title and title.strip() else []
    for h in headings:
        if h.strip() and (not parts or h.strip() != parts[-1]):
            parts.append(h.strip())
    return " > ".join(parts)


def headed_texts(text: str, spans: Sequence[tuple[int, int]], title: str | None = None,
                 headings: bool = True) -> list[str]:
    """The text to embed and search for each chunk `(start, end)` of `text`: its header, a blank line, the chunk.

    Taught in notebooks/10_context_for_chunks.ipynb, section 2. `headings=False` puts only
    the title in front (for plain text without Markdown headings). The chunk's own
    offsets are not changed: only what is embedded is.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    out = []
    for i, span in enumerate(spans):
        start, end = _check_text_span(text, i, span)  # each span checked as it comes, before it is used
        header = contextual_header(title, heading_path(text, start) if headings else ())
        out.append(f"{header}\n\n{text[start:end]}" if header else text[start:end])
    return out


# --- Small-to-big, parent-child and sentence windows: taught in notebooks/10_context_for_chunks.ipynb, section 3 ---


def parent_of(children: Sequence[DocSpan], parents: Sequence[DocSpan]) -> list[int]:
    """For each child span, the index of the parent span of the same document that overlaps it most.

    Taught in notebooks/10_context_for_chunks.ipynb, section 3. Ties go to the earlier
    parent. A child that overlaps no parent raises `ValueError`.
    """
    children, parents = _check_spans("children", children), _check_spans("parents", parents)
    by_doc: dict[Hashable, list[int]] = {}
    for j, (doc, _, _) in enumerate(parents):
        by_doc.setdefault(doc, []).append(j)
    out = []
    for i, (doc, s, e) in enumerate(children):
        best, best_overlap = -1, 0
        for j in by_doc.get(doc, ()):
            overlap = min(e, parents[j][2]) - max(s, parents[j][1])
            if overlap > best_overlap:
                best, best_overlap = j, overlap
        if best < 0:
            raise ValueError(f"children[{i}] = {children[i]!r} overlaps no parent of document {doc!r}; "
                             "parents must cover every child's text")
        out.append(best)
    return out


def small_to_big(ranked_children: Sequence[int], parent_index: Sequence[int]) -> list[int]:
    """Parents in the order of their best-ranked child, each once: retrieve small, return big.

    Taught in notebooks/10_context_for_chunks.ipynb, section 3. `parent_index[c]` is the
    parent of child `c` (see `parent_of`).
    """
    out: list[int] = []
    seen: set[int] = set()
    for rank, c in enumerate(ranked_children):
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= c < len(parent_index):
            raise ValueError(f"ranked_children[{rank}] = {c!r} is not a child index in 0..{len(parent_index) - 1}")
        p = int(parent_index[c])
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def sentence_windows(ranked: Sequence[int], sentences: Sequence[DocSpan], width: int) -> list[DocSpan]:
    """Each hit sentence with up to `width` sentences on each side, best first, never returning text twice.

    Taught in notebooks/10_context_for_chunks.ipynb, section 3. `sentences` are the indexed
    sentences in document order. A hit whose sentence an earlier window already returned
    is skipped; a window stops where an earlier window begins, so the returned spans never
    overlap, and each runs from the start of its first sentence to the end of its last.
    """
    ranked, sentences = _check_sentence_windows_args(ranked, sentences, width)
    taken = np.zeros(len(sentences), dtype=bool)
    out = []
    for i in ranked:
        if taken[i]:
            continue
        doc = sentences[i][0]
        lo = i
        while lo > i - width and lo > 0 and sentences[lo - 1][0] == doc and not taken[lo - 1]:
            lo -= 1
        hi = i
        while hi < i + width and hi + 1 < len(sentences) and sentences[hi + 1][0] == doc and not taken[hi + 1]:
            hi += 1
        taken[lo:hi + 1] = True
        out.append((doc, sentences[lo][1], sentences[hi][2]))
    return out


# --- Hybrid lexical + dense search: taught in notebooks/10_context_for_chunks.ipynb, section 4 ---


# ISO 639-1 code -> its Snowball stemmer, for the languages whose stop words bm25s lists (STOPWORDS_<NAME>); and the
# stop words kept: negations and words that turn a question around
BM25_LANGUAGES = {"da": "danish", "de": "german", "en": "english", "es": "spanish", "fr": "french", "it": "italian",
                  "nl": "dutch", "no": "norwegian", "pt": "portuguese", "ru": "russian", "sv": "swedish",
                  "tr": "turkish"}
KEPT_STOP_WORDS = {
    "da": "ikke ingen intet men mod uden", "de": "aber gegen kein keine keinem keinen keiner keines nicht nichts noch "
    "nur ohne", "en": "but no not", "es": "antes contra más nada ni no pero sin", "fr": "mais ne pas", "it": "contro "
    "ma non più", "nl": "geen maar niet niets tegen zonder", "no": "ikke ingen men mot uten", "pt": "depois mais mas "
    "nem não sem", "ru": "без не нет ни никогда ничего но", "sv": "ej ingen inte men mot utan",
    "tr": "ama değil fakat hiç"}
# An option (-f, --max-depth), a path (/etc/fstab, ~/.bashrc, ./configure), or words joined by . / - (os.path.join,
# XR-12); one-letter words count
LEXICAL_TOKEN = re.compile(r"(?<![\w-])--?\w+(?:-\w+)*|(?:~|\.\.?)?(?:/[\w.-]*\w)+/?|\w+(?:[./-]\w+)*")


def lexical_words(texts: Sequence[str], language: str | None = "en", *, stem: bool = True) -> list[list[str]]:
    """Each text's words for BM25, lower-cased: every `LEXICAL_TOKEN` match, then the words of a joined one
    ("--max-depth" gives "--max-depth", "max", "depth"); the language's stop words (bm25s's list less
    `KEPT_STOP_WORDS`) left out; single words reduced to their Snowball stem when `stem`.

    Taught in notebooks/10_context_for_chunks.ipynb, section 4. `language` is a key of `BM25_LANGUAGES`, or
    None for no stop words and no stemming. Questions and chunks must go through the same call.
    """
    stop, stemmed = _lexicon(language, stem)
    out = []
    for text in texts:
        words = []
        for token in (m.group() for m in LEXICAL_TOKEN.finditer(text.casefold())):
            parts = re.findall(r"\w+", token)
            words += [stemmed(w) if w.isalpha() else w for w in [token, *parts[parts == [token]:]] if w not in stop]
        out.append(words)
    return out


@functools.cache
def _lexicon(language: str | None, stem: bool) -> tuple[frozenset[str], Any]:
    """The language's stop words (bm25s's less `KEPT_STOP_WORDS`) and its Snowball stemmer, cached per word."""
    if language is None:
        return frozenset(), str
    if language not in BM25_LANGUAGES:
        raise ValueError(f"language {language!r} has no stop words and stemmer here; use one of "
                         f"{', '.join(BM25_LANGUAGES)}, or None for neither")
    import bm25s.stopwords
    import snowballstemmer

    listed = getattr(bm25s.stopwords, "STOPWORDS_" + ("EN" if language == "en" else BM25_LANGUAGES[language].upper()))
    stemmed = functools.cache(snowballstemmer.stemmer(BM25_LANGUAGES[language]).stemWord) if stem else str
    return frozenset(listed) - set(KEPT_STOP_WORDS[language].split()), stemmed


def bm25_rankings(texts: Sequence[str], queries: Sequence[str], *, language: str | None = "en",
                  stem: bool = True) -> list[list[int]]:
    """For each query, the indices of `texts` with a positive BM25 score, best first (`bm25s`).

    Taught in notebooks/10_context_for_chunks.ipynb, section 4. Texts and queries are split alike by
    `lexical_words`; bm25s's default parameters (k1=1.5, b=0.75). Equal scores keep index order. Texts that
    share no word with the query are left out: BM25 has nothing to say about them.
    """
    texts, queries = _check_bm25_args(texts, queries)
    retriever, vocabulary = bm25_index(lexical_words(texts, language, stem=stem))
    out = []
    for words in lexical_words(queries, language, stem=stem):
        known = [w for w in words if w in vocabulary]
        scores = retriever.get_scores(known) if known else np.zeros(len(texts))
        out.append([int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > 0])
    return out


def bm25_index(words: Sequence[Sequence[str]]) -> tuple[Any, dict[str, int]]:
    """A bm25s index of texts given as their words (`lexical_words`), and its vocabulary (word -> id)."""
    import bm25s

    vocabulary: dict[str, int] = {"": 0}  # bm25s's empty token: a text without words holds it, as bm25s.tokenize does
    ids = [[vocabulary.setdefault(w, len(vocabulary)) for w in text] or [0] for text in words]
    retriever = bm25s.BM25()
    retriever.index((ids, vocabulary), show_progress=False)
    return retriever, vocabulary


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K) -> list[Hashable]:
    """Fuse ranked lists: each item scores the sum of 1 / (k + rank) over the lists that hold it (ranks from 1).

    Taught in notebooks/10_context_for_chunks.ipynb, section 4. Only ranks matter, so a
    cosine and a BM25 score never need a common scale. Equal scores keep the order in
    which the items first appear, list by list.
    """
    rankings = _check_rrf_args(rankings, k)
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])  # a stable sort: ties keep their first-seen order


# --- Vectors and budgets: taught in notebooks/10_context_for_chunks.ipynb, sections 3 and 5 ---


def blend_vectors(naive: Any, late: Any, weight: float) -> np.ndarray:
    """Row by row, `weight * late + (1 - weight) * naive`, L2-normalized (exercise 6.3's blend).

    Taught in notebooks/10_context_for_chunks.ipynb, section 5.
    """
    a, b = _check_blend_args(naive, late, weight)
    mixed = weight * b + (1 - weight) * a
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError(f"row {int(np.argmax(norms[:, 0] == 0))} blends to the zero vector; use another weight")
    return (mixed / norms).astype(np.float32)


def budget_spans(spans: Sequence[DocSpan], documents: Mapping[Hashable, str], budget: int,
                 tokenizer: Any = "cl100k_base") -> list[DocSpan]:
    """The ranked spans a reader gets under a budget of `budget` tokens (`course_lib.evaluation.budget_cutoff`).

    Taught in notebooks/10_context_for_chunks.ipynb, section 3: spans are taken in rank
    order until the next would pass the budget, at least one. Counts the tokens of
    `documents[doc][start:end]` with `tokenizer` (cl100k_base by default).
    """
    spans = _check_spans("spans", spans, nonempty=True)
    counts = [count_tokens(_checked_text(documents, span), tokenizer) for span in spans]
    return spans[:budget_cutoff(counts, budget)]


# --- Argument checks: the error messages of the functions above, kept out of their way ---


def _check_spans(name: str, spans: Any, *, nonempty: bool = False) -> list[DocSpan]:
    if isinstance(spans, (str, bytes)) or not isinstance(spans, Sequence):
        raise TypeError(f"{name} must be a sequence of (doc, start, end) tuples")
    out = []
    for i, span in enumerate(spans):
        if not isinstance(span, tuple) or len(span) != 3:
            raise TypeError(f"{name}[{i}] = {span!r}: use a (doc, start, end) tuple")
        doc, start, end = span
        if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, (int, np.integer)) \
                or not isinstance(end, (int, np.integer)):
            raise TypeError(f"{name}[{i}] = {span!r}: start and end must be ints")
        if not 0 <= start < end:
            raise ValueError(f"{name}[{i}] = {span!r}: need 0 <= start < end (a non-empty character range)")
        out.append((doc, int(start), int(end)))
    if nonempty and not out:
        raise ValueError(f"{name} is empty; a retriever returns at least one span")
    return out


def _check_heading_path_args(text: Any, offset: Any) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(f"offset must be an int, not {type(offset).__name__}")
    if not 0 <= offset <= len(text):
        raise ValueError(f"offset={offset} is outside the text (0..{len(text)})")


def _check_contextual_header_args(title: Any, headings: Any) -> list[str]:
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, not {type(title).__name__}")
    if isinstance(headings, str):
        raise TypeError("headings must be a sequence of strings, not one string; wrap it in a list")
    headings = list(headings)
    for h in headings:
        if not isinstance(h, str):
            raise TypeError(f"headings must hold strings, not {type(h).__name__}")
    return headings


def _check_text_span(text: str, i: int, span: Any) -> tuple[int, int]:
    if not isinstance(span, tuple) or len(span) != 2:
        raise TypeError(f"spans[{i}] = {span!r}: use a (start, end) tuple of character offsets")
    start, end = span
    if not 0 <= start < end <= len(text):
        raise ValueError(f"spans[{i}] = {span!r} is not a non-empty range inside the text (0..{len(text)})")
    return start, end


def _check_sentence_windows_args(ranked: Any, sentences: Any, width: Any) -> tuple[list[int], list[DocSpan]]:
    sentences = _check_spans("sentences", sentences)
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 0:
        raise ValueError(f"width={width!r} must be an int >= 0 (sentences added on each side of a hit)")
    for i in range(1, len(sentences)):
        if sentences[i][0] == sentences[i - 1][0] and sentences[i][1] < sentences[i - 1][2]:
            raise ValueError(f"sentences[{i}] starts before sentences[{i - 1}] ends; pass the sentences of each "
                             "document in order, without overlap")
    ranked = list(ranked)
    for rank, i in enumerate(ranked):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < len(sentences):
            raise ValueError(f"ranked[{rank}] = {i!r} is not a sentence index in 0..{len(sentences) - 1}")
    return ranked, sentences


def _check_bm25_args(texts: Any, queries: Any) -> tuple[list[str], list[str]]:
    if isinstance(texts, str) or isinstance(queries, str):
        raise TypeError("texts and queries must be lists of strings; wrap a single string in a list")
    texts, queries = list(texts), list(queries)
    if not texts:
        raise ValueError("texts is empty; index at least one text")
    for name, values in (("texts", texts), ("queries", queries)):
        for i, t in enumerate(values):
            if not isinstance(t, str):
                raise TypeError(f"{name}[{i}] must be a str, not {type(t).__name__}")
    return texts, queries


def _check_rrf_args(rankings: Any, k: Any) -> list[list[Hashable]]:
    """The rankings, each as a list, once `k` and every ranking are checked."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k={k!r} must be an int >= 0 (60 is the usual choice)")
    if isinstance(rankings, (str, bytes)) or not isinstance(rankings, Sequence) or not rankings:
        raise TypeError("rankings must be a non-empty sequence of ranked lists")
    checked = []
    for n, ranking in enumerate(rankings):
        if isinstance(ranking, (str, bytes)):
            raise TypeError(f"rankings[{n}] is a string; pass a list of ids, best first")
        checked.append(list(ranking))
        seen = set()
        for item in checked[-1]:
            if item in seen:
                raise ValueError(f"rankings[{n}] lists {item!r} twice; remove duplicates (keep the first)")
            seen.add(item)
    return checked


def _check_blend_args(naive: Any, late: Any, weight: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(naive, dtype=np.float64), np.asarray(late, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"naive {a.shape} and late {b.shape} must be 2-D arrays of the same shape, one row a chunk")
    if isinstance(weight, bool) or not isinstance(weight, (int, float, np.floating)) or not 0 <= weight <= 1:
        raise ValueError(f"weight={weight!r} must be a number in [0, 1] (0 = naive only, 1 = late only)")
    return a, b


def _checked_text(documents: Mapping[Hashable, str], span: DocSpan) -> str:
    """`documents[doc][start:end]`, once the span is checked to lie inside a document of `documents`."""
    doc, start, end = span
    if doc not in documents:
        raise ValueError(f"span {(doc, start, end)!r} names a document that is not in documents")
    if end > len(documents[doc]):
        raise ValueError(f"span {(doc, start, end)!r} ends after document {doc!r} "
                         f"({len(documents[doc])} characters)")
    return documents[doc][start:end]
