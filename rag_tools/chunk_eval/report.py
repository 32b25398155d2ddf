"""chunk-eval's outputs for people: the terminal table, the summary line, the figure and the HTML report."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from course_lib.display import chunks_to_html, forest_plot
from rag_tools.chunk_eval.grades import CAUSES
from rag_tools.chunk_eval.inputs import _one_line
from rag_tools.chunk_eval.run import EvalReport, StrategyResult

__all__ = ["cost_figure", "cost_table", "curve_table", "decision_table", "format_table", "format_text", "health_table",
           "pages_text", "render_html", "series_colours"]

MISSED_SHOWN = 25  # questions every strategy missed, shown in the HTML report


COLUMNS = (("recall_at_k", "recall@{k}"), ("mrr", "MRR"), ("ndcg_at_10", "nDCG@10"),
           ("span_recall", "span recall"), ("iou", "IoU"))
CAUSE_SHORT = {"wrong_document": "wrong doc", "split": "split", "orphan": "orphan", "self_contained": "self-cont."}
TITLES = {"recall_at_k": "recall@{k}", "mrr": "MRR", "ndcg_at_10": "nDCG@10", "span_recall": "span recall",
          "span_precision": "span precision", "iou": "IoU", "answer_recall_at_k": "answer recall@{k}"}


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def _extra_head(report: EvalReport) -> list[str]:
    metric = TITLES[report.metric].format(k=report.k)
    return [TITLES["answer_recall_at_k"].format(k=report.k), f"{metric} 95% CI", "returned tokens",
            *(f"misses: {CAUSE_SHORT[c]}" for c in CAUSES)]


def _extra_cells(report: EvalReport, r: StrategyResult) -> list[str]:
    interval = r.intervals.get(report.metric)
    shown = f"[{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]" if interval else "-"
    counts = r.cause_counts
    return [f"{100 * r.metrics['answer_recall_at_k']:.1f}", shown, f"{r.returned_tokens:.0f}",
            *(str(counts[c]) for c in CAUSES)]


def _aligned(head: list[str], rows: list[list[str]]) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    return "\n".join([line(head), line(["-" * w for w in widths]), *map(line, rows)])


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def decision_table(report: EvalReport, *, seconds: bool = True) -> str:
    """The decision columns, best first: the strategy, the verdict's metric with its 95% interval, answer
    recall, returned tokens, vectors stored, the seconds embedding the index takes (`seconds=False`: none) and
    what the verdict made of the row (`Verdict.state`: leader, as good as the leader, in play, ruled out)."""
    metric = TITLES[report.metric].format(k=report.k)
    head = ["strategy", metric, "95% CI", TITLES["answer_recall_at_k"].format(k=report.k), "returned tokens",
            "vectors", *(["index s"] if seconds else []), "verdict"]
    rows = []
    for r in report.results:
        interval = r.intervals.get(report.metric)
        rows.append([r.strategy, f"{100 * r.metrics[report.metric]:.1f}",
                     f"[{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]" if interval else "-",
                     f"{100 * r.metrics['answer_recall_at_k']:.1f}", f"{r.returned_tokens:.0f}", f"{r.vectors:,}",
                     *([_seconds(r.embed_seconds)] if seconds else []),
                     report.verdict.state(r.strategy) if report.verdict is not None else "-"])
    return _aligned(head, rows)


def health_table(report: EvalReport) -> str:
    """Chunk health per strategy, best first: chunks, median and p10-p90 cl100k tokens, tiny chunks, ends inside
    a sentence, chunks pooled over the model's windows (`health.py`)."""
    return _aligned(*_health_rows(report))


