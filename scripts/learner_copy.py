"""The learner's own copy of the course (`make lab`), a fresh copy of one notebook (`make fresh NB=03`),
and the solved notebooks to read (`make lab-solutions`).

Usage:
  python -m scripts.learner_copy                  # create my-course/, or add the notebooks it lacks
  python -m scripts.learner_copy --fresh 03       # a fresh copy of notebook 03 (yours moves to my-course/replaced/)
  python -m scripts.learner_copy --solutions      # build/solutions/: the solved notebooks, rebuilt each time

The learner's copy is the student edition (every reference solution replaced by a stub, see
build_student_edition.py), written once into a git-ignored folder at the top of the repository:

  my-course/
    notebooks/NN_name.ipynb    yours: written on first use and never overwritten
    notebooks/figures/         the course's diagrams (what the Markdown shows): a copy, brought up to date
                               on each run (JupyterLab does not serve files through a link out of its folder)
    data -> ../data            links, so the notebooks' `../data/...` and `../results/...` read the
    results -> ../results      course's own folders (nothing is copied)
    replaced/                  your earlier copies, kept by --fresh
    .learner-copy.json         what was written, with its sha256 (to tell an untouched notebook)

A later run, or a new version of the course, adds the notebooks the copy lacks and changes nothing
else: a notebook you have (edited or not) is never written again; it only says which ones the course
has changed since, and how to take the new version (`--fresh NN`). The committed notebooks in
notebooks/ stay the instructor's executed copy that nbval checks; JupyterLab never opens them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from scripts.build_student_edition import FormatError, copy_inside, files_inside, student_notebook
from scripts.project import COPY_IGNORE, ROOT, course_notebooks, empty_output_folder, folders_beside

LEARNER_COPY = ROOT / "my-course"  # git-ignored; not under build/, which `make clean` deletes
SOLUTIONS = ROOT / "build" / "solutions"  # rebuilt on each `make lab-solutions`
MANIFEST = ".learner-copy.json"
SOLUTIONS_MARKER = ".solutions-copy"
REPLACED = "replaced"
FRESH_HINT = "make fresh NB={number}"  # how the messages tell the learner to get a fresh copy


@dataclass
class CopyReport:
    """What one run did to the learner's copy."""

    out: Path
    created: bool = False
    added: list[str] = field(default_factory=list)  # notebooks written by this run
    kept: list[str] = field(default_factory=list)  # notebooks already there, left as they were
    newer: list[str] = field(default_factory=list)  # kept, but the course's version has changed since
    edited: list[str] = field(default_factory=list)  # kept notebooks that differ from what was written
    not_in_course: list[str] = field(default_factory=list)  # the learner's notebooks the course no longer has
    links: list[str] = field(default_factory=list)  # folders made reachable from the notebooks this run
    figures: list[str] = field(default_factory=list)  # files the Markdown shows, written or brought up to date
    replaced: list[tuple[str, Path | None]] = field(default_factory=list)  # --fresh: name, where yours went

    def lines(self) -> list[str]:
        where = _shown(self.out / "notebooks")
        out = []
        if self.created:
            out.append(f"Your copy of the course: {where}/ ({len(self.added)} notebooks, solutions removed). "
                       "Write your answers there; it is yours and never overwritten.")
        elif self.added:
            out.append(f"Added to {where}/ (new in the course): {', '.join(self.added)}")
        for name, backup in self.replaced:
            kept = f"; yours is kept as {_shown(backup)}" if backup else " (yours was unchanged)"
            out.append(f"Fresh copy of {name}{kept}. If it is open in JupyterLab, close it without saving "
                       "and open it again.")
        if self.kept and not self.replaced:
            out.append(f"Your copy: {where}/ ({len(self.kept)} notebooks kept as you left them).")
        if self.newer:
            names = [f"{name} ({'changed by you' if name in self.edited else 'unchanged by you'})"
                     for name in self.newer]
            out.append(f"Changed in the course since your copy was made: {', '.join(names)}. "
                       f"To take the new version of one: {FRESH_HINT.format(number=self.newer[0][:2])} "
                       f"(a copy you changed moves to {_shown(self.out / REPLACED)}/).")
        if self.figures and not self.created:
            out.append(f"The course's figures brought up to date in {where}/: {', '.join(self.figures)}")
        if self.not_in_course:
            out.append(f"Yours, no longer in the course (kept): {', '.join(self.not_in_course)}")
        if not self.replaced:
            out.append(f"A fresh copy of one notebook: {FRESH_HINT.format(number='03')} (yours is kept in "
                       f"{_shown(self.out / REPLACED)}/). The solved notebooks: make lab-solutions.")
        return out


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _student_bytes(path: Path) -> bytes:
    try:
        notebook = student_notebook(nbformat.read(path, as_version=4))
    except FormatError as error:
        raise FormatError(f"{path.name}: {error}") from None
    text = nbformat.writes(notebook)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")  # as nbformat.write writes it


def _read_manifest(out: Path) -> dict:
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"notebooks": {}}
    return data if isinstance(data.get("notebooks"), dict) else {"notebooks": {}}


def _write_manifest(out: Path, manifest: dict) -> None:
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    temporary = out / (MANIFEST + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, out / MANIFEST)


def _link_folders(out: Path, notebooks: list[Path]) -> list[str]:
    """Make each folder the notebooks read through `..` (data/, results/) reachable beside out/notebooks:
    a relative symbolic link to the course's folder, or a copy where links are not allowed."""
    made = []
    for folder in folders_beside(notebooks):
        target = out / folder
        if target.exists() or target.is_symlink():
            continue
        try:
            target.symlink_to(os.path.relpath(ROOT / folder, out), target_is_directory=True)
        except OSError:  # e.g. Windows without the right to make links
            shutil.copytree(ROOT / folder, target, ignore=COPY_IGNORE)
        made.append(folder)
    return made


