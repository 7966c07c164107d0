"""The plain (Colab and Jupyter) edition of every book notebook, and the student edition built from it.

    python scripts/editions.py            (what `make editions` runs: writes _build/colab/<same paths>)
    python scripts/editions.py --branch   (prints the branch the Pages workflow publishes the editions to)

The book's notebooks are written in MyST: glue roles, cross-references, citations and the macros of
`_config.yml` only mean something to Sphinx. Opened in Jupyter or Colab they show raw. The edition of a
notebook is the same notebook with that markup resolved into plain Markdown, by a chain of nbconvert
preprocessors (one transformation, shared by every edition; the student edition adds three more):

- `GluePreprocessor`: ``{glue:text}`key:fmt``` becomes the value the notebook's own outputs record, formatted
  by myst-nb's own `format_plain_text` (the function the book's glue role calls), so it is exactly the text
  the book shows.
- `ReferencePreprocessor`: ``{prf:ref}``, ``{numref}``, ``{eq}`` and ``{doc}`` become Markdown links to the
  published page and anchor (``html.baseurl`` of `_config.yml`; ``--book-url`` names another copy of the book, as
  `make lab` does for the one built on this machine), with the visible text the built book gives
  them ("Theorem 2", "(9)", a page's title). The text and target are read from the built HTML page of the
  same notebook (`_build/html`), where Sphinx has already resolved and numbered every reference; a page
  title for ``{doc}`` from the built book's inventory (`objects.inv`, read by `sphinx.util.inventory`).
- `CitationPreprocessor`: ``{cite:t}`` / ``{cite:p}`` become "Hara et al. (2026)" / "(Hara et al., 2026)",
  names and years read from `book/references.bib` by pybtex, linked to the bibliography page.
- `MacroPreprocessor`: the book macros (`mathjax3_config.tex.macros` of `_config.yml`, the single list) are
  expanded in the Markdown, so the mathematics renders with a stock MathJax.
- `LinkPreprocessor`: plain Markdown links to the book's sources become links a reader can follow: a chapter
  (``../book/ch01_….md``) to its published page, a notebook page to its sibling edition (a relative ``.ipynb``
  link, which JupyterLab opens and which Colab resolves to the same branch); a link to a file that is not a page
  of the book is an error. Sentences about the book's own buttons are reworded (`BOOK_ONLY`).
- `SolutionPreprocessor`: each "Your turn" solution becomes a folded Markdown block (``<details>``), which JupyterLab
  and Colab show closed and Run All never runs.
- `OutputPreprocessor`: stderr outputs (progress bars) removed, as the book removes them (``nb_output_stderr``),
  and a widget view whose state the notebook does not hold becomes its plain text ("run this cell ..."), which
  JupyterLab shows instead of "Error displaying widget: model not found".
- `InstallPreprocessor`: the Colab install cell installs the library at the commit the edition is built from,
  not the moving branch, so notebook and library cannot drift apart. Built from a copy that is no git checkout (a
  source archive, GitHub's "Download ZIP"), the cell keeps the branch it names, and the script says so.
- `RecordsPreprocessor`: a page that reads the book's records (``json.loads(Path("../notebooks/<name>.json")
  .read_text())``: the status and teaching pages read execution.json, rehearsal.json, grading.json) carries them:
  each such read becomes ``RECORDS["<name>.json"]``, and a folded cell before the first one defines ``RECORDS``, the
  records as they were when the edition was built. So the edition runs where it opens, in Colab, in `make lab`'s
  folder or as a downloaded notebook with nothing beside it.
- `KernelPreprocessor`: the kernel metadata that ipykernel itself reports, so JupyterLab does not rewrite it
  (and mark the notebook modified) the moment the kernel connects.
- `ColabBadgePreprocessor`: an "Open in Colab" link in the first cell, pointing at this edition on the
  editions branch (`html_theme_options.repository_branch` of `_config.yml`, which the book's Colab buttons
  use too); a text link, not Colab's badge image, which shows broken without a network.

`write_editions` also puts each edition in place of the raw source that the built book's download button
serves (``_build/html/_sources/<page>.ipynb``).

Why preprocessors and not sphinx-tojupyter (the route QuantEcon uses, tried on this book): it
drops every output (a reader of the Colab edition would see no figure or table until re-running every
cell, and some cells need a network or minutes), needs a language-synonym setting or code becomes Markdown
fences, writes links to the local `.ipynb` files unless told otherwise, puts the macros in a `\\newcommand`
cell and writes inline maths with inner spaces. nbconvert's preprocessors (maintained with Jupyter) keep the
notebook and its outputs as they are and change only the markup; resolution itself is not redone by hand:
glue formatting is myst-nb's, reference numbers and targets are Sphinx's (read from the built book).
"""