def _health_rows(report: EvalReport) -> tuple[list[str], list[list[str]]]:
    head = ["strategy", "chunks", "median tokens", "p10-p90", "tiny", "mid-sentence ends", "pooled"]
    rows = []
    for r in report.results:
        h = r.health
        pooled = "-" if h["pooled_share"] is None else f"{h['pooled_share']:.0%}"
        rows.append([r.strategy, str(h["chunks"]), f"{h['median_tokens']:.0f}",
                     f"{h['p10_tokens']:.0f}-{h['p90_tokens']:.0f}", f"{h['tiny_share']:.0%}",
                     f"{h['inside_sentence_share']:.0%}", pooled])
    return head, rows


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def cost_table(report: EvalReport) -> str:
    """Cost per strategy, best first: vectors and bytes stored, the index's embedding tokens and seconds (at the
    run's measured rate), the median query latency (first stage, and reranking apart) and the returned tokens."""
    return _aligned(*_cost_rows(report))


def _cost_rows(report: EvalReport) -> tuple[list[str], list[list[str]]]:
    head = ["strategy", "vectors", "stored", "embed tokens", "index s", "query ms", "rerank ms", "returned tokens"]
    rows = [[r.strategy, f"{r.vectors:,}", _size(r.index_bytes), f"{r.embed_tokens:,}", _seconds(r.embed_seconds),
             _ms(r.latency_ms.get("first_stage")), _ms(r.latency_ms.get("rerank")), f"{r.returned_tokens:.0f}"]
            for r in report.results]
    return head, rows


def format_table(report: EvalReport, *, seconds: bool = True, all_columns: bool = False) -> str:
    """The results as plain text, best first, metrics in percent: the decision columns (`decision_table`), or
    with `all_columns` every metric, the misses by cause, then the chunk health and the cost tables
    (`seconds=False`: no timings)."""
    if not all_columns:
        return decision_table(report, seconds=seconds)
    head = ["strategy", *(title.format(k=report.k) for _, title in COLUMNS), "chunks", "mean tokens", "index"]
    rows = [[r.strategy, *(f"{100 * r.metrics[m]:.1f}" for m, _ in COLUMNS), str(r.chunks), f"{r.mean_tokens:.0f}",
             _size(r.index_bytes)] for r in report.results]
    if seconds:
        head.append("seconds")
        for row, r in zip(rows, report.results):
            row.append(f"{r.seconds:.1f}")
    head += _extra_head(report)
    for row, r in zip(rows, report.results):
        row += _extra_cells(report, r)
    parts = [_aligned(head, rows), "Chunk health:", health_table(report)]
    if seconds:
        parts += ["Cost:", cost_table(report)]
    return "\n".join(parts)


def _fixes(report: EvalReport) -> list[str]:
    """One line per cause of failure that occurs: its count over all strategies and the fix the course teaches."""
    totals = {c: sum(r.cause_counts[c] for r in report.results) for c in CAUSES}
    return [f"{cause} ({n} misses over all strategies): {CAUSES[cause]}" for cause, n in totals.items() if n]


def curve_table(report: EvalReport) -> str:
    """The budget curve (`--budget 250,500,...`) as text: per strategy, best first, the verdict's metric in percent
    with its 95% interval at each budget and the smallest budget within one margin of its best; then the
    verdict at each budget. Empty without a curve."""
    data = report.curve_dict()
    if data is None:
        return ""
    head = ["strategy", *(f"{b:,} tokens" for b in data["budgets"]), f"within {100 * data['margin']:g} of best"]
    rows = [[s, *(f"{100 * m:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
                  for m, lo, hi in zip(v["mean"], v["low"], v["high"])),
             f"{v['smallest_budget_within_margin']:,}"] for s, v in data["strategies"].items()]
    verdicts = [f"at {p.budget:,} tokens: " + ("none" if p.verdict is None else p.verdict.text()) for p in report.curve]
    return "\n".join([f"{TITLES[report.metric].format(k=report.k)} by budget (%, 95% interval), same vectors:",
                      _aligned(head, rows), *verdicts])


