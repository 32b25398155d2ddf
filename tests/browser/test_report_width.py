"""chunk-eval's HTML report at a laptop's width (issue 45), in headless Chromium at a 1,280 x 800 viewport: the
results, health and cost tables fit their containers and the page does not scroll sideways; the legend of the
size plot shows one distinct colour per line. The report is the default grid on the capstone with the toy
embedder of tests/test_chunk_eval.py (no model). Run with `.venv/bin/python -m pytest tests/browser`."""

from pathlib import Path

from rag_tools.chunk_eval import evaluate, render_html
from scripts import browser_check
from tests.test_chunk_eval import ToyEmbedder

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT = {"width": 1280, "height": 800}


def test_the_report_reads_at_1280_pixels(tmp_path):
    capstone = ROOT / "data" / "capstone"
    report = evaluate(capstone / "docs", capstone / "questions.jsonl", k=1, embedder=ToyEmbedder(), cache=None)
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(report), encoding="utf-8")
    sync_playwright = browser_check.import_playwright()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_check.find_chromium(), headless=True,
                                    args=browser_check.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(page_file.as_uri(), wait_until="load")
            widths = {name: page.evaluate("""(name) => { const t = document.getElementById(name);
                return {table: t.scrollWidth, container: t.parentElement.clientWidth}; }""", name)
                for name in ("results", "health", "cost")}
            page_width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            swatches = page.evaluate("""() => [...document.querySelectorAll('#plot-series li')].map(li =>
                [li.textContent, getComputedStyle(li.querySelector('.swatch')).backgroundColor])""")
            page.screenshot(path=str(tmp_path / "report.png"))
        finally:
            browser.close()
    for name, w in widths.items():
        assert w["table"] <= w["container"], f"#{name} is {w['table']} px wide in a {w['container']} px container"
    assert page_width[0] <= page_width[1], f"the page scrolls sideways: {page_width}"
    assert sorted(name for name, _ in swatches) == sorted({r.family for r in report.results})
    assert len({colour for _, colour in swatches}) == len(swatches), swatches
