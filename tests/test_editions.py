"""The Colab and Jupyter editions (scripts/editions.py, `make editions`): every notebook page of the book without
its MyST markup, its glue roles replaced by the values the built book shows, its references linked to the
published pages, its mathematics rendering with a stock MathJax (the vendored one, no book macros, undefined
macros made errors) in headless Chromium. Needs the built book (`make test` builds it first)."""

import html
import json
import posixpath
import re
import sys
import tempfile
from pathlib import Path

import bs4
import nbformat
import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import editions  # noqa: E402
from test_browser import _TreeBuilder, _run  # noqa: E402  (the offline headless Chromium of the browser tests)

BOOK = editions.Book()
PAGES = BOOK.notebook_pages()
MATHJAX = ROOT / "_build" / "vendor" / "mathjax" / "tex-mml-chtml.js"
MYST_ROLE = re.compile(r"\{[a-z]+(?::[a-z]+)?\}`")
DIRECTIVE = re.compile(r"^\s*(```+|~~~+|:::+)\s*\{", re.M)
TARGET = re.compile(r"^\s*\([\w-]+\)=\s*$", re.M)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("colab")
    paths = editions.write_editions(out, BOOK)
    return out, {p.relative_to(out).with_suffix("").as_posix(): nbformat.read(p, as_version=4) for p in paths}


def _markdown(nb):
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def test_every_notebook_page_has_an_edition_with_its_data_files(written):
    out, eds = written
    assert sorted(eds) == sorted(PAGES) and len(PAGES) >= 10
    for pattern in editions.DATA_FILES:
        assert sorted(p.relative_to(out) for p in out.glob(pattern)) == sorted(p.relative_to(ROOT) for p in ROOT.glob(pattern))


@pytest.mark.parametrize("page", PAGES)
def test_no_myst_role_directive_target_or_book_macro_is_left(written, page):
    nb = written[1][page]
    macro = re.compile(r"\\(" + "|".join(BOOK.macros) + r")(?![A-Za-z])")
    for source in _markdown(nb):
        for pattern in (MYST_ROLE, DIRECTIVE, TARGET, macro):
            assert not pattern.search(source), f"{page}: {pattern.search(source)[0]!r} left in {source[:80]!r}"


def _is_solution(cell):
    return "solution" in cell.metadata.get("tags", [])


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _shown(outputs, widget_state=()):
    """The outputs an edition keeps: all but stderr, a widget view only where the notebook holds its state."""
    kept = []
    for o in outputs:
        if o.output_type == "stream" and o.name == "stderr":
            continue
        view = o.get("data", {}).get(WIDGET_VIEW)
        if view is not None and view["model_id"] not in widget_state:
            o = nbformat.from_dict({**o, "data": {k: v for k, v in o.data.items() if k != WIDGET_VIEW}})
        kept.append(o)
    return kept


def _widget_state(nb):
    return nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})


FOLDED = re.compile(r"<details><summary>Solution to (Task \d) \(click to open; copy the code into a cell to run "
                    r"it\)</summary>\n\n(`{3,})python\n(.*)\n\2\n\n</details>", re.S)


@pytest.mark.parametrize("page", PAGES)
def test_code_cells_and_outputs_are_the_notebooks_own(written, page):
    """Every code cell keeps its code and its outputs but stderr, except the install cell (its commit, tested
    below) and the reads of the records a page carries (tested below); every solution becomes Markdown holding
    exactly its code, folded, so that Run All never runs it."""
    original = nbformat.read(ROOT / f"{page}.ipynb", as_version=4)
    cells = [c for c in written[1][page].cells if c.get("id") != editions.RECORDS_CELL_ID]
    assert [c.cell_type for c in cells] == ["markdown" if _is_solution(c) else c.cell_type for c in original.cells]
    assert [c.get("id") for c in cells] == [c.get("id") for c in original.cells]
    pairs = [(c, o) for c, o in zip(cells, original.cells) if o.cell_type == "code"]
    kept = [(c, o) for c, o in pairs if not _is_solution(o) and "%pip install" not in o.source]
    state = _widget_state(original)
    assert [(c.source, c.outputs) for c, o in kept] == [(editions.carried(o.source), _shown(o.outputs, state))
                                                        for c, o in kept]
    for cell, orig in [(c, o) for c, o in pairs if _is_solution(o)]:
        folded = FOLDED.fullmatch(cell.source)
        assert folded and folded[3] == orig.source.rstrip(), cell.source
        assert cell.metadata["tags"] == orig.metadata["tags"]