def pages_text(report: EvalReport) -> str:
    """Pages cited right, for paged documents (PDF): per strategy, best first, page recall@k and the share of hits
    whose stated pages hold the start of the answer (`grades.page_report`)."""
    lines = [f"Pages (questions whose answer is in a paged document): page recall@{report.k}, and hits whose stated "
             "pages hold the answer's first character"]
    for r in report.results:
        p = r.pages
        if p:
            right = "-" if p["hits_pages_right"] is None else f"{p['hits_pages_right']:.1%}"
            lines.append(f"- {r.strategy}: page recall {p['page_recall_at_k']:.1%} over {p['questions']} questions; "
                         f"pages right on {right} of {p['hits']} hits")
    return "\n".join(lines)


def format_text(report: EvalReport, *, seconds: bool = True, all_columns: bool = False) -> str:
    """What the command prints: the verdict first, the warnings, the summary, the table (the decision columns,
    or every column with `all_columns`), the budget curve if any (`curve_table`), the causes' fixes."""
    parts = [report.verdict_text(), *(f"warning: {w}" for w in report.warnings), _summary(report),
             format_table(report, seconds=seconds, all_columns=all_columns)]
    if report.curve:
        parts.append(curve_table(report))
    if any(r.pages for r in report.results):
        parts.append(pages_text(report))
    if not all_columns:
        parts.append("more columns (every metric, misses by cause, chunk health, cost): --all-columns, --json, --html")
    fixes = _fixes(report)
    if fixes:
        parts.append("Misses (answer not wholly returned), by cause, and what to try:\n" +
                     "\n".join(f"- {line}" for line in fixes))
    return "\n".join(parts)


def _summary(report: EvalReport) -> str:
    n_bytes = sum(len(d.text.encode("utf-8")) for d in report.documents)
    scope = (f"recall, answer recall and span metrics within an exact budget of {report.budget} tokens"
             if report.budget else f"recall, answer recall and span metrics over the top {report.k}")
    text = (f"{_count(len(report.documents), 'document')} ({_size(n_bytes)}), "
            f"{_count(len(report.questions), 'question')}, {_count(len(report.results), 'strategy', 'strategies')}; "
            f"{scope}; metrics in percent")
    if report.skipped:
        more = len(report.skipped) - 8
        shown = ", ".join(report.skipped[:8]) + (f" and {more} more" if more > 0 else "")
        text += f"\nskipped {len(report.skipped)} file{'s' if len(report.skipped) > 1 else ''}: {shown}"
    return text


def series_colours(report: EvalReport) -> dict[str, str]:
    """One colour a strategy family (a line of the size plot), each its own: tab10's, then tab20's lighter
    shades, then hues spread around the circle (as hex, so the HTML legend shows the plot's colours)."""
    from matplotlib import colormaps
    from matplotlib.colors import hsv_to_rgb, to_hex

    families = sorted({r.family for r in report.results})
    palette = [to_hex(c) for c in colormaps["tab10"].colors] + [to_hex(c) for c in colormaps["tab20"].colors[1::2]]
    extra = len(families) - len(palette)
    palette += [to_hex(hsv_to_rgb((i / extra, 0.85, 0.6))) for i in range(max(extra, 0))]
    return dict(zip(families, palette))


def _figure_png(report: EvalReport) -> bytes:
    """Recall@k and IoU against mean chunk size, one line per strategy family in its own colour
    (`series_colours`), as PNG bytes."""
    from matplotlib.figure import Figure  # no pyplot: the caller's backend stays as it is

    fig = Figure(figsize=(11, 4.2), dpi=100)
    axes = fig.subplots(1, 2)
    colour = series_colours(report)
    families = sorted(colour)
    for family in families:
        rows = sorted((r for r in report.results if r.family == family), key=lambda r: r.mean_tokens)
        x = [r.mean_tokens for r in rows]
        late = family.startswith("late:")
        for ax, metric in zip(axes, ("recall_at_k", "iou")):
            ax.plot(x, [100 * r.metrics[metric] for r in rows], "--" if late else "-", marker="s" if late else "o",
                    color=colour[family], label=family)
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


# Where a point's label may go, in points from the point, tried in this order (`_place_labels`)
LABEL_OFFSETS = [(dx * side, dy) for dy in (3, -10, 12, -19, 21, -28, 30, -37) for dx in (4, 30, 60)
                 for side in (1, -1)]


