"""Print the built book (_build/html) to one PDF whose links work anywhere: _build/pdf/socm-book.pdf.

    python scripts/book_pdf.py            (what `make pdf` runs after `make build-book`)
    python scripts/book_pdf.py --html _build/student-book/html --out _build/pdf/socm-book-student.pdf
                                          (what `make student-pdf` runs: the student book, without solutions)

Each page of the table of contents, in its order, is opened from disk in Debian's headless Chromium (selenium
through Debian's chromedriver) with every host name unresolvable, and printed through the DevTools protocol
(``Page.printToPDF``) once the book's vendored MathJax has typeset it, its charts are drawn and its images loaded.
The page prints with the theme's print style sheet (no sidebars) and the book's own, book/_static/print.css (the
page's margins; code and outputs wrapped, tables and display equations fitted to the page, hidden code cells printed
with their code). Before printing, every element with an id gets a link to it, so that Chromium writes a named
destination for each: the place of every section, theorem, equation, figure and citation in that page's PDF.

pypdf joins the pages into one document and makes it readable away from the machine that built it:

- every link into a printed page (a chapter, a theorem, an equation, a citation, a figure) becomes a link to that
  place in the PDF (an explicit destination: its page and height); a link to a built file that is not a printed
  page (a notebook's download, the index) goes to the published book (``html.baseurl`` of `_config.yml`); no
  ``file:`` link is left;
- a bookmark outline: the table of contents' parts, their chapters, each chapter's sections;
- page numbers, printed at the foot of every page.
"""

import argparse
import base64
import io
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import yaml
from pypdf import PageObject, PdfReader, PdfWriter
from pypdf.generic import (ArrayObject, DecodedStreamObject, DictionaryObject, Fit, FloatObject, NameObject,
                           NullObject, TextStringObject)

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,1000"]
PRINT_OPTIONS = {"printBackground": True, "preferCSSPageSize": True}  # the page and margins of print.css
PAGE_NUMBER_SIZE = 9  # points

# Resolves once the page has loaded, MathJax has typeset it, its Vega-Lite charts are drawn and laid out (the class
# vega-drawn, book/_static/vega_charts.js) and its images loaded.
READY = """
const done = arguments[arguments.length - 1];
(async () => {
  if (document.readyState !== 'complete') await new Promise(r => window.addEventListener('load', r, {once: true}));
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  for (let k = 0; k < 600 && document.querySelector('div.vega-lite-chart:not(.vega-drawn)'); k++) await sleep(100);
  for (const img of document.images) img.loading = 'eager';
  await Promise.all([...document.images].map(img => img.complete ? null : new Promise(r => {
    img.addEventListener('load', r, {once: true}); img.addEventListener('error', r, {once: true}); })));
  await document.fonts.ready;
})().then(() => done(null), e => done(String(e)));
"""

# A hidden link to every element with an id (Chromium writes a named destination for each target of a link in the
# page), then the page's headings: [level, id of the heading's section, text] (a formula read as its MathML text).
ANCHORS = """
const links = document.createElement('div');
links.hidden = true;
for (const el of document.querySelectorAll('[id]')) {
  const a = document.createElement('a');
  a.href = '#' + encodeURIComponent(el.id);
  links.appendChild(a);
}
document.body.appendChild(links);
const text = h => {
  const copy = h.cloneNode(true);
  copy.querySelectorAll('.headerlink').forEach(e => e.remove());
  copy.querySelectorAll('mjx-container').forEach(m => m.replaceWith((m.querySelector('mjx-assistive-mml') || m).textContent));
  return copy.textContent.replace(/\\s+/g, ' ').trim();
};
return [...document.querySelectorAll('article section[id] > :is(h1, h2)')].map(h => [+h.tagName[1], h.parentElement.id, text(h)]);
"""


