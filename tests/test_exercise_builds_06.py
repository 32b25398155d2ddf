"""The builds of notebook 06 cannot be fooled (issue 33): Exercise 6.1 (c), late chunking end to end, and
Exercise 6.2 (b), late chunking in macro windows.

Notebook 06 is run once, in this process (tests/notebook_checks.py), with the model it loads. Then each new
part's self-check cell is run again with the learner's function replaced: by plausible wrong answers, which
must raise `SelfCheckError`, and by the reference solution and another right answer, which must pass. Before
a check runs, the solution cells of the notebook's exercises are run again in a copy of the namespace, so a
learner's function calls the reference `token_span`, `pool` and `plan_windows`.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import torch
from notebook_checks import Notebook, in_notebooks

from course_lib import late
from course_lib.exercise_hints import HINTS
from course_lib.exercises import SelfCheckError
from scripts import build_student_edition as edition

NAME = "06_late_chunking_xr12.ipynb"
LATE, WINDOWS = ("Exercise 6.1", 2), ("Exercise 6.2", 1)  # (exercise, index of the part among its solution cells)


@pytest.fixture(scope="module")
def nb06():
    return Notebook(NAME)


def _parts(nb: Notebook, name: str) -> list[edition.Exercise]:
    return nb.parts(name)


def run_part(nb: Notebook, part: tuple[str, int], **learner) -> str:
    """Run one part's check cell with the learner's functions in place; return what it printed."""
    return nb.run_part(*part, again=("Exercise 6.1", "Exercise 6.2"), **learner)[0]


def accepts(nb: Notebook, part: tuple[str, int], **learner) -> None:
    printed = run_part(nb, part, **learner)
    assert f"✓ {part[0]}: all" in printed and "not solved" not in printed, printed


def rejects(nb: Notebook, part: tuple[str, int], **learner) -> str:
    with pytest.raises(SelfCheckError) as caught:
        run_part(nb, part, **learner)
    return str(caught.value)


def test_the_parts_are_where_the_notebook_says(nb06):
    defined = {name: [set(re.findall(r"^def (\w+)", nb06.notebook.cells[e.solution].source, re.MULTILINE))
                      for e in _parts(nb06, name)] for name in ("Exercise 6.1", "Exercise 6.2")}
    assert defined == {"Exercise 6.1": [{"token_span"}, {"pool"}, {"late_vectors"}],
                       "Exercise 6.2": [{"plan_windows", "handbook_overlap"}, {"late_windows"}]}
    cells = nb06.notebook.cells
    assert "**(c)" in cells[_parts(nb06, "Exercise 6.1")[2].solution - 1].source
    assert "**(b)" in cells[_parts(nb06, "Exercise 6.2")[1].solution - 1].source


@pytest.mark.parametrize("part", [LATE, WINDOWS], ids=["6.1c", "6.2b"])
def test_each_part_accepts_the_reference_solution(nb06, part):
    accepts(nb06, part)


@pytest.mark.parametrize("part", [LATE, WINDOWS], ids=["6.1c", "6.2b"])
def test_a_stub_is_reported_not_raised(nb06, part):
    function = {LATE: "late_vectors", WINDOWS: "late_windows"}[part]

    def stub(*args):
        raise NotImplementedError(f"{part[0]}: replace this line with your solution")

    printed = run_part(nb06, part, **{function: stub})
    assert "not solved yet" in printed and "✓" not in printed, printed


def test_no_visible_cell_shows_a_line_of_the_new_solutions(nb06):
    solutions = [_parts(nb06, "Exercise 6.1")[2].solution, _parts(nb06, "Exercise 6.2")[1].solution]
    lines = set()
    for index in solutions:
        block = nb06.notebook.cells[index].source.split(edition.BEGIN)[1].split(edition.END)[0]
        lines |= {line.strip() for line in block.splitlines() if len(line.strip()) > 20}
    shown = [line for i, cell in enumerate(nb06.notebook.cells) if i not in solutions
             for line in lines if line in cell.source]
    assert not shown, f"visible cells show solution lines: {shown}"


@pytest.mark.parametrize("name", ["Exercise 6.1 (late)", "Exercise 6.2 (windows)"])
def test_the_new_parts_have_three_hint_tiers_outside_the_check_cells(nb06, name):
    assert len(HINTS[name]) == 3
    check = nb06.notebook.cells[_parts(nb06, name.split(" (")[0])[-1].check].source
    assert f'hint=HINTS["{name}"]' in check
    assert not any(tier[:40] in check for tier in HINTS[name])


# --- Exercise 6.1 (c): late_vectors(model, text, spans) ------------------------------------------------

def _reference_pool(token_vectors, offsets, spans):
    rows = []
    for start, end in spans:
        hits = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
        mean = np.asarray(token_vectors)[hits[0]:hits[-1] + 1].mean(axis=0)
        rows.append(mean / np.linalg.norm(mean))
    return np.array(rows)


def _tokens(model, text):
    return model.encode(text, output_value="token_embeddings").cpu().numpy()


def _naive(model, text, spans):
    """Wrong: each chunk encoded on its own, the very thing late chunking replaces."""
    return model.encode([text[s:e] for s, e in spans], normalize_embeddings=True)


def _specials_in_the_mean(model, text, spans):
    """Wrong: [CLS] joins the chunk that holds the first character, [SEP] the one that holds the last."""
    offsets = model.tokenizer(text, return_offsets_mapping=True)["offset_mapping"]
    offsets = [(0, 1), *offsets[1:-1], (len(text) - 1, len(text))]
    return _reference_pool(_tokens(model, text), offsets, spans)


def _not_normalized(model, text, spans):
    """Wrong: the means, not divided by their lengths."""
    offsets, vectors = model.tokenizer(text, return_offsets_mapping=True)["offset_mapping"], _tokens(model, text)
    out = []
    for s, e in spans:
        hits = [i for i, (a, b) in enumerate(offsets) if b > a and a < e and b > s]
        out.append(vectors[hits[0]:hits[-1] + 1].mean(axis=0))
    return np.array(out)


def _offsets_without_specials(model, text, spans):
    """Wrong (off by one): offsets of the content tokens alone, token vectors with [CLS] in row 0."""
    offsets = model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return _reference_pool(_tokens(model, text), offsets, spans)


def _counted_pieces(model, text, spans):
    """Wrong: the glossary's trick, a boundary found by counting the tokens of the text before it."""
    vectors, out = _tokens(model, text), []
    for s, e in spans:
        first = len(model.tokenizer(text[:s])["input_ids"]) - 1
        stop = len(model.tokenizer(text[:e])["input_ids"]) - 1
        mean = vectors[first:max(stop, first + 1)].mean(axis=0)
        out.append(mean / np.linalg.norm(mean))
    return np.array(out)