def _place_labels(fig: Any, ax: Any, points: list[tuple[float, float, str]]) -> list[str]:
    """Label each point with its strategy at the first of `LABEL_OFFSETS` where the label overlaps no label
    placed before it and stays inside the axes; returns the strategies that found no such place (left
    unlabelled, and listed under the plot)."""
    renderer = fig.canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    placed, unplaced = [], []
    for x, y, name in points:
        for dx, dy in LABEL_OFFSETS:
            label = ax.annotate(name, (x, y), fontsize=7, xytext=(dx, dy), textcoords="offset points",
                                ha="left" if dx > 0 else "right")
            extent = label.get_window_extent(renderer)
            inside = box.x0 <= extent.x0 and extent.x1 <= box.x1 and box.y0 <= extent.y0 and extent.y1 <= box.y1
            if inside and not any(extent.overlaps(other) for other in placed):
                placed.append(extent)
                break
            label.remove()
        else:
            unplaced.append(name)
    return unplaced


def cost_figure(report: EvalReport) -> tuple[Any, list[str]]:
    """The verdict's metric with each strategy's own 95% interval against three costs (tokens returned per
    question, seconds to embed the index, milliseconds per query), each point labelled with its strategy where
    the label covers no other (`_place_labels`); and the strategies left unlabelled in some panel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # no pyplot: the caller's backend stays as it is

    metric = TITLES[report.metric].format(k=report.k)
    panels = [("returned tokens per question", lambda r: r.returned_tokens),
              ("seconds to embed the index (measured rate)", lambda r: r.embed_seconds),
              ("query latency, ms (median; rerank included)",
               lambda r: (r.latency_ms.get("first_stage") or 0.0) + (r.latency_ms.get("rerank") or 0.0))]
    fig = Figure(figsize=(13, 4.4), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3, sharey=True)
    points: list[list[tuple[float, float, str]]] = []
    for ax, (label, cost) in zip(axes, panels):
        points.append([])
        for r in report.results:
            x = cost(r)
            if x is None:
                continue
            y = 100 * r.metrics[report.metric]
            low, high = (100 * v for v in r.intervals.get(report.metric, (r.metrics[report.metric],) * 2))
            ax.errorbar([x], [y], yerr=[[max(y - low, 0.0)], [max(high - y, 0.0)]], fmt="o", capsize=3,
                        color="tab:red" if report.verdict is not None and r.strategy in report.verdict.ruled_out
                        else "tab:blue")
            points[-1].append((x, y, r.strategy))
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"{metric} (%), own 95% interval")
    fig.suptitle(f"{metric} against cost (red: ruled out by the verdict)")
    fig.tight_layout()  # before the labels: they are placed where the axes finally are
    unplaced = sorted({name for ax, panel in zip(axes, points) for name in _place_labels(fig, ax, panel)})
    return fig, unplaced


def _table_html(table_id: str, head: list[str], rows: list[list[str]]) -> str:
    """A table's head and rows as an HTML table."""
    e = html.escape
    return (f'<table id="{table_id}"><thead><tr>' + "".join(f"<th>{e(c)}</th>" for c in head)
            + "</tr></thead><tbody>" + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>"
                                                for row in rows) + "</tbody></table>")


def _passage_html(report: EvalReport, span: tuple[str, int, int], title: str, context: int = 160) -> str:
    text = next(d.text for d in report.documents if d.path == span[0])
    a, b = max(0, span[1] - context), min(len(text), span[2] + context)
    return chunks_to_html(text[a:b], [(span[1] - a, span[2] - a)], title=title)


def _where(report: EvalReport, span: tuple[str, int, int]) -> str:
    """`file` or, for a paged document, `file, p. 37` (`pp. 37-38` across pages)."""
    doc = next(d for d in report.documents if d.path == span[0])
    if not doc.page_ends:
        return doc.path
    from rag_tools.readers import page_span

    first, last = page_span(doc.text, span[1], span[2])
    return f"{doc.path}, p. {first}" if first == last else f"{doc.path}, pp. {first}-{last}"