import argparse
import json
import posixpath
import pprint
import re
import shutil
import subprocess
from functools import cached_property
from pathlib import Path
from urllib.parse import quote

import bs4
import nbformat
import yaml
from myst_nb.core.render import WIDGET_STATE_MIMETYPE, WIDGET_VIEW_MIMETYPE
from myst_nb.core.variables import format_plain_text
from myst_nb.ext.glue import extract_glue_data_cell
from nbconvert.preprocessors import Preprocessor
from pybtex.database import parse_file
from pybtex.richtext import Text
from sphinx.util.inventory import InventoryFile

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
OUT = ROOT / "_build" / "colab"
# the files the notebooks read, relative to the repository root, carried with every edition
DATA_FILES = ["benchmarks/results/*.json", "notebooks/execution.json", "notebooks/rehearsal.json",
              "notebooks/explorer/*.json"]

ROLE = re.compile(r"\{(?P<role>[a-z]+(?::[a-z]+)?)\}`(?P<content>[^`]*)`")
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


class Book:
    """What the editions need from the book: its configuration and its built HTML."""

    def __init__(self, root: Path = ROOT, html: Path = HTML, commit: str | None = None, book_url: str | None = None):
        self.root, self.html, self._commit, self._book_url = root, html, commit, book_url
        self.config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))

    @property
    def baseurl(self) -> str:
        """Where the book is published (``html.baseurl`` of `_config.yml`)."""
        return self.config["html"]["baseurl"].rstrip("/") + "/"

    @property
    def book_url(self) -> str:
        """Where the editions' references, citations and chapter links point: the copy of the book given, or the
        published one."""
        return (self._book_url or self.baseurl).rstrip("/") + "/"

    @property
    def macros(self) -> dict:
        return self.config["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]

    @property
    def repository(self) -> str:
        return self.config["repository"]["url"].removeprefix("https://github.com/")

    @property
    def editions_branch(self) -> str:
        return self.config["sphinx"]["config"]["html_theme_options"]["repository_branch"]

    @property
    def removes_stderr(self) -> bool:
        return self.config["sphinx"]["config"].get("nb_output_stderr") == "remove"

    @cached_property
    def commit(self) -> str | None:
        """The commit the editions are built from: the one given, or `git rev-parse HEAD` of the book's checkout;
        None where the book's folder is no git checkout (a source archive, even one unpacked inside another
        repository)."""
        if self._commit:
            return self._commit
        try:
            done = subprocess.run(["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=self.root, capture_output=True,
                                  text=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            return None
        top, head = done.stdout.splitlines()
        return head if Path(top).resolve() == self.root.resolve() else None

    def install_note(self) -> str:
        """What the install cells of the editions install, in a sentence."""
        if self.commit:
            return f"the install cells install the library at commit {self.commit[:12]}"
        version = re.search(r'__version__ = "([^"]+)"', (self.root / "socm_lib" / "__init__.py").read_text("utf-8"))
        return (f"{self.root} is no git checkout (a source archive?), so the commit is unknown: the install cells "
                f"keep the branch they name, and Colab installs that branch's library, which may be newer than this "
                f"copy's (version {version[1] if version else 'unknown'}); pass --commit to name a commit")

    def colab_url(self, path: str) -> str:
        colab = self.config["launch_buttons"]["colab_url"].rstrip("/")
        return f"{colab}/github/{self.repository}/blob/{self.editions_branch}/{path}"

    def notebook_pages(self) -> list[str]:
        """The docnames of the book's pages that are notebooks (the table of contents, in order)."""
        return [f for f in self.pages() if (self.root / f"{f}.ipynb").exists()]

    def pages(self) -> list[str]:
        """The docnames of every page of the book (the table of contents, in order)."""
        toc = yaml.safe_load((self.root / "_toc.yml").read_text(encoding="utf-8"))
        return [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]

    @cached_property
    def titles(self) -> dict[str, str]:
        """Page titles by docname, from the built book's inventory."""
        path = self.html / "objects.inv"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: build the book first (make build-book)")
        with path.open("rb") as f:
            inventory = InventoryFile.load(f, "", posixpath.join)
        return {name: entry[3] for name, entry in inventory["std:doc"].items()}

    def page_links(self, docname: str) -> dict[str, tuple[str, str]]:
        """Internal links of a built page's article: absolute URL without base -> visible text, keyed by the
        link's anchor (or by the target docname for links without one)."""
        path = self.html / f"{docname}.html"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: build the book first (make build-book)")
        article = bs4.BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser").find("article")
        links = {}
        for a in article.find_all("a", class_="internal", href=True):
            page, _, anchor = a["href"].partition("#")
            target = posixpath.normpath(posixpath.join(posixpath.dirname(docname), page)) if page else f"{docname}.html"
            links.setdefault(anchor or target, (f"{target}#{anchor}" if anchor else target, a.get_text()))
        return links

    @cached_property
    def bibliography(self):
        return parse_file(str(self.root / self.config["bibtex_bibfiles"][0])).entries


def _replace_roles(source: str, roles: set[str], replace) -> str:
    return ROLE.sub(lambda m: replace(m["role"], m["content"]) if m["role"] in roles else m[0], source)


def _markdown_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "markdown"]


class GluePreprocessor(Preprocessor):
    """``{glue:text}`key:fmt``` -> the glued value, formatted as the book does (myst-nb's format_plain_text)."""

    def preprocess(self, nb, resources):
        glued = {}
        for cell in nb.cells:
            if cell.cell_type == "code":
                copy = nbformat.from_dict(cell)  # extract_glue_data_cell rewrites the outputs it reads
                glued.update({key: out["data"] for key, out in extract_glue_data_cell(copy)})

        def value(role, content):
            key, _, fmt = content.rpartition(":") if ":" in content else (content, "", "")
            if "::" in key:
                raise ValueError(f"{resources.get('docname')}: glue from another page ({content}) is not supported")
            if key not in glued or "text/plain" not in glued[key]:
                raise ValueError(f"{resources.get('docname')}: no glued text/plain named {key!r}: execute the notebook")
            return format_plain_text(glued[key]["text/plain"], fmt or "s")

        for cell in _markdown_cells(nb):
            cell.source = _replace_roles(cell.source, {"glue:text", "glue"}, value)
        return nb, resources


TARGET = re.compile(r"^\s*\((?P<label>[\w-]+)\)=\s*$", re.M)  # a MyST target line, "(label)="


class ReferencePreprocessor(Preprocessor):
    """``{prf:ref}``, ``{numref}``, ``{eq}``, ``{doc}`` -> links to the published page, with the book's text.

    A MyST target line ``(label)=`` becomes an HTML anchor ``<a id="label"></a>``, which Jupyter and Colab render
    invisibly, so the section keeps its name inside the edition.
    """

    def preprocess(self, nb, resources):
        book, docname = resources["book"], resources["docname"]
        links = {}

        def link(role, content):
            if not links:  # read the built page only for a notebook that has references
                links.update(book.page_links(docname))
            explicit = EXPLICIT.match(content)
            text, target = (explicit["text"], explicit["target"]) if explicit else (None, content)
            if role == "doc":
                page = posixpath.normpath(posixpath.join(posixpath.dirname(docname), target))
                url, shown = f"{page}.html", book.titles[page]
            else:
                anchor = f"equation-{target}" if role == "eq" else target
                if anchor not in links:
                    raise ValueError(f"{docname}: the built page has no link to {target!r} ({role}): rebuild the book")
                url, shown = links[anchor]
            return f"[{text or shown}]({book.book_url}{url})"

        for cell in _markdown_cells(nb):
            cell.source = _replace_roles(cell.source, {"prf:ref", "numref", "eq", "doc", "ref"}, link)
            cell.source = TARGET.sub(lambda m: f'<a id="{m["label"]}"></a>', cell.source)
        return nb, resources


def author_year(entry) -> tuple[str, str]:
    """("Hara et al.", "2026") for a bibliography entry: one or two surnames, or the first and "et al."."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    surnames = [Text.from_latex(" ".join(p.last_names)).render_as("text") for p in people]  # {tohoku-nlp} -> tohoku-nlp
    names = surnames[0] if len(surnames) == 1 else " and ".join(surnames) if len(surnames) == 2 else f"{surnames[0]} et al."
    return names, entry.fields.get("year", "n.d.")


class CitationPreprocessor(Preprocessor):
    """``{cite:t}`key``` -> "[Hara et al. (2026)](…bibliography)"; ``{cite:p}`` -> "([Hara et al., 2026](…))"."""

    def preprocess(self, nb, resources):
        book = resources["book"]
        url = f"{book.book_url}book/bibliography.html"

        def cite(role, content):
            items = []
            for key in (k.strip() for k in content.split(",")):
                if key not in book.bibliography:
                    raise ValueError(f"{resources['docname']}: {key!r} is not in {book.config['bibtex_bibfiles'][0]}")
                names, year = author_year(book.bibliography[key])
                items.append(f"[{names} ({year})]({url})" if role == "cite:t" else f"[{names}, {year}]({url})")
            return ", ".join(items) if role == "cite:t" else "(" + "; ".join(items) + ")"

        for cell in _markdown_cells(nb):
            cell.source = _replace_roles(cell.source, {"cite:t", "cite:p"}, cite)
        return nb, resources


def _argument(text: str, i: int) -> tuple[str, int]:
    """The TeX argument starting at text[i] (after spaces): a balanced {…} group's inside, or one token."""
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] == "{":
        depth = 0
        for j in range(i, len(text)):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                return text[i + 1:j], j + 1
        raise ValueError(f"unbalanced braces in {text[i:i + 40]!r}")
    control = re.match(r"\\[A-Za-z]+|\\.|.", text[i:], re.S)
    if control is None:
        raise ValueError("a macro argument is missing at the end of the text")
    return control[0], i + len(control[0])


def expand_macros(text: str, macros: dict) -> str:
    """Expand the book's MathJax macros (name: body, or name: [body with #1…, number of arguments])."""
    pattern = re.compile(r"\\(" + "|".join(sorted(map(re.escape, macros), key=len, reverse=True)) + r")(?![A-Za-z])")
    for _ in range(10):  # macros may use macros
        out, i, changed = [], 0, False
        for m in pattern.finditer(text):
            if m.start() < i:
                continue
            body, nargs = (macros[m[1]], 0) if isinstance(macros[m[1]], str) else macros[m[1]]
            j = m.end()
            for k in range(1, nargs + 1):
                arg, j = _argument(text, j)
                body = body.replace(f"#{k}", arg)
            out += [text[i:m.start()], body]
            i, changed = j, True
        text = "".join(out) + text[i:]
        if not changed:
            return text
    raise ValueError("the book macros expand into themselves")


class MacroPreprocessor(Preprocessor):
    """The book macros of _config.yml expanded in every Markdown cell."""

    def preprocess(self, nb, resources):
        for cell in _markdown_cells(nb):
            cell.source = expand_macros(cell.source, resources["book"].macros)
        return nb, resources


BADGE = "[Open in Colab]({url})"


class ColabBadgePreprocessor(Preprocessor):
    """An "Open in Colab" link, pointing at this edition, at the top of the first Markdown cell."""

    def preprocess(self, nb, resources):
        badge = BADGE.format(url=resources["book"].colab_url(quote(resources["docname"]) + ".ipynb"))
        first = next(iter(_markdown_cells(nb)), None)
        if first is None:
            nb.cells.insert(0, nbformat.v4.new_markdown_cell(badge))
        else:
            first.source = f"{badge}\n\n{first.source}"
        return nb, resources


LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")  # a Markdown link (not an image)
#: Sentences that speak of the book's own interface, and what the edition says instead (true in every edition,
#: with or without the Colab badge).
BOOK_ONLY = [(re.compile(r",? with the rocket button(?: above)?(?=[ ,.])"), "")]


class LinkPreprocessor(Preprocessor):
    """Relative Markdown links to the book's sources -> the published page (chapters) or the sibling edition
    (notebook pages); sentences about the book's buttons reworded (`BOOK_ONLY`)."""

    def preprocess(self, nb, resources):
        book, docname = resources["book"], resources["docname"]
        here = posixpath.dirname(docname)
        pages, notebooks = set(book.pages()), set(book.notebook_pages())

        def link(m):
            target = m["target"]
            if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target):  # absolute, or an anchor of this notebook
                return m[0]
            path, hash_, anchor = target.partition("#")
            page = posixpath.splitext(posixpath.normpath(posixpath.join(here, path)))[0]
            if page not in pages:
                raise ValueError(f"{docname}: the link {target!r} points at no page of the book")
            if page in notebooks:
                url = posixpath.relpath(f"{page}.ipynb", here or ".")
            else:
                url = f"{book.book_url}{page}.html"
            return f"[{m['text']}]({url}{hash_}{anchor})"

        for cell in _markdown_cells(nb):
            cell.source = LINK.sub(link, cell.source)
            for pattern, replacement in BOOK_ONLY:
                cell.source = pattern.sub(replacement, cell.source)
        return nb, resources


