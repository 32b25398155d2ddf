"""Render every notebook, with its stored outputs and plots, to a static HTML site.

Usage: python -m scripts.build_site [--out build/site] [notebooks/NN_name.ipynb ...]

Writes OUT/index.html (the contents: each notebook's title, learning goals and time, taken from
its first Markdown cell) and one OUT/NN_name.html per notebook. The notebooks are not re-run: they
are committed executed and nbval checks their outputs. Code cells tagged `guard` (asserts that keep the prose true)
are left out: they are not part of the lesson. Nothing is fetched at build or view time:
plots and images are embedded, the CSS is inlined, and the scripts nbconvert's lab template loads
from CDNs (require.js, MathJax, Mermaid, the widget manager) are left out. The course writes its
formulas in plain Unicode, so no MathJax is needed. Widgets need a kernel: a widget that stored an
HTML picture of itself (the chunk playground does) shows that picture, any other a note. The site's
title is the README's first heading, so the two cannot differ.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import nbformat
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from scripts.project import ROOT, course_notebooks, empty_output_folder

DEFAULT_OUT = ROOT / "build" / "site"
COURSE_TITLE = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[0].removeprefix("# ").strip()
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SOURCES_PAGE = "sources.html"  # docs/SOURCES.md, when a page links to it
# code cells that keep the prose true (scripts/move_guards.py): nbval runs them, the site leaves them out
GUARD_TAG = "guard"
PLOT_TITLE = re.compile(r"""(?:set_title|suptitle|plt\.title)\(\s*f?["']([^"'{}]+)["']""")
IMAGE_OUTPUTS = ("image/png", "image/jpeg", "image/svg+xml")  # outputs shown as an <img>; each gets alt text
MERMAID = re.compile(r"^\s*(```|~~~)\s*mermaid\b", re.MULTILINE)
WIDGET_NOTE = "<p><em>Interactive widget: open this notebook in JupyterLab (<code>make lab</code>) to use it.</em></p>"

# The lab template without its CDN scripts, with a navigation bar and solutions folded away.
PAGE_TEMPLATE = r"""
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}
<style type="text/css">
nav.course-nav { display: flex; gap: 1.5em; padding: 0.6em 1em; border-bottom: 1px solid #ddd;
                 font-family: var(--jp-ui-font-family); font-size: 14px; }
details.course-solution > summary { cursor: pointer; color: #555; margin: 0.3em 0 0.3em 100px;
                                    font-family: var(--jp-ui-font-family); font-size: 13px; }
</style>
{%- endblock extra_css -%}
{%- block body_header -%}
{{ super() }}
<nav class="course-nav">{{ resources.course_nav }}</nav>
{%- endblock body_header -%}
{%- block data_png scoped -%}
{{ super() | replace('<img ', '<img alt="' ~ (output.metadata.get('course_alt', '') | escape_html) ~ '" ', 1) }}
{%- endblock data_png -%}
{%- block data_jpg scoped -%}
{{ super() | replace('<img ', '<img alt="' ~ (output.metadata.get('course_alt', '') | escape_html) ~ '" ', 1) }}
{%- endblock data_jpg -%}
{%- block data_svg scoped -%}
{{ super() | replace('<img ', '<img alt="' ~ (output.metadata.get('course_alt', '') | escape_html) ~ '" ', 1) }}
{%- endblock data_svg -%}
{%- block codecell -%}
{%- if 'solution' in cell.metadata.get('tags', []) -%}
<details class="course-solution"><summary>Reference solution (try the exercise first)</summary>
{{ super() }}
</details>
{%- else -%}
{{ super() }}
{%- endif -%}
{%- endblock codecell -%}
"""

INDEX_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{title}</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 60em;
        margin: 2em auto; padding: 0 1em; line-height: 1.5; color: #222; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 0.6em; vertical-align: top; text-align: left; }}
td.notebook {{ width: 16em; font-weight: 600; }}
td.time {{ width: 12em; color: #555; }}
td ul {{ margin: 0; padding-left: 1.2em; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>The course's notebooks as static pages, with the outputs and plots they produced when they were last
executed. To run and change the code, open the notebooks in JupyterLab (<code>make lab</code>).</p>
<table>
<thead><tr><th>Notebook</th><th>Learning goals</th><th>Time</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
</body>
</html>
"""