def _marked(report: EvalReport, span: tuple[str, int, int], references, context: int = 300) -> str:
    """The chunk's text (cut to `context` characters around the reference if long), the reference in <mark>."""
    doc, start, end = span
    text = next(d.text for d in report.documents if d.path == doc)
    inside = sorted((max(s, start), min(e, end)) for d, s, e in references if d == doc and s < end and start < e)
    a, b = start, end
    if inside and end - start > 2 * context + 200:
        a, b = max(start, inside[0][0] - context), min(end, inside[-1][1] + context)
    out, at = [], a
    for s, e in inside:
        s, e = max(s, at), min(e, b)
        if s >= e:
            continue
        out += [html.escape(text[at:s]), "<mark>", html.escape(text[s:e]), "</mark>"]
        at = e
    out.append(html.escape(text[at:b]))
    return ("… " if a > start else "") + "".join(out) + (" …" if b < end else "")


def _question_html(report: EvalReport, i: int) -> str:
    """One question, openable: its reference, and per strategy its rank, cause and best chunk, quote marked."""
    e = html.escape
    q = report.questions[i]
    hits = sum(r.hit[i] for r in report.results)
    rows = []
    for r in report.results:
        rank = r.first_rank[i]
        cause = r.causes[i]
        verdict = "answer returned whole" if cause is None else f"missed: {cause}"
        best = r.best_relevant[i]
        chunk = (f'<div class="chunk"><small>best chunk holding the reference, rank {rank} ({e(_where(report, best))})'
                 f"</small><pre>{_marked(report, best, q.spans)}</pre></div>" if best is not None
                 else "<p><small>no chunk shares a character with the reference</small></p>")
        rows.append(f'<div class="strategy"><b>{e(r.strategy)}</b>: rank {rank or "none"}; '
                    f'<span class="cause">{e(verdict)}</span>{chunk}</div>')
    return (f'<details class="question" id="q-{e(q.id)}"><summary>{e(q.id)}. {e(q.question)} '
            f"({hits} of {len(report.results)} strategies hit)</summary>{''.join(rows)}</details>")


