"""The printed book (`make pdf`, _build/pdf/socm-book.pdf) and the student book (`make student-pdf`,
_build/pdf/socm-book-student.pdf): every page of the table of contents is in it with its title, its mathematics is
typeset (a sample of each chapter's formulas reads as typeset text, with the book's macros expanded, and no TeX
source is left, the bibliography's included), its figures are images in the PDF, and it prints whole: no word runs
past the right margin set by the print style sheet, the teaching page's sessions table keeps every column, and no
hidden code cell prints its toggle instead of its code. Both PDFs work away from the machine that printed them: no
link is a ``file:`` URI and every link inside the PDF lands on a page of it (a theorem link on the theorem), the
bookmarks follow the table of contents (parts, chapters, sections) and every page is numbered.

The tests of each PDF carry its id, "book" or "student": `make pdf` runs ``-k "not student"`` (it prints only the
reader's PDF) and `make student-pdf` ``-k student``; `make test` runs both."""

import json
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from html import unescape
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PDF = ROOT / "_build" / "pdf" / "socm-book.pdf"
STUDENT_PDF = ROOT / "_build" / "pdf" / "socm-book-student.pdf"  # `make student-pdf`: printed the same way
PRINTED = pytest.mark.parametrize("pdf", [PDF, STUDENT_PDF], ids=["book", "student"])
MARGIN_FOOT = 42.5  # points: the foot of the page, where the page number is printed (the 15 mm margin)
PRINT_CSS = ROOT / "book" / "_static" / "print.css"
TEACHING = ROOT / "book" / "teaching.ipynb"
sys.path.insert(0, str(ROOT / "scripts"))
from book_pdf import published_url, relink, toc_parts, toc_pages  # noqa: E402

# How MathJax's typeset symbols read in the PDF's text: a formula made only of these is sampled.
SYMBOLS = {r"\mu": "μ", r"\Sigma": "Σ", r"\sigma": "σ", r"\lambda": "λ", r"\times": "×", r"\le": "≤",
           r"\ge": "≥", r"\in": "∈", r"\cos": "cos", r"\tr": "tr", r"\SOCM": "SOCM", r"\BW": "BW",
           r"\dmu": "dμ", r"\dSigma": "dΣ", r"\R": "R", r"\Wtwo": "W2", r"\cdot": "⋅", r"\top": "⊤"}
FORMULA = re.compile(r"(?<![$\\])\$([^$\n]{3,40})\$(?!\$)")
SAMPLE = 4  # formulas checked per chapter


def _tool(name):
    exe = shutil.which(name)
    if exe is None:
        pytest.fail(f"{name} is missing: apt-get install poppler-utils")
    return exe