def test_a_widget_without_saved_state_shows_its_plain_text_in_the_edition(written):
    """The comparator's output (notebook 4) keeps no widget state (the book does not show it), so its edition shows
    the line that says to run the cell, not JupyterLab's "Error displaying widget: model not found"."""
    source = nbformat.read(ROOT / "notebooks/nb04_comparator.ipynb", as_version=4)
    views = [o for c in source.cells if c.cell_type == "code" for o in c.outputs if WIDGET_VIEW in o.get("data", {})]
    assert views and not _widget_state(source), "notebook 4 shows no widget, or keeps its state: pick another case"
    shown = [o for c in written[1]["notebooks/nb04_comparator"].cells if c.cell_type == "code" for o in c.outputs
             if "run this cell to use the comparator" in o.get("data", {}).get("text/plain", "")]
    assert shown and not [o for o in shown if WIDGET_VIEW in o.data]


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("notebooks/")])
def test_no_solution_is_code_and_each_is_titled_with_its_task(written, page):
    nb = written[1][page]
    assert not [c for c in nb.cells if c.cell_type == "code" and _is_solution(c)], f"{page}: a solution Run All runs"
    solutions = [c for c in nb.cells if _is_solution(c)]
    assert len(solutions) >= 2, f"{page}: {len(solutions)} solutions"
    assert [FOLDED.fullmatch(c.source)[1] for c in solutions] == [f"Task {k}" for k in range(1, len(solutions) + 1)]


def test_a_fence_inside_a_solution_does_not_end_its_block():
    cell = nbformat.v4.new_code_cell('s = """\n```\n"""', metadata={"tags": ["solution"]})
    folded = editions.folded_solution(cell, "Task 1")
    assert FOLDED.fullmatch(folded.source)[3] == cell.source and "````python" in folded.source


@pytest.mark.parametrize("page", PAGES)
def test_each_glue_role_becomes_exactly_the_text_the_built_book_shows(page):
    """The values put in place of the glue roles, in order, are the texts of the page's pasted glue in the built
    HTML. The roles are fenced with markers first, so what replaced each one can be read back."""
    nb = nbformat.read(ROOT / f"{page}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = re.sub(r"\{glue(:text)?\}`[^`]*`", lambda m: f"\x02{m[0]}\x03", cell.source)
    nb, _ = editions.GluePreprocessor().preprocess(nb, {"book": BOOK, "docname": page})
    replaced = [v for s in _markdown(nb) for v in re.findall("\x02(.*?)\x03", s, re.S)]
    soup = bs4.BeautifulSoup((BOOK.html / f"{page}.html").read_text(encoding="utf-8"), "html.parser")
    shown = [span.get_text() for span in soup.find("article").find_all("span", class_="pasted-text")]
    assert replaced == shown


@pytest.mark.parametrize("page", PAGES)
def test_reference_links_point_at_published_pages_and_anchors_of_the_book(written, page):
    base = re.escape(BOOK.baseurl)
    for source in _markdown(written[1][page]):
        for text, target in re.findall(r"\[([^\]]+)\]\(" + base + r"([^)\s]+)\)", source):
            path, _, anchor = target.partition("#")
            built = BOOK.html / path
            assert built.exists(), f"{page}: link to {target}, which the book does not have"
            if anchor:
                assert f'id="{anchor}"' in built.read_text(encoding="utf-8"), f"{page}: no anchor {anchor} in {path}"
            assert text.strip() and "`" not in text