def _forest_png(report: EvalReport) -> bytes | None:
    """The verdict as a forest plot: each strategy's difference to the leader with its paired interval,
    coloured by the verdict, as PNG bytes; None when the run has no verdict."""
    import matplotlib.pyplot as plt

    verdict = report.verdict
    if verdict is None:
        return None
    names = [r.strategy for r in report.results if r.strategy in verdict.differences or r.strategy == verdict.leader]
    # mean, low, high of each strategy minus the leader, in points (the leader against itself: 0)
    diff = {name: [100 * x for x in verdict.differences.get(name, (0.0, 0.0, 0.0))] for name in names}
    labels = [verdict.state(name) for name in names]
    fig = forest_plot(names, [diff[n][0] for n in names],
                      [min(diff[n][1], diff[n][0]) for n in names],  # a percentile bound can sit a hair past
                      [max(diff[n][2], diff[n][0]) for n in names],  # the mean in float arithmetic: draw it whole
                      labels, reference=0.0, reference_label=f"the leader, {verdict.leader}",
                      title=f"{verdict.metric}: each strategy against the leader, {100 * verdict.level:g}% paired "
                            f"intervals over {verdict.questions} questions",
                      xlabel=f"difference in {verdict.metric} (points); shaded: the margin, "
                             f"+/-{100 * verdict.margin:g}")
    fig.axes[0].axvspan(-100 * verdict.margin, 100 * verdict.margin, color="tab:green", alpha=0.08, lw=0)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def _curve_png(report: EvalReport) -> bytes:
    """The budget curve: each strategy's metric against the budget, its 95% interval as a band, as PNG bytes."""
    from matplotlib.figure import Figure  # no pyplot: the caller's backend stays as it is

    data = report.curve_dict()
    fig = Figure(figsize=(10, 4.8), dpi=100)
    ax = fig.subplots()
    for name, v in data["strategies"].items():
        line, = ax.plot(data["budgets"], [100 * m for m in v["mean"]], marker="o", label=name)
        ax.fill_between(data["budgets"], [100 * x for x in v["low"]], [100 * x for x in v["high"]],
                        color=line.get_color(), alpha=0.12, lw=0)
    metric = TITLES[report.metric].format(k=report.k)
    ax.set_xscale("log")
    ax.set_xticks(data["budgets"], [f"{b:,}" for b in data["budgets"]])
    ax.set_xlabel("budget (cl100k tokens returned per question, log scale)")
    ax.set_ylabel(f"{metric} (%), band: 95% interval")
    ax.set_title(f"{metric} against the budget, on the same vectors ({len(report.questions)} questions)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def render_html(report: EvalReport) -> str:
    """A self-contained HTML report: the verdict and warnings, the table, the plots (inline PNG), every
    question (openable, its quote marked in each strategy's best chunk, its cause) and the missed ones."""
    e = html.escape
    head = "".join(f"<th>{e(t.format(k=report.k))}</th>" for t in
                   ["strategy", *(t for _, t in COLUMNS), "chunks", "mean tokens", "index", "seconds",
                    *_extra_head(report)])
    body = "".join(
        "<tr>" + f"<td>{e(r.strategy)}</td>" + "".join(f"<td>{100 * r.metrics[m]:.1f}</td>" for m, _ in COLUMNS)
        + f"<td>{r.chunks}</td><td>{r.mean_tokens:.0f}</td><td>{_size(r.index_bytes)}</td><td>{r.seconds:.1f}</td>"
        + "".join(f"<td>{e(c)}</td>" for c in _extra_cells(report, r)) + "</tr>"
        for r in report.results)
    png = base64.b64encode(_figure_png(report)).decode("ascii")
    cost_fig, unlabelled = cost_figure(report)
    buffer = io.BytesIO()
    cost_fig.savefig(buffer, format="png")
    cost_png = base64.b64encode(buffer.getvalue()).decode("ascii")
    unlabelled_html = (f'<p id="unlabelled">Points left unlabelled where no label could go without covering another: '
                       f'{e(", ".join(unlabelled))}.</p>' if unlabelled else "")
    series = "".join(f'<li><span class="swatch" style="background:{colour}"></span>{e(family)}</li>'
                     for family, colour in series_colours(report).items())
    forest = _forest_png(report)
    forest_html = ("<p>No verdict: it compares at least two strategies on at least two questions.</p>"
                   if forest is None else
                   f'<img id="forest" alt="forest plot: each strategy\'s difference to the leader with its paired '
                   f'interval, coloured leader, in play or ruled out" '
                   f'src="data:image/png;base64,{base64.b64encode(forest).decode("ascii")}">')
    warnings = "".join(f"<li>{e(w)}</li>" for w in report.warnings)
    warnings_html = f'<ul id="warnings">{warnings}</ul>' if warnings else '<p id="warnings">No warnings.</p>'
    fixes = ("".join(f"<li>{e(line)}</li>" for line in _fixes(report))
             or "<li>None: every answer was returned whole.</li>")
    questions_html = "".join(_question_html(report, i) for i in range(len(report.questions)))
    missed = [i for i in range(len(report.questions)) if not any(r.hit[i] for r in report.results)]
    best = report.results[0]
    items = []
    for i in missed[:MISSED_SHOWN]:
        q = report.questions[i]
        reference = " … ".join(_one_line(next(d.text for d in report.documents if d.path == doc)[s:t], 300)
                               for doc, s, t in q.spans[:3])
        parts = [f"<h3>{e(q.id)}. {e(q.question)}</h3>", f"<p><b>reference:</b> {e(reference)}</p>"]
        if best.top[i] is not None:
            parts.append(_passage_html(report, best.top[i], f"{best.strategy}: first chunk retrieved "
                                                             f"({_where(report, best.top[i])})"))
        if best.best_relevant[i] is not None:
            parts.append(_passage_html(report, best.best_relevant[i],
                                       f"{best.strategy}: best chunk holding the reference, "
                                       f"rank {best.first_rank[i]} ({_where(report, best.best_relevant[i])})"))
        items.append('<div class="missed">' + "".join(parts) + "</div>")
    more = f"<p>and {len(missed) - MISSED_SHOWN} more.</p>" if len(missed) > MISSED_SHOWN else ""
    missed_html = ("".join(items) + more) if missed else "<p>None: every question was found by some strategy.</p>"
    scope = f"within {report.budget} tokens" if report.budget else f"top {report.k}"
    pages_html = ('<h2>Pages cited</h2>\n<pre id="pages">' + e(pages_text(report)) + "</pre>"
                  if any(r.pages for r in report.results) else "")
    curve_html = "" if not report.curve else (
        '<h2>Budgets as a curve</h2>\n<pre id="curve">' + e(curve_table(report)) + "</pre>\n"
        f'<img id="curve-plot" alt="{e(TITLES[report.metric].format(k=report.k))} against the budget, one line per '
        f'strategy with its 95% interval as a band" src="data:image/png;base64,'
        f'{base64.b64encode(_curve_png(report)).decode("ascii")}">')
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>chunk-eval report</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
img{{max-width:100%;height:auto}}.table{{max-width:100%;overflow-x:auto}}
table{{border-collapse:collapse;font-size:.85em}}td,th{{border:1px solid #ccc;padding:3px 5px;text-align:right}}
th{{white-space:normal}}td:first-child{{overflow-wrap:anywhere;min-width:9em}}
#plot-series{{list-style:none;padding:0;columns:3;font-size:.85em}}
.swatch{{display:inline-block;width:1.6em;height:.7em;margin-right:.4em;vertical-align:middle}}
td:first-child,th:first-child{{text-align:left}}th{{background:#f0f0f0}}.missed{{margin-bottom:2em}}
#verdict{{font-size:1.1em;padding:.6em 1em;background:#eef5ff;border-left:4px solid #36c}}
mark{{background:#ffe066}}pre{{white-space:pre-wrap;background:#fafafa;padding:.4em}}
details.question{{margin:.3em 0}}.strategy{{margin:.4em 0 .4em 1.5em}}.cause{{color:#a33}}</style>
</head><body>
<h1>chunk-eval report</h1>
<p id="verdict">{e(report.verdict_text())}</p>
{forest_html}
<h2>Warnings</h2>
{warnings_html}
<p>{e(_summary(report)).replace(chr(10), "<br>")}. Model: {e(report.model)}.</p>
<h2>Results, best first</h2>
<div class="table"><table id="results"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>
{curve_html}
{pages_html}
<h2>Chunk health</h2>
<p>Tokens are cl100k tokens; tiny: under a tenth of the size; mid-sentence ends: a chunk that stops inside a
sentence; pooled: longer than the model's window, its vector pooled over windows.</p>
<div class="table">{_table_html("health", *_health_rows(report))}</div>
<h2>Cost</h2>
<p>Index seconds: the index's tokens at the rate measured in this run (cached vectors counted too); query ms:
the median over the questions of embedding one question and searching, and of reranking apart.</p>
<div class="table">{_table_html("cost", *_cost_rows(report))}</div>
<img id="cost-plot" alt="{e(TITLES[report.metric].format(k=report.k))} with each strategy's 95% interval against
 returned tokens, index embedding seconds and query latency" src="data:image/png;base64,{cost_png}">
{unlabelled_html}
<h2>Misses by cause, and what to try</h2>
<ul id="causes">{fixes}</ul>
<h2>Recall and IoU against chunk size</h2>
<img id="plots" alt="recall@{report.k} and IoU against mean chunk size, one line per strategy"
 src="data:image/png;base64,{png}">
<ul id="plot-series">{series}</ul>
<h2>Every question ({scope}): open one to see each strategy's best chunk</h2>
<div id="questions">{questions_html}</div>
<h2>Questions every strategy missed ({scope}): {len(missed)}</h2>
{missed_html}
</body></html>
"""