def toc_parts(toc_path: Path = ROOT / "_toc.yml") -> list[tuple[str | None, list[str]]]:
    """The table of contents as (part caption, its pages): the root page first, alone, with no caption."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    return [(None, [toc["root"]])] + [(part["caption"], [entry["file"] for entry in part["chapters"]])
                                      for part in toc.get("parts", [])]


def toc_pages(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """The book's pages in reading order (root, then every part's chapters), as paths without suffix."""
    return [page for _, pages in toc_parts(toc_path) for page in pages]


def published_url(config_path: Path = ROOT / "_config.yml") -> str:
    """Where the book is published (``html.baseurl`` of `_config.yml`), ending in "/"."""
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    return config["html"]["baseurl"].rstrip("/") + "/"


def _tool(name: str, package: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise FileNotFoundError(f"{name} is needed to print the book: apt-get install {package}")
    return exe


@dataclass
class PrintedPage:
    """One page of the book printed alone: its PDF and its headings (level, section id, text)."""

    docname: str
    pdf: PdfReader
    headings: list = field(default_factory=list)


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = shutil.which("chromium-browser") or _tool("chromium", "chromium")
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(_tool("chromedriver", "chromium-driver")), options=options)
    driver.set_script_timeout(180)
    return driver


def print_pages(html: Path, docnames: list[str]) -> list[PrintedPage]:
    """Every page of `docnames`, built in `html`, printed alone by one headless Chromium."""
    missing = [str(html / f"{d}.html") for d in docnames if not (html / f"{d}.html").exists()]
    if missing:
        raise FileNotFoundError(f"pages not built: {missing}; run `make build-book` first")
    driver = _browser()
    try:
        printed = []
        for docname in docnames:
            driver.get((html / f"{docname}.html").resolve().as_uri())
            failure = driver.execute_async_script(READY)
            if failure:
                raise RuntimeError(f"{docname}: the page did not finish drawing: {failure}")
            headings = driver.execute_script(ANCHORS)
            data = driver.execute_cdp_cmd("Page.printToPDF", PRINT_OPTIONS)["data"]
            printed.append(PrintedPage(docname, PdfReader(io.BytesIO(base64.b64decode(data))), headings))
        return printed
    finally:
        driver.quit()


class Joined:
    """The printed pages joined into one PdfWriter, with the place of every named destination of every page."""

    def __init__(self, printed: list[PrintedPage]):
        self.writer = PdfWriter()
        self.first_page = {}  # docname -> index of its first page in the joined PDF
        self.docnames = []  # page index -> the docname printed there
        self.places = {}  # (docname, id) -> (page index, top of the element, or None)
        for page in printed:
            start = len(self.writer.pages)
            self.first_page[page.docname] = start
            for source in page.pdf.pages:
                self.writer.add_page(source)
                self.docnames.append(page.docname)
            for name, dest in page.pdf.named_destinations.items():
                top = dest.get("/Top")
                self.places[(page.docname, _name(name))] = (start + page.pdf.get_destination_page_number(dest),
                                                            None if top is None or isinstance(top, NullObject)
                                                            else float(top))

    def place(self, docname: str, anchor: str = "") -> tuple[int, float | None] | None:
        """(page index, top) of `anchor` in page `docname` (its first page without an anchor), or None."""
        if docname not in self.first_page:
            return None
        return self.places.get((docname, anchor)) if anchor else (self.first_page[docname], None)

    def destination(self, docname: str, anchor: str = "") -> ArrayObject | None:
        """The explicit destination of :meth:`place`, or None."""
        place = self.place(docname, anchor)
        if place is None:
            return None
        index, top = place
        return ArrayObject([self.writer.pages[index].indirect_reference, NameObject("/XYZ"), NullObject(),
                            NullObject() if top is None else FloatObject(top), NullObject()])


def _name(value) -> str:
    """A named destination's name as the page's id: without the leading "/" of a PDF name, percent-decoded."""
    return unquote(str(value).removeprefix("/"))


def relink(joined: Joined, html: Path, baseurl: str) -> dict[str, int]:
    """Rewrite every link annotation of the joined PDF: into a printed page -> its place in the PDF; into another
    built file -> the published book; others (http, mailto) unchanged. Returns counts by kind of link."""
    root = html.resolve().as_uri().rstrip("/") + "/"
    counts = {"internal": 0, "published": 0, "external": 0}
    for page, docname in zip(joined.writer.pages, joined.docnames):
        for ref in page.get("/Annots") or []:
            annot = ref.get_object()
            if annot.get("/Subtype") != "/Link":
                continue
            action = annot.get("/A")
            if "/Dest" in annot or (action is not None and action.get("/S") == "/GoTo"):
                target = annot["/Dest"] if "/Dest" in annot else action["/D"]
                dest = joined.destination(docname, _name(target))
                if dest is None:
                    raise ValueError(f"{docname}: a link to #{_name(target)}, which the printed page does not hold")
                _point(annot, dest)
                counts["internal"] += 1
                continue
            uri = str(action.get("/URI", "")) if action is not None else ""
            if not uri.startswith("file:"):
                counts["external"] += 1
                continue
            if not uri.startswith(root):
                raise ValueError(f"{docname}: a link to {uri}, outside the built book {html}")
            path, _, anchor = uri[len(root):].partition("#")
            path = unquote(path)
            target = path.removesuffix(".html") if path.endswith(".html") else None
            dest = joined.destination(target, unquote(anchor)) if target else None
            if dest is None and target in joined.first_page:
                raise ValueError(f"{docname}: a link to {path}#{anchor}, which the printed page does not hold")
            if dest is not None:
                _point(annot, dest)
                counts["internal"] += 1
            else:
                action[NameObject("/URI")] = TextStringObject(baseurl + path + (f"#{anchor}" if anchor else ""))
                counts["published"] += 1
    return counts


def _point(annot: DictionaryObject, dest: ArrayObject) -> None:
    """Make the link annotation `annot` go to the explicit destination `dest`."""
    annot.pop("/A", None)
    annot[NameObject("/Dest")] = dest


def outline(joined: Joined, printed: list[PrintedPage], parts) -> int:
    """Bookmarks: each part (the table of contents' captions), its chapters and each chapter's sections (h2);
    returns how many."""
    headings = {p.docname: p.headings for p in printed}
    writer, count = joined.writer, 0
    for caption, docnames in parts:
        parent = None
        if caption is not None:
            parent = writer.add_outline_item(title=caption, page_number=joined.first_page[docnames[0]])
            count += 1
        for docname in docnames:
            title = next((text for level, _, text in headings[docname] if level == 1), docname)
            chapter = writer.add_outline_item(title=title, page_number=joined.first_page[docname], parent=parent)
            count += 1
            for level, anchor, text in headings[docname]:
                place = joined.place(docname, anchor)
                if level == 2 and place is not None:
                    writer.add_outline_item(title=text, page_number=place[0], parent=chapter, fit=Fit.xyz(top=place[1]))
                    count += 1
    writer.page_mode = "/UseOutlines"
    return count


def number_pages(writer: PdfWriter) -> None:
    """Print each page's number, centred at its foot, in the PDF's standard Helvetica (nothing to embed): a
    blank page holding only the number is merged onto the page."""
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    for number, page in enumerate(writer.pages, start=1):
        box = page.mediabox
        text = str(number)
        x = float(box.left) + (float(box.width) - PAGE_NUMBER_SIZE * 0.556 * len(text)) / 2  # digits: 0.556 em
        stamp = PageObject.create_blank_page(width=box.width, height=box.height)
        stamp[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/PageNumber"): font})})
        content = DecodedStreamObject()
        content.set_data(f"BT /PageNumber {PAGE_NUMBER_SIZE} Tf 0.3 g {x:.2f} {float(box.bottom) + 20:.2f} Td "
                         f"({text}) Tj ET".encode("ascii"))
        stamp[NameObject("/Contents")] = content
        page.merge_page(stamp)


def print_book(html: Path, out: Path, toc_path: Path = ROOT / "_toc.yml",
               config_path: Path = ROOT / "_config.yml") -> dict:
    """Print every page of the book built in `html` into one PDF `out`, with working links, bookmarks and page
    numbers; return what was written (pages, links by kind, bookmarks)."""
    parts = toc_parts(toc_path)
    printed = print_pages(html, [d for _, docnames in parts for d in docnames])
    joined = Joined(printed)
    links = relink(joined, html, published_url(config_path))
    bookmarks = outline(joined, printed, parts)
    number_pages(joined.writer)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    joined.writer.add_metadata({"/Title": config["title"], "/Author": config.get("author", "")})
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    with partial.open("wb") as f:
        joined.writer.write(f)
    partial.replace(out)
    return {"pages": len(joined.writer.pages), "links": links, "bookmarks": bookmarks}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "socm-book.pdf")
    args = parser.parse_args(argv)
    done = print_book(args.html, args.out)
    links = done["links"]
    print(f"The book is printed: {args.out} ({done['pages']} pages, {done['bookmarks']} bookmarks; links: "
          f"{links['internal']} inside the PDF, {links['published']} to the published book, {links['external']} "
          f"to other sites)")


if __name__ == "__main__":
    main()