@dataclass(frozen=True)
class Contents:
    """What the index shows of one notebook."""

    title: str
    goals: list[str]  # Markdown, one bullet each
    time: str  # the "**Time**" line, or ""


def is_guard(cell: nbformat.NotebookNode) -> bool:
    """A code cell tagged `guard`: asserts that keep the prose true, not part of the lesson."""
    return cell.get("cell_type") == "code" and GUARD_TAG in cell.get("metadata", {}).get("tags", [])


def contents_of(notebook: nbformat.NotebookNode, name: str) -> Contents:
    """The title, learning goals and time of a notebook, from its first Markdown cell."""
    first = next((c for c in notebook.cells if c.cell_type == "markdown"), None)
    lines = first.source.splitlines() if first else []
    title = next((line[2:].strip() for line in lines if line.startswith("# ")), None)
    if title is None:
        raise ValueError(f"{name}: its first Markdown cell needs a `# NN · Title` line")
    goals: list[str] = []
    inside = False
    for line in lines:
        if re.match(r"\*\*Learning goals:?\*\*:?\s*$", line.strip()):
            inside = True
        elif inside and line.startswith("- "):
            goals.append(line[2:].strip())
        elif inside and goals and line.startswith("  ") and line.strip():
            goals[-1] += " " + line.strip()  # a bullet continued on the next line
        elif inside and goals:
            break
    if not goals:
        raise ValueError(f"{name}: its first Markdown cell needs a **Learning goals** list of `- ` bullets")
    start = next((k for k, line in enumerate(lines) if line.strip().startswith("**Time")), len(lines))
    end = next((k for k in range(start, len(lines)) if not lines[k].strip()), len(lines))
    time = " ".join(line.strip() for line in lines[start:end])  # to the end of its paragraph
    return Contents(title, goals, time)


def _inline_markdown(text: str) -> str:
    rendered = markdown2html_mistune(text).strip()
    return re.sub(r"^<p>(.*)</p>$", r"\1", rendered, flags=re.DOTALL)


