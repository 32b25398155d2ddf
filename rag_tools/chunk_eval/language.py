"""The documents' language for chunk-eval: given (`--language es`) or detected (`--language auto`, py3langid,
whose model ships in its wheel), the lexical side it chooses (`course_lib.retrieval.lexical_words`: stop words
and Snowball stems), and the warning for a model that was not trained on that language.

A model's languages come from its model card (`rag_tools.embedders.MODEL_LANGUAGES`) for the registry's models,
and from `--model-languages` for a local folder or an endpoint (unknown otherwise: no warning is possible).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from course_lib.retrieval import BM25_LANGUAGES
from rag_tools.chunk_eval.inputs import ChunkEvalError, Document
from rag_tools.embedders import MODEL_LANGUAGES

__all__ = ["AUTO", "Language", "detect_language", "language_warning", "model_languages", "parse_model_languages",
           "resolve_language"]

AUTO = "auto"
SAMPLE_CHARS = 4000  # characters read from each document for detection (the start of each, not the whole folder)
SAMPLE_TOTAL = 200_000  # characters read for detection at most, over all documents
ISO_CODE = re.compile(r"[a-z]{2}")


@dataclass(frozen=True)
class Language:
    """The documents' language (`code`, ISO 639-1), how it was found, and the lexical side's language: `code`
    when `course_lib.retrieval.BM25_LANGUAGES` has its stop words and stemmer, else None (words only)."""

    code: str
    detected: bool

    @property
    def lexical(self) -> str | None:
        return self.code if self.code in BM25_LANGUAGES else None

    def text(self) -> str:
        """The plan's line: the language, how it was found, and what BM25 does with it."""
        how = "detected by py3langid" if self.detected else "given"
        lexical = (f"BM25 drops its stop words (negations kept) and uses Snowball {BM25_LANGUAGES[self.code]} stems"
                   if self.lexical else "no stop-word list or stemmer for it here: BM25 matches whole words")
        return f"language: {self.code} ({how}); {lexical}"


def detect_language(texts: Sequence[str]) -> str:
    """The ISO 639-1 code py3langid gives the start of each text (`SAMPLE_CHARS` each, `SAMPLE_TOTAL` in all)."""
    import py3langid

    sample, total = [], 0
    for text in texts:
        if total >= SAMPLE_TOTAL:
            break
        piece = text[:min(SAMPLE_CHARS, SAMPLE_TOTAL - total)]
        sample.append(piece)
        total += len(piece)
    joined = "\n".join(sample)
    if not joined.strip():
        raise ChunkEvalError("--language auto: the documents hold no text to detect a language from; give one, "
                             "e.g. --language en")
    return str(py3langid.classify(joined)[0])


def resolve_language(option: str | None, documents: Sequence[Document]) -> Language:
    """`--language`: an ISO 639-1 code, or `auto` (the default) to detect it from the documents."""
    if option is None or option == AUTO:
        return Language(detect_language([d.text for d in documents]), detected=True)
    code = option.strip().lower() if isinstance(option, str) else option
    if not isinstance(code, str) or not ISO_CODE.fullmatch(code):
        raise ChunkEvalError(f"--language {option!r} is not a two-letter ISO 639-1 code; give one such as es or en, "
                             f"or auto (stop words and stems for {', '.join(BM25_LANGUAGES)})")
    return Language(code, detected=False)


def parse_model_languages(option: str | None) -> tuple[str, ...] | None:
    """`--model-languages es,en`: the ISO 639-1 codes a local folder's or an endpoint's model was trained on."""
    if option is None:
        return None
    codes = tuple(part.strip().lower() for part in option.split(","))
    bad = [c for c in codes if not ISO_CODE.fullmatch(c)]
    if bad or not codes:
        raise ChunkEvalError(f"--model-languages {option!r}: give two-letter ISO 639-1 codes separated by commas, "
                             "e.g. es,en")
    return codes


def language_warning(language: Language, model_label: str, model_languages: Sequence[str] | None) -> str | None:
    """One line when the documents' language is not among the model's (None when it is, or when the model's
    languages are unknown), naming the multilingual models the course ships that read it."""
    if model_languages is None or language.code in model_languages:
        return None
    others = [name for name, codes in MODEL_LANGUAGES.items() if language.code in codes]
    advice = (f"try --model {' or --model '.join(others)} (make setup-multilingual)" if others
              else "none of the course's models reads it: give a local folder or an endpoint that does")
    how = "detected" if language.detected else "given"
    return (f"the documents are in {language.code} ({how}), and {model_label} was trained on "
            f"{', '.join(model_languages)} only: its scores say little about a model that reads {language.code}; "
            f"{advice}")


def model_languages(model: Any, options: Mapping[str, Any], embedder: Any,
                    given: Sequence[str] | None) -> tuple[str, ...] | None:
    """The languages the evaluated model was trained on: `given` (`--model-languages`) if any; a given `embedder`'s
    own `languages` attribute (a test's stand-in; None without one); a registry name's (`MODEL_LANGUAGES`; no
    `--model` is minilm); None (unknown) for a local folder or an endpoint."""
    if given is not None:
        return tuple(given)
    if embedder is not None:
        languages = getattr(embedder, "languages", None)
        return None if languages is None else tuple(languages)
    if options.get("embed_url") is not None or options.get("embed_model") is not None:
        return None
    name = "minilm" if model is None else model
    return MODEL_LANGUAGES.get(name) if isinstance(name, str) else None