SOLUTION_TAG = "solution"
TASK_HEADING = re.compile(r"^###\s+(Task\s+\d+)", re.M)


class SolutionPreprocessor(Preprocessor):
    """Every "Your turn" solution (a code cell tagged `solution`) folded away until the reader opens it, and never
    run by Run All.

    The book folds a solution's code behind a toggle (tag `hide-input`), which Jupyter and Colab ignore; and a
    collapsed code cell is still run by Run All, after which JupyterLab unfolds its outputs (the solution's value and
    its check's "right."). So in the edition a solution is not code the notebook runs: it becomes a Markdown cell
    holding the book's code in a closed ``<details>`` block, "Solution to Task k", which JupyterLab and Colab both
    render folded. A reader who wants to run it copies it into a cell; it computes into `solution`, never into the
    student's `answer`. The cell keeps its tags, so the student edition still finds and removes it.
    """

    def preprocess(self, nb, resources):
        task = "the task"
        for k, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                task = (TASK_HEADING.findall(cell.source) or [task])[-1]
            if cell.cell_type == "code" and SOLUTION_TAG in cell.metadata.get("tags", []):
                nb.cells[k] = folded_solution(cell, task)
        return nb, resources


def folded_solution(cell, task: str) -> nbformat.NotebookNode:
    """The Markdown cell that shows the solution code cell `cell` of `task` folded, with its id and tags."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", cell.source)), default=0))
    source = (f"<details><summary>Solution to {task} (click to open; copy the code into a cell to run it)</summary>"
              f"\n\n{fence}python\n{cell.source.rstrip()}\n{fence}\n\n</details>")
    folded = nbformat.v4.new_markdown_cell(source, metadata={"tags": list(cell.metadata["tags"])})
    if "id" in cell:
        folded.id = cell.id
    return folded


class OutputPreprocessor(Preprocessor):
    """stderr outputs (progress bars) removed where the book removes them (``nb_output_stderr: remove``); a widget
    view without its saved state reduced to its other forms (the plain text that says to run the cell)."""

    def preprocess(self, nb, resources):
        state = nb.metadata.get("widgets", {}).get(WIDGET_STATE_MIMETYPE, {}).get("state", {})
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            if resources["book"].removes_stderr:
                cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
            for output in cell.outputs:
                view = output.get("data", {}).get(WIDGET_VIEW_MIMETYPE)
                if view is not None and view.get("model_id") not in state:
                    del output.data[WIDGET_VIEW_MIMETYPE]
        return nb, resources


class InstallPreprocessor(Preprocessor):
    """``git+<repository>@<branch>`` in the code cells (the Colab install cell) -> ``@<commit>`` the edition is
    built from (`Book.commit`), so the library installed is the one the notebook was written for; unchanged where
    the commit is unknown (`Book.install_note` says so)."""

    def preprocess(self, nb, resources):
        book = resources["book"]
        if book.commit is None:
            return nb, resources
        pattern = re.compile(re.escape(f"git+{book.config['repository']['url']}@") + r"[\w./-]+")
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = pattern.sub(f"git+{book.config['repository']['url']}@{book.commit}", cell.source)
        return nb, resources


RECORD_READ = re.compile(r'json\.loads\(Path\("\.\./notebooks/(?P<name>[\w.-]+\.json)"\)\.read_text\(\)\)')
RECORDS_CELL_ID = "carried-records"


def carried(source: str) -> str:
    """`source` with every read of a record (`RECORD_READ`) made a read of the copy the edition carries."""
    return RECORD_READ.sub(lambda m: f'RECORDS["{m["name"]}"]', source)


class RecordsPreprocessor(Preprocessor):
    """Every read of a record of the book's repository (`RECORD_READ`) -> ``RECORDS[name]``, which a folded cell,
    inserted before the first cell that reads one, defines from the records as they are now. Any other mention of
    ``../notebooks/`` left in a code cell is an error: the edition could not run alone."""

    def preprocess(self, nb, resources):
        book, names, first = resources["book"], {}, None
        for k, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            for m in RECORD_READ.finditer(cell.source):
                names.setdefault(m["name"], None)
                first = k if first is None else first
            cell.source = carried(cell.source)
            if "../notebooks/" in cell.source:
                raise ValueError(f"{resources['docname']}: a code cell reads ../notebooks/ in a way the edition cannot "
                                 f"carry (read records as json.loads(Path(\"../notebooks/<name>.json\").read_text())):"
                                 f" {cell.source[:120]!r}")
        if names:
            nb.cells.insert(first, records_cell(book, list(names)))
        return nb, resources


def records_cell(book: "Book", names: list[str]) -> nbformat.NotebookNode:
    """The folded code cell that defines ``RECORDS``: the records `names` of notebooks/ as they are now."""
    records = {name: json.loads((book.root / "notebooks" / name).read_text(encoding="utf-8")) for name in names}
    built = f"commit {book.commit[:12]}" if book.commit else "a copy that is no git checkout"
    source = (f"# @title The records this page reads, carried by this edition (built from {built})\n"
              "# Colab, and a notebook downloaded alone, have no notebooks/ folder beside them: the cells below read\n"
              f"# these copies of {', '.join('notebooks/' + n for n in names)}, as they were when the edition was built.\n"
              f"RECORDS = {pprint.pformat(records, width=116, sort_dicts=False)}")
    cell = nbformat.v4.new_code_cell(source, metadata={"jupyter": {"source_hidden": True}, "cellView": "form"})
    cell.id = RECORDS_CELL_ID
    return cell


class KernelPreprocessor(Preprocessor):
    """The kernel metadata as ipykernel reports it (its kernelspec's name and display name, the running Python's
    language_info): JupyterLab rewrites any other value when the kernel connects, which marks the notebook
    modified before the reader has changed anything."""

    def preprocess(self, nb, resources):
        from ipykernel.ipkernel import IPythonKernel
        from ipykernel.kernelspec import KERNEL_NAME, get_kernel_dict

        spec = get_kernel_dict()
        nb.metadata["kernelspec"] = {"display_name": spec["display_name"], "language": spec["language"],
                                     "name": KERNEL_NAME}
        nb.metadata["language_info"] = dict(IPythonKernel.language_info)
        return nb, resources


PLAIN = [GluePreprocessor, ReferencePreprocessor, CitationPreprocessor, MacroPreprocessor, LinkPreprocessor,
         SolutionPreprocessor, OutputPreprocessor, InstallPreprocessor, RecordsPreprocessor, KernelPreprocessor,
         ColabBadgePreprocessor]


def run_preprocessors(nb, preprocessors, resources):
    for preprocessor in preprocessors:  # .preprocess runs them whatever their `enabled` default
        nb, resources = preprocessor().preprocess(nb, resources)
    nbformat.validate(nb)
    return nb


def plain_edition(docname: str, book: Book | None = None, preprocessors=PLAIN) -> nbformat.NotebookNode:
    """The Colab/Jupyter edition of the book page `docname` (e.g. "notebooks/nb01_socm_by_hand"), or, given
    more `preprocessors` after PLAIN's, an edition built from it."""
    book = book or Book()
    nb = nbformat.read(book.root / f"{docname}.ipynb", as_version=4)
    return run_preprocessors(nb, preprocessors, {"book": book, "docname": docname})


