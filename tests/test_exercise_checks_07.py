"""Exercise 7.6 (the learner's chunker for Python, by function and class with `ast`; Extra practice since issue
44, 7.5 (b) before) cannot be fooled (issue 33).

Notebook 07's set-up cell, the reference solution of Exercise 7.5 (`line_starts`, `definition_spans`) and 7.5's
check (it builds `MODULES`) run once, in this process (tests/notebook_checks.py); then the self-check cell of
7.6 runs with `python_chunks` replaced: by plausible wrong chunkers, which it must reject with a
`SelfCheckError`, and by right ones, which it must accept.
"""

from __future__ import annotations

import ast

import pytest
from notebook_checks import Notebook

SETUP, DEFINITIONS, MODULES = "10bd337c", "4e65fe2a", "ex75a-check"  # 7.5's check builds MODULES, used in 7.6's


@pytest.fixture(scope="module")
def nb07():
    return Notebook("07_structure_aware_chunking.ipynb", [SETUP, DEFINITIONS, MODULES])


def chunker(nb: Notebook, *, split=lambda has_methods, too_big: has_methods and too_big, strip=True,
            class_code=True, module_code=True, method_name=lambda cls, method: method, module_meta=None):
    """A python_chunks with one mistake switched on; with the defaults it is right."""
    Chunk, count_tokens = nb["Chunk"], nb["count_tokens"]
    line_starts, definition_spans = nb["line_starts"], nb["definition_spans"]

    def python_chunks(source, size=200, tokenizer="cl100k_base"):
        starts, chunks = line_starts(source), []

        def emit(a, b, **metadata):
            if strip:
                text = source[a:b]
                a, b = a + len(text) - len(text.lstrip()), a + len(text.rstrip())
            if source[a:b].strip():
                chunks.append(Chunk(source[a:b], a, b, count_tokens(source[a:b], tokenizer), metadata))

        position = 0
        for a, b, name, node in definition_spans(source, ast.parse(source).body, starts):
            if module_code:
                emit(position, a, **(module_meta or {"kind": "module code"}))
            methods = definition_spans(source, node.body, starts) if isinstance(node, ast.ClassDef) else []
            if split(bool(methods), count_tokens(source[a:b], tokenizer) > size):
                emit(a, methods[0][0], kind="class header", name=name)
                inner = methods[0][0]
                for ma, mb, method, _ in methods:
                    if class_code:
                        emit(inner, ma, kind="class code", name=name)
                    emit(ma, mb, kind="method", name=method_name(name, method))
                    inner = mb
                if class_code:
                    emit(inner, b, kind="class code", name=name)
            else:
                emit(a, b, kind="class" if isinstance(node, ast.ClassDef) else "function", name=name)
            position = b
        if module_code:
            emit(position, len(source), **(module_meta or {"kind": "module code"}))
        return chunks

    return python_chunks


WRONG = {
    "splits every class that has methods": dict(split=lambda has_methods, too_big: has_methods),
    "never splits a class": dict(split=lambda has_methods, too_big: False),
    "leaves the white space on": dict(strip=False),
    "drops the code between and after methods": dict(class_code=False),
    "drops the module code": dict(module_code=False),
    "names a method without its class": dict(method_name=lambda cls, method: method),
    "gives module code a name": dict(module_meta={"kind": "module code", "name": None}),
}
RIGHT = dict(method_name=lambda cls, method: f"{cls}.{method}")


@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_7_6_rejects(nb07, wrong):
    settings = {**RIGHT, **WRONG[wrong]}
    message = nb07.rejects("Exercise 7.6", python_chunks=chunker(nb07, **settings))
    assert "size " in message and "a source of" in message, message


def test_7_6_accepts_the_reference(nb07):
    nb07.accepts("Exercise 7.6", **nb07.reference("Exercise 7.6"))


def test_7_6_accepts_a_chunker_written_another_way(nb07):
    nb07.accepts("Exercise 7.6", python_chunks=chunker(nb07, **RIGHT))


def test_7_6_the_check_cell_shows_no_line_of_the_solution(nb07):
    exercise = nb07.exercises["Exercise 7.6"]
    solution = nb07.notebook.cells[exercise.solution].source.split("# BEGIN SOLUTION")[1]
    lines = {line.strip() for line in solution.splitlines() if len(line.strip()) > 20 and "END SOLUTION" not in line}
    check = nb07.notebook.cells[exercise.check].source
    assert not [line for line in lines if line in check]