def _one_vector_for_the_document(model, text, spans):
    """Wrong: the document's own sentence vector for every chunk."""
    return np.repeat(model.encode([text], normalize_embeddings=True), len(spans), axis=0)


WRONG_LATE = [_naive, _specials_in_the_mean, _not_normalized, _offsets_without_specials, _counted_pieces,
              _one_vector_for_the_document]


def _for_the_notebook(nb: Notebook, build):
    """The learner's signature: the notebook's `model` is a global, not an argument."""
    def learner(*args):
        return build(nb["model"], *args)
    learner.__name__ = build.__name__.strip("_")
    return learner


@pytest.mark.parametrize("wrong", WRONG_LATE, ids=lambda f: f.__name__.strip("_"))
def test_6_1c_rejects_a_wrong_late_chunker(nb06, wrong):
    message = rejects(nb06, LATE, late_vectors=_for_the_notebook(nb06, wrong))
    assert "expected" in message or "raised" in message


def _through_the_transformer(model, text, spans):
    """Right: the tokenizer's ids through the transformer itself, pooled without the learner's pool."""
    enc = model.tokenizer(text, return_offsets_mapping=True)
    with torch.inference_mode():
        hidden = model[0].auto_model(input_ids=torch.tensor([enc["input_ids"]])).last_hidden_state[0].numpy()
    return _reference_pool(hidden, enc["offset_mapping"], spans)


def test_6_1c_accepts_another_right_answer(nb06):
    accepts(nb06, LATE, late_vectors=_for_the_notebook(nb06, _through_the_transformer))


def test_6_1c_cases_hold_the_edge_cases(nb06):
    namespace = dict(nb06.ns)
    source = nb06.notebook.cells[_parts(nb06, "Exercise 6.1")[2].check].source
    with in_notebooks():
        exec(source[:source.index("check_function(")], namespace)
        cases = namespace["late_cases"]()
    model = nb06["model"]
    layouts = [(text, spans) for (text, spans), _ in cases]
    assert any(spans == [(0, len(text))] for text, spans in layouts), "the whole text as one chunk"
    assert any(len(spans) == 1 and re.fullmatch(r"\w+", text[slice(*spans[0])]) for text, spans in layouts), "one word"
    tiled = [(t, s) for t, s in layouts if len(s) > 5]
    assert tiled and all(a[1] <= b[0] for _, s in tiled for a, b in itertools.pairwise(s)), "adjacent chunks"
    inside_words = 0
    for text, spans in tiled:
        offsets = late.tokenize_document(model, text).offsets
        inside_words += sum(any(a < cut < b for a, b in offsets) for span in spans for cut in span)
    assert inside_words >= 2, "chunks that start or end inside a token"
    assert {text for text, _ in layouts} == {nb06["doc_xr12"], nb06["manual"]}