def test_a_theorem_reference_and_a_citation_read_as_the_book_gives_them(written):
    text = "\n".join(_markdown(written[1]["notebooks/nb01_socm_by_hand"]))
    assert f"[Theorem 2]({BOOK.baseurl}book/ch03_socm.html#thm-ch03-dmu-cos)" in text
    assert editions.author_year(BOOK.bibliography["hara2026socm"]) == ("Hara et al.", "2026")


def test_the_first_cell_has_a_colab_text_link_opening_this_edition(written):
    """A text link, not Colab's badge image, which shows broken in JupyterLab without a network."""
    for page, nb in written[1].items():
        url = f"https://colab.research.google.com/github/{BOOK.repository}/blob/{BOOK.editions_branch}/{page}.ipynb"
        first = nb.cells[0].source.splitlines()[0]
        assert nb.cells[0].cell_type == "markdown" and f"[Open in Colab]({url})" in first and "![" not in first


def test_macros_expand_with_arguments_and_nesting():
    macros = {"dmu": "d_{\\mu}", "norm": ["\\lVert #1 \\rVert", 1], "twice": ["\\norm{#1}\\norm{#1}", 1]}
    assert editions.expand_macros(r"$\dmu + \norm{x_{1}} - \twice a \dmuch$", macros) == \
        r"$d_{\mu} + \lVert x_{1} \rVert - \lVert a \rVert\lVert a \rVert \dmuch$"


def _math(content, info):
    tex = html.escape(content)
    return f"\\[{tex}\\]" if info["display_mode"] else f"\\({tex}\\)"


def _markdown_html(notebooks):
    md = MarkdownIt("commonmark", {"html": True}).use(dollarmath_plugin, renderer=_math)
    return [f'<section data-cell="{html.escape(name)} {i}">{md.render(src)}</section>'
            for name, nb in notebooks.items() for i, src in enumerate(_markdown(nb))]


def _page(notebooks):
    """One HTML page with every Markdown cell of `notebooks` (name: nb), typeset by the vendored MathJax with no
    book macros and undefined macros as errors (MathJax's `noundefined` package removed)."""
    cells = "".join(_markdown_html(notebooks))
    config = "window.MathJax = {tex: {packages: {'[-]': ['noundefined']}}};"
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><script>{config}</script>"
            f"<script src='{MATHJAX.as_uri()}'></script></head><body>{cells}</body></html>")


def _rendered_errors(notebooks):
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "editions.html"
        page.write_text(_page(notebooks), encoding="utf-8")
        builder = _TreeBuilder()
        builder.feed(_run(["--dump-dom", page.as_uri()]).stdout)
    root = builder.root
    formulas = len(re.findall(r"\\\(|\\\[", "".join(_markdown_html(notebooks))))
    assert formulas and len(root.select("mjx-container")) == formulas, "MathJax did not typeset every formula"
    errors = [n.text() for n in root.select("mjx-merror")]
    return errors, root.text()


def test_the_editions_render_with_a_stock_mathjax_without_errors_or_raw_glue(written):
    assert MATHJAX.exists(), "the vendored MathJax is missing: run scripts/fetch_assets.sh _build/vendor"
    errors, text = _rendered_errors(written[1])
    assert errors == [] and "{glue" not in text


def test_the_same_check_flags_the_book_sources(written):
    """The rendering check can fail: the book's own Markdown, macros and roles unresolved, gives errors."""
    errors, text = _rendered_errors({"nb01": nbformat.read(ROOT / "notebooks/nb01_socm_by_hand.ipynb", as_version=4)})
    assert errors and "{glue" in text


def _links(source):
    return [m["target"] for m in editions.LINK.finditer(source)]


def test_every_relative_link_opens_a_sibling_edition(written):
    """No edition links to a book source (``../book/ch01_….md``): relative links name editions that exist."""
    out, eds = written
    relative = 0
    for page, nb in eds.items():
        for source in _markdown(nb):
            for target in _links(source):
                if re.match(r"^([a-z][a-z0-9+.-]*:|#)", target):
                    continue
                relative += 1
                path = target.partition("#")[0]
                assert path.endswith(".ipynb"), f"{page}: relative link to a book source, {target}"
                assert (out / posixpath.dirname(page) / path).resolve().is_file(), f"{page}: {target} is no edition"
    assert relative >= 3


