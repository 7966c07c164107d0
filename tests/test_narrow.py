"""Every page of the built book on a phone: 390 CSS pixels wide (Chromium's mobile emulation, driven by selenium,
pages opened from disk with no network), in one pass over the pages, each measured once MathJax has typeset it and
its charts are drawn (the explorer lays itself out to the width it has: book/_static/vega_charts.js).

Two things are wrong on a narrow screen, and both are looked for on every page:

- an element that reaches past the viewport's right edge without a container between them that the reader can
  scroll sideways (a code block, a display equation, a wide table scroll; a paragraph, a chart or a menu must not);
- a container that cuts off what it holds (``overflow: hidden`` or ``clip`` with content wider than itself), as a
  long inline formula was.
"""

import sys
from pathlib import Path

import pytest

import chromium
from test_accessibility import pages

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from book_pdf import READY  # noqa: E402  (typeset, charts drawn, images loaded: what the PDF waits for too)

HTML = ROOT / "_build" / "html"
WIDTH, HEIGHT = 390, 844  # a phone's viewport, in CSS pixels

# [elements past the right edge, not in a sideways-scrolling container; containers that cut off what they hold]
MEASURE = """
const width = document.documentElement.clientWidth;
const overflow = el => getComputedStyle(el).overflowX;
const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
  [...el.classList].slice(0, 3).map(c => '.' + c).join('') + ' "' + (el.textContent || '').trim().slice(0, 40) + '"';
const seen = el => el.checkVisibility({visibilityProperty: true, opacityProperty: true});
const past = new Set();
for (const el of document.body.querySelectorAll('*')) {
  const rect = el.getBoundingClientRect();
  if (rect.width === 0 || rect.right <= width + 1 || !seen(el)) continue;
  let box = null;  // the nearest container that scrolls (fine) or clips (reported below, as cutting it off)
  for (let a = el.parentElement; a && a !== document.body && !box; a = a.parentElement)
    if (overflow(a) !== 'visible') box = a;
  if (!box) past.add(el);
}
const outermost = [...past].filter(el => !past.has(el.parentElement)).map(name);
const cut = [];
for (const el of document.body.querySelectorAll('*')) {
  if (!['hidden', 'clip'].includes(overflow(el)) || el.clientWidth <= 2 || !seen(el)) continue;
  // MathJax draws stretched symbols in clipping boxes, and hides its copy for screen readers by a clip
  if (el.parentElement.closest('mjx-container') || getComputedStyle(el).clip !== 'auto') continue;
  if (el.scrollWidth > el.clientWidth + 1) cut.push(name(el) + ' holds ' + el.scrollWidth + ' px in ' + el.clientWidth);
}
const charts = [...document.querySelectorAll('div.vega-lite-chart')].map(h =>
  [h.clientWidth, Math.ceil(h.querySelector('svg').getBoundingClientRect().width)]);
return [outermost, cut, document.documentElement.scrollWidth, charts];
"""


def measure_pages(paths) -> dict:
    """{path: [elements past the edge, containers that cut, the page's scroll width, [each chart's holder width and
    drawn width]]} at the phone's width."""
    driver = chromium.start(offline=True, window=f"{WIDTH},{HEIGHT}")
    try:
        driver.set_script_timeout(180)
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": True})
        found = {}
        for path in paths:
            driver.get(path.as_uri())
            failure = driver.execute_async_script(READY)
            assert not failure, f"{path}: {failure}"
            found[path] = driver.execute_script(MEASURE)
        return found
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def measured():
    assert (HTML / "objects.inv").exists(), f"the book is not built ({HTML}): make build-book"
    chromium.require()
    return measure_pages(pages(HTML))


def test_no_page_is_wider_than_a_phone(measured):
    assert len(measured) >= 27  # the 25 pages of the table of contents, the index and the search page
    wide = {p.relative_to(HTML).as_posix(): (past[:4], width) for p, (past, _, width, _) in measured.items()
            if past or width > WIDTH}
    assert not wide, f"pages wider than {WIDTH} px (elements past the edge, scroll width): {wide}"


def test_nothing_is_cut_off_at_a_phones_width(measured):
    cut = {p.relative_to(HTML).as_posix(): found[:4] for p, (_, found, _, _) in measured.items() if found}
    assert not cut, f"containers that cut off what they hold at {WIDTH} px: {cut}"


def test_the_explorer_lays_out_to_a_phones_width(measured):
    """Notebook 4's explorer is drawn no wider than its column (its views stacked), not merely scrollable."""
    charts = measured[HTML / "notebooks" / "nb04_comparator.html"][3]
    assert len(charts) == 1 and all(0 < drawn <= holder for holder, drawn in charts), charts


def test_the_check_finds_what_is_too_wide_and_what_is_cut(tmp_path):
    """Both checks can fail: a wide paragraph and a clipped box are found; a wide line in a scrolling box is not."""
    page = tmp_path / "wide.html"
    page.write_text("<!DOCTYPE html><html><head><meta name='viewport' content='width=device-width'></head><body>"
                    "<p id='wide' style='width: 600px'>wide</p>"
                    "<div id='scrolls' style='overflow-x: auto'><pre style='width: 900px'>scrolls</pre></div>"
                    "<div id='cuts' style='overflow: hidden; width: 200px'><span style='display: inline-block; "
                    "width: 500px'>cut</span></div></body></html>", encoding="utf-8")
    chromium.require()
    past, cut, width, _ = measure_pages([page])[page]
    assert [p.split(" ")[0] for p in past] == ["p#wide"] and width > WIDTH
    assert [c.split(" ")[0] for c in cut] == ["div#cuts"]
