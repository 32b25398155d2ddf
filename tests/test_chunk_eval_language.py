"""chunk-eval in the documents' language (issue 45): the lexical side (`course_lib.retrieval.lexical_words`, shared
by `bm25_rankings` and chunk-eval's `Bm25Index`), `--language` (given or detected), and the wrong-language warning
(the registry's models carry their languages; a folder or an endpoint only through `--model-languages`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.retrieval import BM25_LANGUAGES, KEPT_STOP_WORDS, bm25_rankings, lexical_words
from rag_tools.chunk_eval import main
from rag_tools.chunk_eval.check import check
from rag_tools.chunk_eval.inputs import ChunkEvalError, Document
from rag_tools.chunk_eval.language import Language, language_warning, model_languages, resolve_language
from rag_tools.chunk_eval.score import Bm25Index
from rag_tools.embedders import MODEL_LANGUAGES

QUERY = "¿Qué hace la opción -f de at? no"
SPANISH = {
    "at.txt": "La orden at ejecuta órdenes a una hora dada. La opción -f lee las órdenes de un fichero en lugar de "
              "la entrada estándar. No se ejecuta nada si la cola está detenida.\n",
    "df.txt": "La orden df muestra el espacio libre de cada sistema de ficheros. Con la opción -i muestra los nodos-i "
              "en lugar de los bloques, y --max-depth no existe en df.\n",
    "red.txt": "Para configurar la red, edite /etc/network/interfaces. La configuración de cada interfaz empieza con "
               "iface; os.path.join no tiene nada que ver con ella.\n",
}
QUESTIONS = [
    {"id": "at", "question": "¿Qué hace la opción -f de at?", "answer": "La opción -f lee las órdenes de un fichero"},
    {"id": "df", "question": "¿Qué muestra df -i?", "answer": "muestra los nodos-i"},
    {"id": "red", "question": "¿Cómo se configura la red?", "answer": "Para configurar la red"},
]


def words(text: str, language: str | None = "es", stem: bool = True) -> list[str]:
    return lexical_words([text], language, stem=stem)[0]


def spanish_set(folder: Path) -> tuple[Path, Path]:
    for name, text in SPANISH.items():
        (folder / "docs").mkdir(exist_ok=True)
        (folder / "docs" / name).write_text(text, encoding="utf-8")
    (folder / "q.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS),
                                    encoding="utf-8")
    return folder / "docs", folder / "q.jsonl"


# --- the tokenizer ----------------------------------------------------------------------------------------------


def test_the_practitioners_query_keeps_what_it_turns_on():
    got = words(QUERY)
    assert {"-f", "at", "no"} <= set(got), got  # an option, a one-letter-word command, a negation
    assert not {"la", "de", "qué"} & set(got), got  # Spanish stop words
    assert words("configurar") == words("configuración") != words("configurar", stem=False)
    # English: "at" is a stop word there, the negations are not
    assert {"-f", "not", "no"} <= set(words("What does -f not do? no", "en")) and "at" not in words("at", "en")


def test_options_paths_and_dotted_names_stay_whole_beside_their_words():
    got = words("Use --max-depth with find; edit /etc/fstab or ~/.bashrc, run ./configure, call os.path.join, XR-12.",
                "en", stem=False)
    for whole in ("--max-depth", "/etc/fstab", "~/.bashrc", "./configure", "os.path.join", "xr-12"):
        assert whole in got, (whole, got)
    assert {"max", "depth", "etc", "fstab", "bashrc", "configure", "os", "path", "join", "xr", "12"} <= set(got)
    assert "fstab." not in " ".join(got), "a sentence's full stop is not part of a path"


def test_the_kept_words_are_stop_words_of_their_list():
    """Every kept word is on bm25s's list (else keeping it does nothing), and is kept."""
    import bm25s.stopwords

    for code, kept in KEPT_STOP_WORDS.items():
        listed = getattr(bm25s.stopwords, "STOPWORDS_" + ("EN" if code == "en" else BM25_LANGUAGES[code].upper()))
        for word in kept.split():
            assert word in listed, (code, word)
            assert words(word, code, stem=False) == [word], (code, word)


def test_a_language_without_a_list_is_refused_by_name():
    with pytest.raises(ValueError, match="language 'xx'"):
        lexical_words(["text"], "xx")
    assert words("La opción -f", None) == ["la", "opción", "-f", "f"], "None: words only, no stop words, no stems"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="ab -./fxyzé", max_size=30), min_size=1, max_size=6),
       st.lists(st.text(alphabet="ab -./fxyzé", max_size=12), min_size=1, max_size=4),
       st.sampled_from(["en", "es", None]))
def test_course_lib_and_chunk_eval_rank_with_one_tokenizer(texts, queries, language):
    index = Bm25Index(texts, language)
    assert [index.ranking(q).tolist() for q in queries] == bm25_rankings(texts, queries, language=language)


def test_bm25_finds_the_option_question_in_spanish():
    texts = list(SPANISH.values())
    ranked = bm25_rankings(texts, [q["question"] for q in QUESTIONS], language="es")
    assert [r[0] for r in ranked] == [0, 1, 2], ranked


