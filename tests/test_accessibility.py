"""Every page of the built book (_build/html) and of the student book (_build/student-book/html), opened from disk
with no network in Debian's headless chromium (selenium), one browser session for all of them:

- axe-core (pinned in scripts/fetch_assets.sh, which `make build-book` runs; tests only, never published) finds no
  violation of the WCAG 2 A and AA rules (``runOnly: ['wcag2a', 'wcag2aa']``);
- the console shows no error (level SEVERE) while the page loads, its widgets are drawn and formulas typeset;
- every image, those the widgets draw included, has alt text that says what it shows, and no two figures of a page
  share one;

and every image output of the book's notebooks carries that alt text in its cell's metadata
(``"mystnb": {"image": {"alt": ...}}``, or one per output in ``"image_alts"``), which myst-nb (and
socm_lib.viz.mystnb) puts on the notebook's page and scripts/book_accessibility.py on the chapters that glue the
figure.

Speed. axe's cost grows with the number of elements of a page, and two kinds of element are many and alike: the
elements MathJax draws formulas with (90 % of a chapter's 20,000 elements, and most of the time a chapter takes to
load) and the syntax-highlighting spans of code. Audited one by one they would make the audit of both books take
minutes. Every formula is drawn by the same MathJax code, so the browser is told (`TYPESET_ON_DEMAND`, run before
each page's own scripts) to let MathJax start without typesetting the page, and `PREPARE` then typesets one formula
of each kind (inline or display, colour, size, background) with it; the others stay in their TeX source, as text of
the paragraph's style. And axe's colour-contrast rule checks one element of each distinct text style (colour, size,
weight, shadow, the background behind it, opacity), the first visible one, since elements of one style have one
contrast. Every other rule checks every element.
"""

import re
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

import chromium

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import editions  # noqa: E402  (scripts/editions.py: the book's pages)

AXE = ROOT / "_build" / "vendor" / ".axe-core" / "axe.min.js"
BOOKS = {"book": ROOT / "_build" / "html", "student book": ROOT / "_build" / "student-book" / "html"}
NOTEBOOKS = sorted((ROOT / "notebooks").glob("nb*.ipynb")) + sorted((ROOT / "book").glob("*.ipynb"))
RULES = ["wcag2a", "wcag2aa"]
BROWSERS = 2  # sessions auditing pages side by side: CI has two cores
SETTLE_SECONDS = 60  # loading and drawing the widgets on a loaded machine; a page normally settles in a second
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")
# words that name a kind of file or picture and so say nothing of what the image shows
GENERIC = {"png", "jpg", "jpeg", "gif", "svg", "image", "img", "figure", "fig", "plot", "chart", "graph",
           "picture", "output", "untitled"}

# True once the page has loaded and the widget manager has drawn every embedded widget view
SETTLED = """
const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
const drawn = [...document.querySelectorAll('.widget-subarea')].filter(w => w.childElementCount > 0).length;
return document.readyState === 'complete' && drawn >= views;
"""

# Run before each page's scripts: MathJax, configured by the page (window.MathJax = {...}), starts without typesetting
TYPESET_ON_DEMAND = """
let mathjax;
Object.defineProperty(window, 'MathJax', {configurable: true, get() { return mathjax; }, set(value) {
  if (value && value.version === undefined) value.startup = Object.assign({}, value.startup, {typeset: false});
  mathjax = value;
}});
"""

# After loading: one formula of each kind typeset; the first visible element of each text style marked for the
# colour-contrast rule. Returns [formulas typeset, formulas left in TeX, text styles] or ["error", message].
PREPARE = """
const [mark, done] = arguments;
(async () => {
  const kinds = new Map();
  const formulas = [...document.querySelectorAll('.math')];
  for (const math of formulas) {
    const s = getComputedStyle(math);
    const kind = [math.tagName, s.color, s.fontSize, s.backgroundColor].join('|');
    if (!kinds.has(kind)) kinds.set(kind, math);
  }
  if (formulas.length) {
    await MathJax.startup.promise;
    await MathJax.typesetPromise([...kinds.values()]);
  }
  const transparent = 'rgba(0, 0, 0, 0)';
  const backdrop = el => {  // the first opaque background colour behind el, background images on the way, opacity
    let colour = transparent, opacity = 1;
    const images = [];
    for (let a = el; a; a = a.parentElement) {
      const s = getComputedStyle(a);
      opacity *= parseFloat(s.opacity);
      if (s.backgroundImage !== 'none') images.push(s.backgroundImage);
      if (s.backgroundColor !== transparent) { colour = s.backgroundColor; break; }
    }
    return [colour, images.join(' '), opacity];
  };
  const styles = new Set();
  for (const el of document.body.querySelectorAll('*')) {
    if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    const s = getComputedStyle(el);
    const style = [s.color, s.fontSize, s.fontWeight, s.textShadow, ...backdrop(el)].join('|');
    if (!styles.has(style)) { styles.add(style); el.setAttribute(mark, ''); }
  }
  return [kinds.size, formulas.length - kinds.size, styles.size];
})().then(done, e => done(['error', String(e)]));
"""
MARK = "data-contrast-representative"

