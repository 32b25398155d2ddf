"""chunk-eval's HTML report in a real browser: headless Chromium opens the file, offline.

The report is generated from the capstone documents (data/capstone/) with the small embedding
stand-in of tests/test_chunk_eval.py, so no model is loaded. Checked: the page loads with no
request leaving the file, the results table shows one row per strategy with its figures, the
chunk-health and cost tables one row per strategy, the plot images (sizes, cost against recall)
decode to pictures of the stored size, and the missed questions show the coloured chunk view.

Run with `.venv/bin/python -m pytest tests/browser` (not part of `pytest tests`).
"""

from pathlib import Path

from rag_tools.chunk_eval import evaluate, render_html
from scripts import browser_check
from tests.test_chunk_eval import ToyEmbedder

ROOT = Path(__file__).resolve().parents[2]

STRATEGIES = ["fixed:64", "recursive:64", "late:recursive:64", "rerank:10:recursive:64"]


def test_the_html_report_renders_in_chromium(tmp_path):
    capstone = ROOT / "data" / "capstone"
    report = evaluate(capstone / "docs", capstone / "questions.jsonl", STRATEGIES, k=1, embedder=ToyEmbedder(),
                      cache=None)
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(report), encoding="utf-8")

    sync_playwright = browser_check.import_playwright()
    outside = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_check.find_chromium(), headless=True,
                                    args=browser_check.CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else outside.append(r.url))
            page.goto(page_file.as_uri(), wait_until="load")
            headers = page.locator("#results thead th").all_inner_texts()
            rows = [page.locator("#results tbody tr").nth(i).locator("td").all_inner_texts()
                    for i in range(page.locator("#results tbody tr").count())]
            images = {name: page.evaluate("""(name) => { const img = document.getElementById(name);
                return {complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
                        shown: img.getBoundingClientRect().width}; }""", name) for name in ("plots", "cost-plot")}
            tables = {name: [page.locator(f"#{name} tbody tr").nth(i).locator("td").all_inner_texts()
                             for i in range(page.locator(f"#{name} tbody tr").count())] for name in ("health", "cost")}
            coloured = page.locator(".missed span[title^='chunk']").count()
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()

    assert not outside, f"the report tried to load {outside}"
    assert headers[:2] == ["strategy", "recall@1"] and "IoU" in headers
    assert [row[0] for row in rows] == [r.strategy for r in report.results]
    for row, result in zip(rows, report.results):
        assert row[1] == f"{100 * result.metrics['recall_at_k']:.1f}" and row[6] == str(result.chunks)
    for name, size in (("plots", (1100, 420)), ("cost-plot", (1300, 440))):
        image = images[name]
        assert image["complete"] and (image["width"], image["height"]) == size and image["shown"] > 0, name
    assert [row[0] for row in tables["health"]] == [row[0] for row in tables["cost"]] == [row[0] for row in rows]
    for row, result in zip(tables["health"], report.results):
        assert row[1] == str(result.chunks) and row[4].endswith("%")
    reranked = next(row for row in tables["cost"] if row[0].startswith("rerank:"))
    assert reranked[6] != "-", "the reranked row shows its own rerank latency"
    missed = sum(not any(r.hit[i] for r in report.results) for i in range(len(report.questions)))
    assert missed > 0 and coloured >= missed, "each missed question shows its chunks in colour"
    assert (tmp_path / "report.png").stat().st_size > 10_000