# --- Exercise 6.2 (b): late_windows(model, text, spans, window, overlap) -------------------------------

def _run(model, window_ids):
    with torch.inference_mode():
        return model[0].auto_model(input_ids=torch.tensor([window_ids])).last_hidden_state[0].numpy()


def _content(model, text):
    enc = model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return enc["input_ids"], enc["offset_mapping"], model.tokenizer.cls_token_id, model.tokenizer.sep_token_id


def _windowed(keep, with_specials=True, plan_overlap=None):
    """A late_windows built from a rule for what each window keeps (rows of its content tokens)."""
    def late_windows(model, text, spans, window, overlap):
        ids, offsets, cls, sep = _content(model, text)
        plan = late.macro_windows(len(ids), window - 2, overlap if plan_overlap is None else plan_overlap)
        kept = []
        for w in plan:
            hidden = _run(model, [cls, *ids[w.start:w.end], sep])[1:-1] if with_specials else \
                _run(model, ids[w.start:w.end])
            kept.append(keep(hidden, w))
        return _reference_pool(np.concatenate(kept), offsets, spans)
    return late_windows


def _middle(hidden, w):
    return hidden[w.keep_start - w.start:w.keep_end - w.start]


def _one_pass(model, text, spans, window, overlap):
    """Wrong: the window is ignored, the whole text goes through the model in one pass."""
    ids, offsets, cls, sep = _content(model, text)
    return _reference_pool(_run(model, [cls, *ids, sep])[1:-1], offsets, spans)


def _forgets_the_cls_row(model, text, spans, window, overlap):
    """Wrong (off by one): keeps rows keep_start - start.. of the output, whose row 0 is [CLS]."""
    ids, offsets, cls, sep = _content(model, text)
    kept = [_run(model, [cls, *ids[w.start:w.end], sep])[w.keep_start - w.start:w.keep_end - w.start]
            for w in late.macro_windows(len(ids), window - 2, overlap)]
    return _reference_pool(np.concatenate(kept), offsets, spans)


def _later_window_wins(model, text, spans, window, overlap):
    """Wrong: every window writes all its tokens, a later one over an earlier: its first tokens lack context."""
    ids, offsets, cls, sep = _content(model, text)
    vectors = np.zeros((len(ids), model[0].auto_model.config.hidden_size), dtype=np.float32)
    for w in late.macro_windows(len(ids), window - 2, overlap):
        vectors[w.start:w.end] = _run(model, [cls, *ids[w.start:w.end], sep])[1:-1]
    return _reference_pool(vectors, offsets, spans)


WRONG_WINDOWS = {
    "one pass, no windows": _one_pass,
    "whole windows joined": _windowed(lambda hidden, w: hidden),
    "forgets the [CLS] row": _forgets_the_cls_row,
    "no [CLS] and [SEP] around a window": _windowed(_middle, with_specials=False),
    "no overlap": _windowed(_middle, plan_overlap=0),
    "later window wins": _later_window_wins,
}


@pytest.mark.parametrize("wrong", sorted(WRONG_WINDOWS))
def test_6_2b_rejects_a_wrong_windowing(nb06, wrong):
    message = rejects(nb06, WINDOWS, late_windows=_for_the_notebook(nb06, WRONG_WINDOWS[wrong]))
    assert "expected" in message or "raised" in message


def _batched(model, text, spans, window, overlap):
    """Right: the windows stacked into one forward pass (they all have one length when there are several)."""
    ids, offsets, cls, sep = _content(model, text)
    plan = late.macro_windows(len(ids), window - 2, overlap)
    with torch.inference_mode():
        hidden = model[0].auto_model(
            input_ids=torch.tensor([[cls, *ids[w.start:w.end], sep] for w in plan])).last_hidden_state.numpy()
    kept = [row[1 + w.keep_start - w.start:1 + w.keep_end - w.start] for row, w in zip(hidden, plan)]
    return _reference_pool(np.concatenate(kept), offsets, spans)


def test_6_2b_accepts_another_right_answer(nb06):
    accepts(nb06, WINDOWS, late_windows=_for_the_notebook(nb06, _batched))


def test_6_2b_cases_use_several_windows_and_one(nb06):
    namespace = dict(nb06.ns)
    source = nb06.notebook.cells[_parts(nb06, "Exercise 6.2")[1].check].source
    exec(source[:source.index("check_function(")], namespace)
    model = nb06["model"]
    counts = [len(late.macro_windows(len(late.tokenize_document(model, text).ids), window - 2, overlap))
              for (text, _, window, overlap), _ in namespace["window_cases"]]
    overlaps = [overlap for (*_, overlap), _ in namespace["window_cases"]]
    assert 1 in counts and max(counts) >= 5, counts
    assert 0 in overlaps and any(o > 0 and c > 1 for o, c in zip(overlaps, counts))