RUN_AXE = """
const [context, options, done] = arguments;
axe.run(context || document, options).then(r => done(r.violations.map(v => ({id: v.id, help: v.help,
  nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary.replace(/\\s+/g, ' '))}))),
  e => done([{id: 'axe-error', help: String(e), nodes: []}]));
"""


def describes(alt: str | None) -> bool:
    """Whether an image's alt text says what the image shows: words, not nothing, a file name, a data URL or a bare
    word such as "png" or "figure"."""
    text = (alt or "").strip()
    if not text or text.startswith("data:") or re.search(r"\.(png|jpe?g|gif|svg|webp)\b", text, re.I):
        return False
    if re.fullmatch(r"[\w./\\-]+", text) and ("/" in text or "\\" in text or "_" in text):
        return False  # a path or a file name without extension
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", text)]
    return len(words) >= 2 and bool(set(words) - GENERIC)


def test_the_alt_text_check_tells_descriptions_from_file_names():
    assert describes("Scatter plot of d_Σ against d_μ for every pair, coloured by SOCM.")
    assert describes("Colab logo")
    for bad in (None, "", "  ", "png", "Figure", "../_images/8d7490c589b3.png", "data:image/png;base64,iVBO",
                "nb01_fig_same_mean", "image png"):
        assert not describes(bad), bad


def pages(html: Path) -> list[Path]:
    """The pages of a built book: every HTML file but the theme's and the downloads' (and the root redirect)."""
    return sorted(p for p in html.rglob("*.html")
                  if not {"_static", "_sources", "_images"} & set(p.relative_to(html).parts) and p != html / "index.html")


def _settle(driver, page):
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, SETTLE_SECONDS, poll_frequency=0.2).until(lambda d: d.execute_script(SETTLED))
    except Exception as exc:  # selenium's TimeoutException
        raise AssertionError(f"{page}: not loaded, or its widgets not drawn, after {SETTLE_SECONDS} s") from exc