def copy_data_files(root: Path, out: Path) -> list[Path]:
    """Copy the files the notebooks read (DATA_FILES) from `root` to the same paths under `out`."""
    copied = []
    for pattern in DATA_FILES:
        for path in sorted(root.glob(pattern)):
            target = out / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copied.append(target)
    return copied


def write_editions(out: Path = OUT, book: Book | None = None, downloads: bool = False) -> list[Path]:
    """Write the edition of every notebook page to `out`/<docname>.ipynb, with the data files; return paths.
    With `downloads`, also put each edition in place of the raw source the built book's download button serves
    (``_sources/<docname>.ipynb`` of the built HTML)."""
    book = book or Book()
    written = []
    for docname in book.notebook_pages():
        path = out / f"{docname}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        edition = plain_edition(docname, book)
        nbformat.write(edition, path)
        written.append(path)
        if downloads:
            source = book.html / "_sources" / f"{docname}.ipynb"
            if not source.exists():
                raise FileNotFoundError(f"{source} is missing: the built book serves no download of {docname}")
            nbformat.write(edition, source)
    copy_data_files(book.root, out)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the editions (default _build/colab)")
    parser.add_argument("--branch", action="store_true", help="print the editions branch and exit")
    parser.add_argument("--downloads", action="store_true",
                        help="also replace the built book's downloadable sources (_build/html/_sources) by the editions")
    parser.add_argument("--commit", help="the commit the install cells install (default: the checkout's HEAD)")
    parser.add_argument("--book-url", help="where references and chapter links point (default: the published book, "
                                           "html.baseurl of _config.yml)")
    args = parser.parse_args(argv)
    if args.branch:
        print(Book().editions_branch)
        return
    book = Book(commit=args.commit, book_url=args.book_url)
    written = write_editions(args.out, book, downloads=args.downloads)
    print(f"{len(written)} editions in {args.out}/" + (", and in the book's downloads" if args.downloads else "")
          + f"; {book.install_note()}; links to the book point at {book.book_url}")


if __name__ == "__main__":
    main()
