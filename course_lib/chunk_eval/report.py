"""chunk-eval's outputs for people: the terminal table, the summary line, the figure and the HTML report."""

from __future__ import annotations

import base64
import html
import io

from course_lib.chunk_eval.inputs import _one_line
from course_lib.chunk_eval.run import EvalReport
from course_lib.display import chunks_to_html

__all__ = ["format_table", "render_html"]

MISSED_SHOWN = 25  # questions every strategy missed, shown in the HTML report


COLUMNS = (("recall_at_k", "recall@{k}"), ("mrr", "MRR"), ("ndcg_at_10", "nDCG@10"),
           ("span_recall", "span recall"), ("iou", "IoU"))


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def format_table(report: EvalReport, *, seconds: bool = True) -> str:
    """The results as a plain-text table, best first, metrics in percent (`seconds=False`: no timings)."""
    head = ["strategy", *(title.format(k=report.k) for _, title in COLUMNS), "chunks", "mean tokens", "index"]
    rows = [[r.strategy, *(f"{100 * r.metrics[m]:.1f}" for m, _ in COLUMNS), str(r.chunks), f"{r.mean_tokens:.0f}",
             _size(r.index_bytes)] for r in report.results]
    if seconds:
        head.append("seconds")
        for row, r in zip(rows, report.results):
            row.append(f"{r.seconds:.1f}")
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    return "\n".join([line(head), line(["-" * w for w in widths]), *map(line, rows)])


def _summary(report: EvalReport) -> str:
    n_bytes = sum(len(d.text.encode("utf-8")) for d in report.documents)
    scope = (f"span metrics over a budget of {report.budget} tokens" if report.budget
             else f"span metrics over top {report.k}")
    text = (f"{len(report.documents)} documents ({_size(n_bytes)}), {len(report.questions)} questions, "
            f"{len(report.results)} strategies; {scope}; metrics in percent")
    if report.skipped:
        more = len(report.skipped) - 8
        shown = ", ".join(report.skipped[:8]) + (f" and {more} more" if more > 0 else "")
        text += f"\nskipped {len(report.skipped)} files: {shown}"
    return text


def _figure_png(report: EvalReport) -> bytes:
    """Recall@k and IoU against mean chunk size, one line per strategy family, as PNG bytes."""
    from matplotlib.figure import Figure  # no pyplot: the caller's backend stays as it is

    fig = Figure(figsize=(11, 4.2), dpi=100)
    axes = fig.subplots(1, 2)
    families = sorted({r.family for r in report.results})
    palette = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray")
    colour = {name: palette[i % len(palette)] for i, name in enumerate(sorted({f.split(":")[-1] for f in families}))}
    for family in families:
        rows = sorted((r for r in report.results if r.family == family), key=lambda r: r.mean_tokens)
        x = [r.mean_tokens for r in rows]
        late = family.startswith("late:")
        for ax, metric in zip(axes, ("recall_at_k", "iou")):
            ax.plot(x, [100 * r.metrics[metric] for r in rows], "--" if late else "-", marker="s" if late else "o",
                    color=colour[family.split(":")[-1]], label=family)
    iou = "IoU" + (f" (budget {report.budget} tokens)" if report.budget else f" (top {report.k})")
    for ax, title in zip(axes, (f"recall@{report.k}", iou)):
        ax.set_xlabel("mean chunk size (cl100k tokens)")
        ax.set_ylabel(f"{title} (%)")
        ax.set_title(f"{title} against chunk size")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _passage_html(report: EvalReport, span: tuple[str, int, int], title: str, context: int = 160) -> str:
    text = next(d.text for d in report.documents if d.path == span[0])
    a, b = max(0, span[1] - context), min(len(text), span[2] + context)
    return chunks_to_html(text[a:b], [(span[1] - a, span[2] - a)], title=title)


def render_html(report: EvalReport) -> str:
    """A self-contained HTML report: the table, the plots (inline PNG) and the questions every strategy missed."""
    e = html.escape
    head = "".join(f"<th>{e(t.format(k=report.k))}</th>" for t in
                   ["strategy", *(t for _, t in COLUMNS), "chunks", "mean tokens", "index", "seconds"])
    body = "".join(
        "<tr>" + f"<td>{e(r.strategy)}</td>" + "".join(f"<td>{100 * r.metrics[m]:.1f}</td>" for m, _ in COLUMNS)
        + f"<td>{r.chunks}</td><td>{r.mean_tokens:.0f}</td><td>{_size(r.index_bytes)}</td><td>{r.seconds:.1f}</td></tr>"
        for r in report.results)
    png = base64.b64encode(_figure_png(report)).decode("ascii")
    missed = [i for i in range(len(report.questions)) if not any(r.hit[i] for r in report.results)]
    best = report.results[0]
    items = []
    for i in missed[:MISSED_SHOWN]:
        q = report.questions[i]
        reference = " … ".join(_one_line(next(d.text for d in report.documents if d.path == doc)[s:t], 300)
                               for doc, s, t in q.spans[:3])
        parts = [f"<h3>{e(q.id)}. {e(q.question)}</h3>", f"<p><b>reference:</b> {e(reference)}</p>",
                 _passage_html(report, best.top[i], f"{best.strategy}: first chunk retrieved ({best.top[i][0]})")]
        if best.best_relevant[i] is not None:
            parts.append(_passage_html(report, best.best_relevant[i],
                                       f"{best.strategy}: best chunk holding the reference, "
                                       f"rank {best.first_rank[i]} ({best.best_relevant[i][0]})"))
        items.append('<div class="missed">' + "".join(parts) + "</div>")
    more = f"<p>and {len(missed) - MISSED_SHOWN} more.</p>" if len(missed) > MISSED_SHOWN else ""
    missed_html = ("".join(items) + more) if missed else "<p>None: every question was found by some strategy.</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>chunk-eval report</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}
td:first-child,th:first-child{{text-align:left}}th{{background:#f0f0f0}}.missed{{margin-bottom:2em}}</style>
</head><body>
<h1>chunk-eval report</h1>
<p>{e(_summary(report)).replace(chr(10), "<br>")}. Model: {e(report.model)}.</p>
<h2>Results, best first</h2>
<table id="results"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
<h2>Recall and IoU against chunk size</h2>
<img id="plots" alt="recall@{report.k} and IoU against mean chunk size, one line per strategy"
 src="data:image/png;base64,{png}">
<h2>Questions every strategy missed (top {report.k}): {len(missed)}</h2>
{missed_html}
</body></html>
"""