@lru_cache
def _text(pdf=PDF):
    if not pdf.exists():
        pytest.fail(f"{pdf} is missing: run `make pdf` (and `make student-pdf`) first")
    return subprocess.run([_tool("pdftotext"), str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def _squeezed(text):
    """`text` without whitespace, with typographic apostrophes and MathJax's primes read as "'"."""
    return re.sub(r"\s+", "", text).replace("\u2019", "'").replace("\u2032", "'")


def _title(page):
    path = ROOT / page
    if path.with_suffix(".md").exists():
        source = path.with_suffix(".md").read_text(encoding="utf-8")
    else:
        cells = json.loads(path.with_suffix(".ipynb").read_text(encoding="utf-8"))["cells"]
        source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return re.search(r"^# (.+)$", source, re.M).group(1).strip()


def as_typeset(tex):
    """The text pdftotext reads from MathJax's rendering of `tex`, or None if `tex` uses other commands or a
    prime (MathJax draws it as a superscript that pdftotext does not read back) or a subscript inside a superscript
    (drawn on a third baseline, which pdftotext reads out of order: "R^{n_1 \\times d}" comes back as "Rn×d ... 1")."""
    if re.search(r"\^\{[^}]*_", tex):
        return None
    out = re.sub(r"\\[A-Za-z]+", lambda m: SYMBOLS.get(m.group(0), "\0"), tex)
    if "\0" in out or "'" in out or re.search(r"[\\^_{}&]", out.replace("_", "").replace("^", "").replace("{", "").replace("}", "")):
        return None
    return _squeezed(out.replace("_", "").replace("^", "").replace("{", "").replace("}", "").replace("-", "−"))


@PRINTED
@pytest.mark.parametrize("page", toc_pages(), ids=lambda p: Path(p).stem)
def test_page_title(page, pdf):
    assert _squeezed(_title(page)) in _squeezed(_text(pdf)), f"{page}: title {_title(page)!r} not in the PDF"


@pytest.mark.parametrize("chapter", sorted((ROOT / "book").glob("ch*.md")), ids=lambda p: p.stem)
def test_chapter_formulas(chapter):
    formulas = [f for f in FORMULA.findall(chapter.read_text(encoding="utf-8")) if as_typeset(f)]
    macro_formulas = [f for f in formulas if re.search(r"\\(tr|dmu|dSigma|SOCM|BW|R)\b", f)]
    sample = sorted(set(macro_formulas), key=macro_formulas.index)[:SAMPLE // 2]
    sample += [f for f in dict.fromkeys(formulas) if f not in sample][:SAMPLE - len(sample)]
    assert len(sample) >= 2, f"{chapter.name}: too few formulas to sample"
    text = _squeezed(_text())
    for tex in sample:
        assert as_typeset(tex) in text, f"{chapter.name}: ${tex}$ is not typeset in the PDF"


def test_no_tex_source_left():
    text = _text()
    for raw in (r"\dmu", r"\dSigma", r"\tr", r"\frac", r"\begin{", "$$", r"\(", r"\texttt", r"\url", "$L^2$"):
        assert raw not in text, f"TeX source {raw!r} printed instead of typeset"


def _margin_pt():
    """The page margin of the print style sheet (`@page { margin: ... }`), in points."""
    size, unit = re.search(r"@page\s*\{\s*margin:\s*([\d.]+)(mm|cm|in|pt)\s*;", PRINT_CSS.read_text()).groups()
    return float(size) * {"mm": 72 / 25.4, "cm": 72 / 2.54, "in": 72.0, "pt": 1.0}[unit]


@lru_cache
def _words(pdf):
    """(page number, page width, word, box (xMin, yMin, xMax, yMax)) of every word of `pdf`, in points."""
    _text(pdf)  # fails with a clear message if the PDF is missing
    listing = subprocess.run([_tool("pdftotext"), "-bbox", str(pdf), "-"], capture_output=True, text=True,
                             check=True).stdout
    words, page, width = [], 0, 0
    for line in listing.splitlines():
        if m := re.search(r'<page width="([\d.]+)"', line):
            page, width = page + 1, float(m.group(1))
        elif m := re.search(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*)</word>',
                            line):
            words.append((page, width, unescape(m.group(5)), tuple(float(v) for v in m.groups()[:4])))
    return tuple(words)


@PRINTED
def test_no_text_past_the_right_margin(pdf):
    margin = _margin_pt()
    past = [(page, word, round(box[2] - (width - margin), 1)) for page, width, word, box in _words(pdf)
            if box[2] > width - margin + 1.5]  # a point and a half for the rounding of glyph boxes
    pages = sorted({page for page, _, _ in past})
    assert not past, f"{len(past)} words past the right margin on pages {pages}, e.g. (page, word, points) {past[:5]}"


def _sessions_table_headers():
    """The column headers of the teaching page's sessions table (its first markdown table)."""
    cells = json.loads(TEACHING.read_text(encoding="utf-8"))["cells"]
    tables = [line for c in cells if c["cell_type"] == "markdown" for line in "".join(c["source"]).splitlines()
              if line.startswith("| session |")]
    assert tables, "the sessions table of the teaching page is not found (check the test)"
    return [h.strip() for h in tables[0].strip("|").split("|")]


def _cell_read(words, header):
    """Whether the words of `header` are printed as one table cell: in order, each word after the previous one on
    its line or at the start of the next line of the same column."""
    wanted = header.split()
    for start, (first, box0) in enumerate(words):
        if first != wanted[0]:
            continue
        prev, found = box0, 1
        for word, box in words[start + 1:]:
            if found == len(wanted):
                break
            same_line = abs(box[1] - prev[1]) < 2 and 0 <= box[0] - prev[2] < 10
            next_line = 0 < box[1] - prev[3] < 12 and abs(box[0] - box0[0]) < 2
            if word == wanted[found] and (same_line or next_line):
                prev, found = box, found + 1
        if found == len(wanted):
            return True
    return False


@PRINTED
def test_teaching_table_keeps_every_column(pdf):
    """Every column header of the sessions table is printed whole, all of them on one page."""
    headers = [h.replace("...", "\u2026") for h in _sessions_table_headers()]
    assert len(headers) >= 6
    pages = {}
    for page, _, word, box in _words(pdf):
        pages.setdefault(page, []).append((word.replace("\u2019", "'"), box))
    best = max(pages.values(), key=lambda words: sum(_cell_read(words, h) for h in headers))
    missing = [h for h in headers if not _cell_read(best, h)]
    assert not missing, f"columns of the teaching page's sessions table not in the PDF: {missing}"


@PRINTED
def test_no_toggle_without_its_code(pdf):
    """A hidden code cell prints its code, not the screen's "Show code cell source" toggle."""
    assert "Show code cell" not in _text(pdf)


def test_figures_are_images():
    listing = subprocess.run([_tool("pdfimages"), "-list", str(PDF)], capture_output=True, text=True,
                             check=True).stdout.splitlines()[2:]
    large = [row for row in listing if row.split()[2] == "image" and int(row.split()[3]) >= 200]
    figures = sum(1 for p in (ROOT / "notebooks").glob("nb*.ipynb")  # a Vega-Lite chart is drawn, not its PNG
                  for c in json.loads(p.read_text(encoding="utf-8"))["cells"]
                  for o in c.get("outputs", []) if "image/png" in o.get("data", {})
                  and "application/vnd.vegalite.v5+json" not in o["data"])
    figures += sum(page.read_text(encoding="utf-8").count("```{figure}") for page in (ROOT / "book").glob("*.md"))
    assert len(large) >= figures, f"{len(large)} images of 200 px or more in the PDF for {figures} figures"


@lru_cache
def _reader(pdf):
    from pypdf import PdfReader

    _text(pdf)  # fails with a clear message if the PDF is missing
    return PdfReader(pdf)


def _links(reader):
    """(page index, link annotation) of every link of the PDF."""
    for index, page in enumerate(reader.pages):
        for ref in page.get("/Annots") or []:
            annot = ref.get_object()
            if annot.get("/Subtype") == "/Link":
                yield index, annot


def _target_page(reader, annot):
    """The index of the page an internal link goes to, None if it goes nowhere, or "uri" for a URI link."""
    from pypdf.generic import ArrayObject

    action = annot.get("/A")
    if action is not None and action.get("/S") == "/URI":
        return "uri"
    dest = annot.get("/Dest", action.get("/D") if action is not None else None)
    if dest is None:
        return None
    if not isinstance(dest, ArrayObject):  # a named destination
        dest = reader.named_destinations.get(str(dest))
        return None if dest is None else reader.get_destination_page_number(dest)
    pages = {page.indirect_reference.idnum: k for k, page in enumerate(reader.pages)}
    return pages.get(getattr(dest[0], "idnum", None))


def bad_links(reader):
    """"page N: what" for every link to a local file (a ``file:`` URI, or a path with no scheme) and every internal
    link that lands on no page of the PDF."""
    bad = []
    for index, annot in _links(reader):
        target = _target_page(reader, annot)
        if target == "uri":
            uri = str(annot["/A"]["/URI"])
            if uri.startswith("file:") or not re.match(r"^[a-z][a-z0-9+.-]*:", uri):
                bad.append(f"page {index + 1}: a link to a local path, {uri}")
        elif target is None:
            bad.append(f"page {index + 1}: an internal link to no page ({annot.get('/Dest') or annot.get('/A')})")
    return bad


@PRINTED
def test_no_link_points_to_a_local_path_or_nowhere(pdf):
    reader = _reader(pdf)
    links = list(_links(reader))
    internal = [a for _, a in links if _target_page(reader, a) != "uri"]
    assert len(links) >= 500 and len(internal) >= 400, f"{len(links)} links, {len(internal)} inside the PDF"
    bad = bad_links(reader)
    assert not bad, f"{len(bad)} links that work only on the machine that printed the PDF, e.g. {bad[:5]}"


def _blank_pdf_with_links(tmp_path, *links):
    """A one-page PDF holding the link annotations given (pypdf's Link: url= or a /Dest)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    for annotation in links:
        writer.add_annotation(0, annotation)
    path = tmp_path / "links.pdf"
    writer.write(path)
    return PdfReader(path)


def test_the_link_check_finds_local_and_dead_links(tmp_path):
    """`bad_links` can fail: a file: URI, a relative path and a named destination that does not exist."""
    from pypdf.annotations import Link
    from pypdf.generic import NameObject

    dead = Link(rect=(0, 0, 10, 10), url="https://example.org/")
    dead[NameObject("/A")][NameObject("/S")] = NameObject("/GoTo")
    dead[NameObject("/A")][NameObject("/D")] = NameObject("/nowhere")
    reader = _blank_pdf_with_links(tmp_path, Link(rect=(0, 0, 10, 10), url="file:///tmp/_build/html/x.html"),
                                   Link(rect=(0, 20, 10, 30), url="book/ch01.html"), dead,
                                   Link(rect=(0, 40, 10, 50), url="https://socm-book.github.io/socm-book/"),
                                   Link(rect=(0, 60, 10, 70), target_page_index=0))
    found = bad_links(reader)
    assert len(found) == 3 and "file:///tmp" in found[0] and "book/ch01.html" in found[1] and "no page" in found[2]


def test_a_link_to_a_built_file_that_is_no_printed_page_goes_to_the_published_book(tmp_path):
    """A page's link to a notebook's download (or any built file the PDF does not print) -> the published book; a
    link to a printed page's anchor -> its place in the PDF; a link to an anchor the page does not hold is an error."""
    from pypdf.annotations import Link

    import book_pdf

    html = tmp_path / "html"
    base = html.resolve().as_uri() + "/"
    reader = _blank_pdf_with_links(tmp_path, Link(rect=(0, 0, 10, 10), url=f"{base}_sources/notebooks/nb01.ipynb"),
                                   Link(rect=(0, 20, 10, 30), url=f"{base}book/ch01.html#thm-1"))
    printed = [book_pdf.PrintedPage("book/ch01", reader)]
    joined = book_pdf.Joined(printed)
    joined.places[("book/ch01", "thm-1")] = (0, 120.0)
    counts = relink(joined, html, published_url())
    assert counts == {"internal": 1, "published": 1, "external": 0}
    annots = [ref.get_object() for ref in joined.writer.pages[0]["/Annots"]]
    assert annots[0]["/A"]["/URI"] == published_url() + "_sources/notebooks/nb01.ipynb"
    assert annots[1]["/Dest"][0] == joined.writer.pages[0].indirect_reference and annots[1]["/Dest"][3] == 120
    del joined.places[("book/ch01", "thm-1")]
    again = book_pdf.Joined(printed)
    with pytest.raises(ValueError, match="does not hold"):
        relink(again, html, published_url())


@lru_cache
def _page_words(pdf):
    """{page number: [(word, box)]} of `pdf` (pdftotext's boxes: points from the page's top left)."""
    pages = {}
    for page, _, word, box in _words(pdf):
        pages.setdefault(page, []).append((word, box))
    return pages


@PRINTED
def test_theorem_links_land_on_their_theorem(pdf):
    """Every link that reads "Theorem N" goes to a page (or the page before it, where the theorem's box starts)
    that prints "Theorem N" in its own box's title."""
    reader = _reader(pdf)
    words = _page_words(pdf)
    checked = 0
    for index, annot in _links(reader):
        target = _target_page(reader, annot)
        if target == "uri":
            continue
        x0, y0, x1, y1 = (float(v) for v in annot["/Rect"])
        height = float(reader.pages[index].mediabox.height)
        inside = [w for w, (a, b, c, d) in words.get(index + 1, [])
                  if a >= x0 - 1 and c <= x1 + 1 and height - d >= y0 - 2 and height - b <= y1 + 2]
        shown = " ".join(inside)
        if not re.fullmatch(r"Theorem \d+", shown):
            continue
        landing = " ".join(w for k in (target + 1, target + 2) for w, _ in words.get(k, []))
        assert shown in landing, f"page {index + 1}: the link {shown!r} goes to page {target + 1}, which lacks it"
        checked += 1
    assert checked >= 10, f"only {checked} theorem links found"


def _outline(reader, items=None):
    """The bookmarks as nested [(title, page index, children)]."""
    tree = []
    for item in reader.outline if items is None else items:
        if isinstance(item, list):  # the children of the bookmark before
            tree[-1][2].extend(_outline(reader, item))
        else:
            tree.append((item.title, reader.get_destination_page_number(item), []))
    return tree


@PRINTED
def test_bookmarks_follow_the_table_of_contents(pdf):
    """The root page, then each part with its chapters in order, each chapter with its sections; each chapter's
    bookmark opens the page that prints its title, and the pages of the chapters come in order."""
    reader = _reader(pdf)
    tree = _outline(reader)
    parts = toc_parts()
    assert [title for title, _, _ in tree[1:]] == [caption for caption, _ in parts[1:]]
    chapters = [tree[0]] + [chapter for _, _, children in tree[1:] for chapter in children]
    titles = [_title(page) for _, pages in parts for page in pages]
    assert [_squeezed(t) for t, _, _ in chapters] == [_squeezed(t) for t in titles]
    words = _page_words(pdf)
    for (title, page, sections), expected in zip(chapters, titles):
        assert _squeezed(expected) in _squeezed(" ".join(w for w, _ in words[page + 1])), f"{title}: page {page + 1}"
    starts = [page for _, page, _ in chapters]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    with_sections = [title for title, _, sections in chapters if sections]
    assert len(with_sections) >= len(chapters) - 2, f"chapters without section bookmarks: {len(chapters) - len(with_sections)}"


@PRINTED
def test_every_page_is_numbered_at_its_foot(pdf):
    words = _page_words(pdf)
    height = float(_reader(pdf).pages[0].mediabox.height)
    unnumbered = [page for page in sorted(words) if not any(
        w == str(page) and box[1] > height - MARGIN_FOOT for w, box in words[page])]
    assert len(words) == len(_reader(pdf).pages) and not unnumbered, f"pages without their number: {unnumbered[:10]}"