def test_chapter_links_of_the_sources_become_published_pages():
    """The link check can fail: the book's sources link chapters as .md files, which the edition rewrites."""
    page = "notebooks/nb03_extraction"
    source = "\n".join(_markdown(nbformat.read(ROOT / f"{page}.ipynb", as_version=4)))
    chapters = [t for t in _links(source) if t.endswith(".md")]
    assert chapters, "nb03 links no chapter any more: pick another notebook"
    nb, _ = editions.LinkPreprocessor().preprocess(nbformat.read(ROOT / f"{page}.ipynb", as_version=4),
                                                   {"book": BOOK, "docname": page})
    text = "\n".join(_markdown(nb))
    for target in chapters:
        name = posixpath.splitext(posixpath.normpath(posixpath.join("notebooks", target)))[0]
        assert f"]({BOOK.baseurl}{name}.html)" in text and f"]({target})" not in text


def test_a_link_to_no_page_of_the_book_is_an_error():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("See [here](../book/no_such_chapter.md).")])
    with pytest.raises(ValueError, match="no page of the book"):
        editions.LinkPreprocessor().preprocess(nb, {"book": BOOK, "docname": "notebooks/nb01_socm_by_hand"})


@pytest.mark.parametrize("page", PAGES)
def test_no_stderr_output_and_no_sentence_about_the_books_buttons(written, page):
    nb = written[1][page]
    streams = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream"]
    assert not [o for o in streams if o.name == "stderr"], f"{page}: stderr outputs (progress bars) are left"
    assert not [s for s in _markdown(nb) if re.search("rocket", s, re.I)], f"{page}: speaks of the rocket button"


def test_the_sources_have_what_the_editions_remove():
    """Both checks above can fail: a stderr output is dropped, and the sources hold rocket-button sentences."""
    bar = nbformat.v4.new_output("stream", name="stderr", text="tokens: 100%|##########| 200/200")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", outputs=[bar])])
    nb, _ = editions.OutputPreprocessor().preprocess(nb, {"book": BOOK})
    assert nb.cells[0].outputs == []
    nb = nbformat.read(ROOT / "notebooks/nb05_paper_protocol.ipynb", as_version=4)
    assert any("rocket button" in s for s in _markdown(nb))


def test_the_install_cell_installs_the_commit_the_edition_is_built_from(written):
    import subprocess

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    url = BOOK.config["repository"]["url"]
    for page in PAGES:  # the labs and the book's pages that compute (status, teaching)
        install = next(c for c in written[1][page].cells if c.cell_type == "code")
        assert f"git+{url}@{head}" in install.source, f"{page}: {install.source}"
        original = next(c for c in nbformat.read(ROOT / f"{page}.ipynb", as_version=4).cells if c.cell_type == "code")
        assert f"git+{url}@{head}" not in original.source  # the source names the branch


def test_kernel_metadata_is_what_ipykernel_reports(written):
    """JupyterLab rewrites a kernelspec display name or language_info that differs from the kernel's, which marks
    the notebook modified on opening (the sources say "Python 3"; ipykernel says "Python 3 (ipykernel)")."""
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelspec import get_kernel_dict

    for page, nb in written[1].items():
        assert nb.metadata.kernelspec.display_name == get_kernel_dict()["display_name"], page
        assert nb.metadata.language_info == IPythonKernel.language_info, page


def test_citations_read_as_plain_names(written):
    """A corporate author in braces ({tohoku-nlp}) and TeX accents show as text, not as raw BibTeX."""
    url = re.escape(f"{BOOK.baseurl}book/bibliography.html")
    cited = [t for nb in written[1].values() for s in _markdown(nb) for t in re.findall(r"\[([^\]]*)\]\(" + url, s)]
    assert any("tohoku-nlp" in t for t in cited)
    assert not [t for t in cited if re.search(r"[{}\\]", t)], [t for t in cited if re.search(r"[{}\\]", t)]