def _prepared(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Guard cells are left out; widget views (they need a kernel and a CDN script) become their stored HTML
    or a note; plots get alt text."""
    notebook.metadata.pop("widgets", None)
    notebook.cells = [c for c in notebook.cells if not is_guard(c)]
    for cell in notebook.cells:
        titles = PLOT_TITLE.findall(cell.source) if cell.cell_type == "code" else []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                data.setdefault("text/html", WIDGET_NOTE)
            if any(kind in data for kind in IMAGE_OUTPUTS):
                alt = "Plot: " + "; ".join(titles) if titles else "Plot made by the code cell above"
                output.setdefault("metadata", {})["course_alt"] = alt
    return notebook


def _uses_mermaid(notebook: nbformat.NotebookNode) -> bool:
    """A Markdown cell with a ```mermaid block, or a Mermaid output: the site cannot draw either offline."""
    return any((c.cell_type == "markdown" and MERMAID.search(c.source))
               or any("text/vnd.mermaid" in o.get("data", {}) for o in c.get("outputs", []))
               for c in notebook.cells)


class _Images(HTMLParser):
    """The attributes of every <img> in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.found.append({name: value or "" for name, value in attrs})


def page_images(page: str) -> list[dict[str, str]]:
    """The attributes (src, alt, ...) of every <img> in an HTML page, in page order."""
    parser = _Images()
    parser.feed(page)
    return parser.found


def _copy_images(page: str, name: str, folder: Path, out: Path) -> list[Path]:
    """Copy the local images a page shows (paths relative to the notebook's folder) to the same paths under
    `out`; return them. Raise ValueError for an image without alt text, missing, or outside the folder."""
    copied, problems = [], []
    for image in page_images(page):
        src = image.get("src", "")
        if not image.get("alt", "").strip():
            problems.append(f"an image has no alt text ({src[:60]})")
        if not src or re.match(r"(data|https?|file):|/", src):  # embedded, remote (caught by the tests) or absolute
            continue
        relative = Path(src.split("#")[0].split("?")[0])
        source = (folder / relative).resolve()
        if folder.resolve() not in source.parents:
            problems.append(f"the image {src} lies outside {folder.name}/: the site cannot link it")
        elif not source.is_file():
            problems.append(f"the image {src} does not exist")
        else:
            target = out / source.relative_to(folder.resolve())
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied.append(target)
    if problems:
        raise ValueError(f"{name}: " + "; ".join(problems))
    return copied


def _nav(index: int, pages: list[tuple[str, Contents]]) -> str:
    links = ['<a href="index.html">Contents</a>']
    if index > 0:
        links.append(f'<a href="{pages[index - 1][0]}">&larr; {html.escape(pages[index - 1][1].title)}</a>')
    if index + 1 < len(pages):
        links.append(f'<a href="{pages[index + 1][0]}">{html.escape(pages[index + 1][1].title)} &rarr;</a>')
    return " ".join(links)


def _link_notebooks(page: str, names: set[str]) -> str:
    """Links between notebooks point at their pages; links to docs/SOURCES.md at the site's sources page."""
    page = re.sub(r'href="\.\./docs/SOURCES\.md(#[^"]*)?"', lambda m: f'href="{SOURCES_PAGE}{m[1] or ""}"', page)
    return re.sub(r'href="(\d\d_[^"/]+)\.ipynb(#[^"]*)?"',
                  lambda m: f'href="{m[1]}.html{m[2] or ""}"' if m[1] + ".ipynb" in names else m[0], page)


def _sources_page() -> str:
    """docs/SOURCES.md as a page of the site (the notebooks' source keys link to its anchors)."""
    body = markdown2html_mistune((ROOT / "docs" / "SOURCES.md").read_text(encoding="utf-8"))
    return (INDEX_TEMPLATE.split("<h1>")[0].format(title=html.escape(COURSE_TITLE) + " · Sources")
            + '<p><a href="index.html">Contents</a></p>\n' + body + "\n</body>\n</html>\n")


def build(out: Path = DEFAULT_OUT, notebooks: list[Path] | None = None) -> list[Path]:
    """Write the site to `out` (emptied first); return the pages written, index first."""
    notebooks = course_notebooks() if notebooks is None else notebooks
    if not notebooks:
        raise FileNotFoundError(f"no notebooks given and none match {ROOT / 'notebooks'}/[0-9][0-9]_*.ipynb")
    loaded = [(path, nbformat.read(path, as_version=4)) for path in notebooks]
    pages = [(path.stem + ".html", contents_of(nb, path.name)) for path, nb in loaded]
    exporter = HTMLExporter(
        template_name="lab",
        template_file="course_page.html.j2",
        extra_loaders=[jinja2.DictLoader({"course_page.html.j2": PAGE_TEMPLATE})],
        embed_images=False,  # Markdown images keep their relative links; the files are copied beside the pages
    )
    empty_output_folder(out, ".course-site")
    names = {path.name for path in notebooks}
    written = [out / "index.html"]
    for path, notebook in loaded:
        if _uses_mermaid(notebook):
            raise ValueError(f"{path.name}: uses Mermaid, which the site cannot draw without a script from a CDN; "
                             "draw the picture in scripts/draw_figures.py and show the SVG instead")
    for index, (path, notebook) in enumerate(loaded):
        resources = {"metadata": {"name": pages[index][1].title, "path": str(path.parent)},
                     "course_nav": _nav(index, pages)}
        body, _ = exporter.from_notebook_node(_prepared(notebook), resources=resources)
        _copy_images(body, path.name, path.parent, out)
        written.append(out / pages[index][0])
        written[-1].write_text(_link_notebooks(body, names), encoding="utf-8")
    rows = "\n".join(
        f'<tr><td class="notebook"><a href="{page}">{html.escape(c.title)}</a></td>'
        f'<td><ul>{"".join(f"<li>{_inline_markdown(goal)}</li>" for goal in c.goals)}</ul></td>'
        f'<td class="time">{_inline_markdown(c.time)}</td></tr>'
        for page, c in pages
    )
    written[0].write_text(INDEX_TEMPLATE.format(title=html.escape(COURSE_TITLE), rows=rows), encoding="utf-8")
    if any(f'href="{SOURCES_PAGE}' in page.read_text(encoding="utf-8") for page in written[1:]):
        written.append(out / SOURCES_PAGE)
        written[-1].write_text(_sources_page(), encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to render (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: build/site)")
    args = parser.parse_args(argv)
    try:
        written = build(args.out.resolve(), [p.resolve() for p in args.notebooks] or None)
    except (ValueError, FileExistsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    pages = sum(p.name != SOURCES_PAGE for p in written) - 1
    print(f"site: {pages} notebooks and an index in {args.out}; open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