def audit(driver, page: Path) -> dict:
    """Open `page` from disk; its console errors, its images' alt texts and axe's WCAG 2 A/AA violations."""
    driver.get(page.as_uri())
    _settle(driver, page)
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    images = driver.execute_script("return [...document.images].map(i => [i.getAttribute('alt'), i.src.slice(0, 120)])")
    prepared = driver.execute_async_script(PREPARE, MARK)
    assert prepared[0] != "error", f"{page}: {prepared[1]}"
    errors += [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    driver.execute_script(AXE.read_text(encoding="utf-8"))
    driver.execute_script("axe.configure({rules: [{id: 'color-contrast', selector: arguments[0]}]})", f"[{MARK}]")
    # preload would fetch the style sheets again, which file:// refuses; passes and incomplete results are not needed
    options = {"runOnly": RULES, "preload": False, "resultTypes": ["violations"]}
    violations = driver.execute_async_script(RUN_AXE, None, options)
    return {"errors": errors, "images": images, "violations": violations, "formulas": prepared[:2], "styles": prepared[2]}


def _audit_all(jobs: list[tuple[str, str, Path]]) -> dict:
    """{(book, page name): audit} for the pages given, in one browser session."""
    driver = chromium.start(offline=True, window="1280,1000")
    try:
        driver.set_script_timeout(300)
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": TYPESET_ON_DEMAND})
        return {(book, name): audit(driver, path) for book, name, path in jobs}
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def audited():
    """{book name: {page: audit}} for every page of both books, shared among `BROWSERS` browser sessions."""
    assert AXE.exists(), f"{AXE} is missing: run scripts/fetch_assets.sh _build/vendor (make build-book does)"
    for name, html in BOOKS.items():
        assert (html / "objects.inv").exists(), f"the {name} is not built ({html}): make build-book build-student-book"
    chromium.require()
    jobs = [(book, page.relative_to(html).as_posix(), page) for book, html in BOOKS.items() for page in pages(html)]
    with ThreadPoolExecutor(BROWSERS) as pool:
        parts = list(pool.map(_audit_all, [jobs[k::BROWSERS] for k in range(BROWSERS)]))
    return {book: {name: part[(book, name)] for part in parts for b, name in part if b == book} for book in BOOKS}


@pytest.mark.parametrize("book", BOOKS)
def test_every_page_of_the_table_of_contents_is_audited(audited, book):
    toc = {f"{page}.html" for page in editions.Book().pages()}
    assert toc <= set(audited[book]) and {"genindex.html", "search.html"} <= set(audited[book]), sorted(audited[book])


@pytest.mark.parametrize("book", BOOKS)
def test_axe_finds_no_wcag_2_a_or_aa_violation(audited, book):
    found = [f"{page}: {v['id']} ({v['help']}) on {len(v['nodes'])} element(s): {v['nodes'][:3]}"
             for page, result in audited[book].items() for v in result["violations"]]
    assert not found, f"{len(found)} violations in the {book}:\n" + "\n".join(found)


@pytest.mark.parametrize("book", BOOKS)
def test_no_page_logs_a_console_error(audited, book):
    found = [f"{page}: {error}" for page, result in audited[book].items() for error in result["errors"]]
    assert not found, f"console errors in the {book}:\n" + "\n".join(found)


@pytest.mark.parametrize("book", BOOKS)
def test_every_image_has_alt_text_that_says_what_it_shows(audited, book):
    images = [(page, alt, src) for page, result in audited[book].items() for alt, src in result["images"]]
    assert len([i for i in images if "_images/" in i[2]]) >= 20, "the books' figures were not found"
    bad = [f"{page}: alt={alt!r} for {src}" for page, alt, src in images if not describes(alt)]
    assert not bad, f"images without a description in the {book}:\n" + "\n".join(bad)


@pytest.mark.parametrize("book", BOOKS)
def test_no_two_figures_of_a_page_share_an_alt_text(audited, book):
    """Each figure says what it itself shows: a cell that draws several images gives each its own alt text
    (``"image_alts"`` in its metadata, socm_lib.viz.mystnb), not one text for all (notebook 4's three scatters)."""
    shared = {}
    for page, result in audited[book].items():
        figures = {src: alt for alt, src in result["images"] if "_images/" in src}
        repeated = [alt for alt, n in Counter(figures.values()).items() if n > 1]
        if repeated:
            shared[page] = repeated
    assert not shared, f"figures sharing an alt text in the {book}: {shared}"


def test_the_published_book_does_not_carry_the_audit_script():
    """axe-core is fetched for the tests only: Sphinx copies no dot-folder of _build/vendor into _static/."""
    assert AXE.exists(), "scripts/fetch_assets.sh _build/vendor was not run"
    for html in BOOKS.values():
        assert not list(html.rglob("axe*.js")), f"{html} serves axe-core"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_image_output_has_alt_text_in_its_cell_metadata(path):
    nb = nbformat.read(path, as_version=4)
    missing = []
    for k, cell in enumerate(nb.cells):
        shown = [m for o in cell.get("outputs", []) for m in o.get("data", {})
                 if m.rpartition("papermill.record/")[2] in IMAGE_TYPES]
        alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt")
        alts = cell.metadata.get("image_alts") or [alt] * len(cell.get("outputs", []))
        images = [n for n, o in enumerate(cell.get("outputs", [])) if set(o.get("data", {})) & set(IMAGE_TYPES)]
        bad = [n for n in images if n >= len(alts) or not describes(alts[n])]
        if shown and (not describes(alt) or bad):
            missing.append(f"cell {k} ({cell.source.splitlines()[0][:60]!r}): alt {alt!r}, outputs {bad} undescribed")
    assert not missing, f"{path.name}: image outputs without alt text (cell metadata mystnb.image.alt): {missing}"