# --- --language -------------------------------------------------------------------------------------------------


def docs_of(texts: dict[str, str]) -> list[Document]:
    return [Document(path, text) for path, text in texts.items()]


def test_the_language_is_detected_or_given():
    found = resolve_language("auto", docs_of(SPANISH))
    assert found == Language("es", detected=True) and found.lexical == "es"
    assert "language: es (detected by py3langid)" in found.text() and "Snowball spanish" in found.text()
    assert resolve_language(" ES ", docs_of(SPANISH)) == Language("es", detected=False)
    assert resolve_language("ja", docs_of(SPANISH)).lexical is None  # a language without a list: words only
    with pytest.raises(ChunkEvalError, match="--language 'spanish'"):
        resolve_language("spanish", docs_of(SPANISH))
    with pytest.raises(ChunkEvalError, match="no text to detect"):
        resolve_language("auto", docs_of({"a.txt": "  \n"}))


# --- the wrong-language warning ---------------------------------------------------------------------------------


def test_the_registry_models_carry_their_languages():
    assert MODEL_LANGUAGES["minilm"] == ("en",)
    assert {"es", "en"} <= set(MODEL_LANGUAGES["usem3"]) and {"es", "en"} <= set(MODEL_LANGUAGES["e5-small"])
    spanish = Language("es", detected=True)
    line = language_warning(spanish, "minilm", model_languages(None, {}, None, None))
    assert line is not None and "--model usem3 or --model e5-small" in line and "in es (detected)" in line
    for name in ("usem3", "e5-small"):
        assert language_warning(spanish, name, model_languages(name, {}, None, None)) is None
    assert model_languages("/some/folder", {}, None, None) is None, "a folder's languages are unknown"
    assert model_languages(None, {"embed_url": "http://x", "embed_model": "m"}, None, None) is None
    assert model_languages("/some/folder", {}, None, ("es",)) == ("es",)


@pytest.mark.parametrize(("options", "warned"), [
    ([], True),  # the default model, MiniLM
    (["--model", "minilm"], True),
    (["--model", "usem3"], False),
    (["--model", "e5-small"], False),
    (["--model", "./my-model"], False),  # a folder: unknown
    (["--model", "./my-model", "--model-languages", "en"], True),
    (["--model", "./my-model", "--model-languages", "es,en"], False),
    (["--embed-url", "http://127.0.0.1:9/v1", "--embed-model", "m"], False),  # an endpoint: unknown
    (["--language", "en"], False),  # the documents said to be English: MiniLM reads them
])
def test_check_warns_once_when_the_model_does_not_read_the_documents(tmp_path, capsys, options, warned):
    docs, questions = spanish_set(tmp_path)
    status = main(["check", str(docs), str(questions), "--strategy", "recursive:64", "--no-cache", *options])
    out, err = capsys.readouterr()
    assert status == 0, err
    lines = [line for line in err.splitlines() if "was trained on" in line]
    assert len(lines) == (1 if warned else 0), err
    assert ("language: en (given)" if "--language" in options else "language: es (detected by py3langid)") in out


def test_a_bad_model_languages_option_is_refused(tmp_path, capsys):
    docs, questions = spanish_set(tmp_path)
    assert main(["check", str(docs), str(questions), "--model-languages", "spanish"]) == 2
    assert "--model-languages 'spanish'" in capsys.readouterr().err


def test_the_run_warns_with_minilm_on_spanish_and_scores_bm25_in_spanish(tmp_path):
    """A run with a stand-in that says it reads English: one warning line, in the report too; BM25 in Spanish
    finds the three command questions first."""
    from rag_tools.chunk_eval.run import evaluate
    from tests.test_chunk_eval import ToyEmbedder

    class EnglishToy(ToyEmbedder):
        languages = ("en",)

    docs, questions = spanish_set(tmp_path)
    seen: list[str] = []
    plans: list[str] = []
    report = evaluate(docs, questions, ["bm25:recursive:64"], k=1, embedder=EnglishToy(), cache=None,
                      on_warning=seen.append, on_plan=plans.append)
    assert sum("was trained on en only" in line for line in seen) == 1
    assert any("was trained on en only" in line for line in report.warnings)
    assert report.results[0].metrics["recall_at_k"] == 1.0
    assert report.versions["language"].startswith("es (detected by py3langid)")
    assert "language: es (detected by py3langid)" in plans[0]
    quiet = evaluate(docs, questions, ["bm25:recursive:64"], k=1, embedder=ToyEmbedder(), cache=None,
                     on_warning=seen.append, language="es")
    assert not any("was trained on" in line for line in quiet.warnings), "a stand-in without languages: unknown"


def test_check_sees_the_language_without_a_model(tmp_path):
    docs, questions = spanish_set(tmp_path)
    result = check(docs, questions, ["bm25:recursive:64"], model="usem3")
    assert result.status == 0 and "language: es" in result.plan
    assert not any("trained on" in w for w in result.warnings)