def test_the_books_download_button_serves_the_edition():
    """The built book's .ipynb download (``_sources/<page>.ipynb``, where its button points) is the edition."""
    for page in PAGES:
        html_page = (BOOK.html / f"{page}.html").read_text(encoding="utf-8")
        source = posixpath.relpath(f"_sources/{page}.ipynb", posixpath.dirname(page))
        assert f'href="{source}"' in html_page, f"{page}: no download link to {source}"
        served = nbformat.read(BOOK.html / "_sources" / f"{page}.ipynb", as_version=4)
        assert [c.source for c in served.cells] == [c.source for c in editions.plain_edition(page, BOOK).cells], page


def test_with_a_book_url_the_links_open_that_copy_of_the_book():
    """`make lab` points references, citations and chapter links at the book its server serves (scripts/book_lab.py)."""
    book = editions.Book(book_url="/book/")
    text = "\n".join(_markdown(editions.plain_edition("notebooks/nb01_socm_by_hand", book)))
    assert "[Theorem 2](/book/book/ch03_socm.html#thm-ch03-dmu-cos)" in text and BOOK.baseurl not in text
    cited = editions.CitationPreprocessor().preprocess(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("{cite:t}`hara2026socm`")]),
        {"book": book, "docname": "notebooks/nb01_socm_by_hand"})[0]
    assert cited.cells[0].source == "[Hara et al. (2026)](/book/book/bibliography.html)"