def _write_new(path: Path, data: bytes) -> None:
    """Write a notebook that does not exist yet; never replaces a file (a race with an editor loses nothing)."""
    with path.open("xb") as handle:
        handle.write(data)


def update(out: Path = LEARNER_COPY, notebooks: list[Path] | None = None) -> CopyReport:
    """Create the learner's copy in `out`, or add the notebooks it lacks. Never rewrites a notebook it has."""
    notebooks = course_notebooks() if notebooks is None else notebooks
    students = {path.name: _student_bytes(path) for path in notebooks}  # every notebook checked before writing
    inside = files_inside(notebooks)  # and every figure they show
    report = CopyReport(out, created=not (out / "notebooks").is_dir())
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    report.links = _link_folders(out, notebooks)
    report.figures = copy_inside(inside, out / "notebooks")
    manifest = _read_manifest(out)
    written = manifest["notebooks"]
    for name, data in students.items():
        path = out / "notebooks" / name
        if path.exists():
            report.kept.append(name)
            if written.get(name) != _sha256(path.read_bytes()):
                report.edited.append(name)
            if name in written and written[name] != _sha256(data):
                report.newer.append(name)
            continue
        _write_new(path, data)
        written[name] = _sha256(data)
        report.added.append(name)
    known = set(students)
    report.not_in_course = sorted(p.name for p in (out / "notebooks").glob("[0-9][0-9]_*.ipynb") if p.name not in known)
    _write_manifest(out, manifest)
    return report


def find_notebook(selector: str, notebooks: list[Path] | None = None) -> Path:
    """The course notebook named by `selector`: "03", "3", "03_fixed_size_and_overlap", or a path to it."""
    notebooks = course_notebooks() if notebooks is None else notebooks
    name = Path(selector).name
    if name.isdigit():
        name = f"{int(name):02d}_"
    matches = [p for p in notebooks if p.name == name or p.stem == name or p.name.startswith(name)]
    if len(matches) != 1:
        choices = ", ".join(p.name[:2] for p in notebooks)
        raise ValueError(f"{selector!r} names {'no' if not matches else 'more than one'} course notebook; "
                         f"give its number, one of {choices}")
    return matches[0]


def fresh(selectors: list[str], out: Path = LEARNER_COPY, notebooks: list[Path] | None = None) -> CopyReport:
    """Replace the learner's copy of each selected notebook by a fresh student copy.

    The learner's version is moved to out/replaced/NN_name.<time>.ipynb first, unless it is exactly
    what was written (nothing of theirs to keep). The other notebooks are not touched."""
    notebooks = course_notebooks() if notebooks is None else notebooks
    chosen = [find_notebook(selector, notebooks) for selector in selectors]
    report = update(out, notebooks)  # the copy exists, with every notebook it lacks
    manifest = _read_manifest(out)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    for path in chosen:
        data = _student_bytes(path)
        mine = out / "notebooks" / path.name
        if path.name in report.added:  # it was missing: just written, fresh
            report.replaced.append((path.name, None))
            continue
        backup = None
        if _sha256(mine.read_bytes()) != manifest["notebooks"].get(path.name):
            backup = out / REPLACED / f"{path.stem}.{stamp}.ipynb"
            backup.parent.mkdir(exist_ok=True)
            counter = 1
            while backup.exists():
                counter += 1
                backup = out / REPLACED / f"{path.stem}.{stamp}-{counter}.ipynb"
            os.replace(mine, backup)
        else:
            mine.unlink()
        _write_new(mine, data)
        manifest["notebooks"][path.name] = _sha256(data)
        report.replaced.append((path.name, backup))
        if path.name in report.newer:
            report.newer.remove(path.name)
    _write_manifest(out, manifest)
    return report


def solutions(out: Path = SOLUTIONS, notebooks: list[Path] | None = None) -> list[Path]:
    """The solved notebooks, to read: a copy of the committed ones (outputs kept, solution cells shown,
    files read-only), rebuilt from scratch on each run, so nothing done there reaches notebooks/."""
    notebooks = course_notebooks() if notebooks is None else notebooks
    inside = files_inside(notebooks)
    empty_output_folder(out, SOLUTIONS_MARKER)
    (out / "notebooks").mkdir()
    _link_folders(out, notebooks)
    copy_inside(inside, out / "notebooks")
    written = []
    for path in notebooks:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if "solution" in cell.metadata.get("tags", []):
                jupyter = cell.metadata.get("jupyter", {})
                jupyter.pop("source_hidden", None)
                if not jupyter:
                    cell.metadata.pop("jupyter", None)
        target = out / "notebooks" / path.name
        nbformat.write(notebook, target)
        target.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)  # JupyterLab shows it read-only (unless root)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="folder of the copy (default: my-course/, or build/solutions/ with --solutions)")
    parser.add_argument("--fresh", nargs="+", metavar="NN",
                        help="replace your copy of these notebooks by fresh ones (yours moves to replaced/)")
    parser.add_argument("--solutions", action="store_true", help="rebuild the read-only copy of the solved notebooks")
    args = parser.parse_args(argv)
    try:
        if args.solutions:
            out = (args.out or SOLUTIONS).resolve()
            written = solutions(out)
            print(f"The solved notebooks ({len(written)}), to read: {_shown(out / 'notebooks')}/ "
                  "(rebuilt on each `make lab-solutions`: write your answers in my-course/, from `make lab`).")
            return 0
        out = (args.out or LEARNER_COPY).resolve()
        report = fresh(args.fresh, out) if args.fresh else update(out)
    except (FormatError, FileExistsError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