def test_from_a_source_archive_the_editions_are_written_and_say_what_they_install(tmp_path):
    """`make book` and `make lab` from `git archive` output (a release tarball, GitHub's "Download ZIP"), which has no
    .git: the steps of both that could ask git run in the archive. scripts/editions.py writes every edition, whose
    install cells keep the branch the notebooks name, and says so; the checks `make book` runs on the built pages
    (tests/test_book_html.py) pass. The archive holds HEAD with the working tree's changes to tracked files (`git stash
    create`); it reads the book built here, since a second build of the same sources runs the same jupyter-book,
    which asks git nothing (a full `make book` in an archive was run once by hand)."""
    import subprocess

    ref = subprocess.run(["git", "stash", "create"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "HEAD"
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    assert not (tmp_path / ".git").exists() and (tmp_path / "scripts" / "editions.py").exists()
    (tmp_path / "_build").mkdir()
    (tmp_path / "_build" / "html").symlink_to(BOOK.html)
    run = subprocess.run([sys.executable, "scripts/editions.py", "--out", str(tmp_path / "editions")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "no git checkout" in run.stdout and "keep the branch they name" in run.stdout, run.stdout
    import socm_lib

    assert f"version {socm_lib.__version__}" in run.stdout
    url = BOOK.config["repository"]["url"]
    for page in [p for p in PAGES if p.startswith("notebooks/")]:
        install = next(c for c in nbformat.read(tmp_path / "editions" / f"{page}.ipynb", as_version=4).cells
                       if c.cell_type == "code")
        original = next(c for c in nbformat.read(ROOT / f"{page}.ipynb", as_version=4).cells if c.cell_type == "code")
        assert install.source == original.source and f"git+{url}@" in install.source, page
    checks = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_book_html.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert checks.returncode == 0, checks.stdout[-3000:]


def test_the_nb02_edition_runs_from_the_top_without_stderr(tmp_path):
    """Run All of an edition prints no stderr (no pink block in JupyterLab): the library draws progress bars only on a
    terminal and the notebooks ask for none. nb02 showed one under load_encoder (issue 36)."""
    from nbclient import NotebookClient

    page = "notebooks/nb02_properties"
    editions.write_editions(tmp_path, BOOK)
    nb = nbformat.read(tmp_path / f"{page}.ipynb", as_version=4)
    NotebookClient(nb, timeout=1200, kernel_name="python3",
                   resources={"metadata": {"path": str((tmp_path / page).parent)}}).execute()
    streams = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream"]
    assert streams, "the edition printed nothing"
    assert not [o.text[:200] for o in streams if o.name == "stderr"]


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("nb*.ipynb")), ids=lambda p: p.name)
def test_the_committed_outputs_hold_no_stderr(path):
    """The committed outputs are what Run All printed (scripts/run_notebooks.py), so Run All printed no stderr."""
    nb = nbformat.read(path, as_version=4)
    found = [k for k, c in enumerate(nb.cells) if c.cell_type == "code"
             for o in c.outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not found, f"{path.name}: stderr in cells {sorted(set(found))}"


BOOK_PAGES = [p for p in PAGES if p.startswith("book/")]  # the status and teaching pages


#: Tag of a page's cell that runs the repository's own scripts (the teaching page's grader settings): an edition,
#: which has no scripts/ beside it, says where to run it instead of showing the book's output.
NEEDS_REPOSITORY = "needs-repository"


def _printed(nb):
    """What each code cell showed: its stdout and the plain text of its results, by cell id (the cells tagged
    NEEDS_REPOSITORY left out)."""
    return {c.id: [o.get("text") or o.get("data", {}).get("text/plain") for o in _shown(c.outputs)]
            for c in nb.cells if c.cell_type == "code" and c.id != editions.RECORDS_CELL_ID
            and NEEDS_REPOSITORY not in c.metadata.get("tags", [])}


def _repository_cells(nb):
    """What the cells tagged NEEDS_REPOSITORY printed, by cell id."""
    return {c.id: "".join(o.get("text", "") for o in c.outputs) for c in nb.cells
            if c.cell_type == "code" and NEEDS_REPOSITORY in c.metadata.get("tags", [])}


@pytest.mark.parametrize("page", BOOK_PAGES)
def test_a_book_page_edition_runs_in_the_lab_folder_and_alone(tmp_path, page):
    """The edition of the status and teaching pages runs from the top where `make lab` puts it (scripts/book_lab.py)
    and as a notebook alone in an empty folder (Colab, a download), with no file beside it, and shows what the
    book shows: it carries the records it reads (notebooks/*.json)."""
    import shutil

    import book_lab
    from nbclient import NotebookClient

    lab = tmp_path / "lab"
    book_lab.prepare(lab)
    alone = tmp_path / "alone" / Path(page).name
    alone.parent.mkdir()
    shutil.copyfile(lab / f"{page}.ipynb", alone)
    committed = _printed(nbformat.read(ROOT / f"{page}.ipynb", as_version=4))
    for path in (lab / f"{page}.ipynb", alone):
        nb = nbformat.read(path, as_version=4)
        assert "../notebooks/" not in "".join(c.source for c in nb.cells if c.cell_type == "code")
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
        assert _printed(nb) == committed, f"{path}: the edition shows other results than the book"
        away = {k: text for k, text in _repository_cells(nb).items() if "run this page from a clone" not in text}
        assert not away, f"{path}: cells that need the repository ran without it: {away}"
    assert sorted(p.name for p in alone.parent.iterdir()) == [alone.name], "running it wrote beside it"


def test_a_page_reading_records_it_cannot_carry_is_an_error():
    """The records check can fail: a page that reads notebooks/ another way is refused, and one that reads a record
    the way the pages do carries it."""
    read = nbformat.v4.new_code_cell('record = json.loads(Path("../notebooks/execution.json").read_text())')
    nb, _ = editions.RecordsPreprocessor().preprocess(nbformat.v4.new_notebook(cells=[read]),
                                                      {"book": BOOK, "docname": "book/status"})
    assert [c.id for c in nb.cells] == [editions.RECORDS_CELL_ID, read.id]
    assert nb.cells[1].source == 'record = RECORDS["execution.json"]'
    scope = {}
    exec(nb.cells[0].source, scope)
    assert scope["RECORDS"]["execution.json"] == json.loads((ROOT / "notebooks/execution.json").read_text())
    other = nbformat.v4.new_code_cell('text = open("../notebooks/grading.json").read()')
    with pytest.raises(ValueError, match="cannot carry"):
        editions.RecordsPreprocessor().preprocess(nbformat.v4.new_notebook(cells=[other]),
                                                  {"book": BOOK, "docname": "book/teaching"})
