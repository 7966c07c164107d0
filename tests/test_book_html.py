"""Checks on the built book (_build/html), run after `jupyter-book build` by `make book` and `make test`."""

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def _toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    return files


@pytest.fixture(scope="module", autouse=True)
def built_book():
    if not (HTML / "index.html").exists():
        pytest.fail("The book is not built: run `make build-book` (or `make test`, which builds it first).")


@pytest.mark.parametrize("page", _toc_files())
def test_every_toc_page_is_built_without_errors(page):
    html = (HTML / f"{page}.html").read_text(encoding="utf-8")
    assert 'class="system-message"' not in html, f"{page}: docutils error rendered into the page"
    assert 'class="problematic"' not in html, f"{page}: unresolved reference rendered into the page"
    assert "???" not in re.sub(r"<script.*?</script>", "", html, flags=re.S), f"{page}: unresolved number"


def test_chapters_use_proofs_and_exercises():
    chapters = [p for p in _toc_files() if Path(p).name.startswith("ch")]
    for page in chapters:
        html = (HTML / f"{page}.html").read_text(encoding="utf-8")
        assert "exercise" in html, f"{page} has no exercise"
        assert "solution" in html, f"{page} has no solution"
    proofs = sum((HTML / f"{p}.html").read_text(encoding="utf-8").count('class="proof') for p in chapters)
    assert proofs >= 10


def _in_repository(path: str) -> bool:
    """Whether `path` is a file of the repository: tracked by git in a clone; present in a source archive (`git
    archive`, GitHub's "Download ZIP"), which holds the tracked files and no .git."""
    if not (ROOT / ".git").exists():
        return (ROOT / path).is_file()
    listed = subprocess.run(["git", "ls-files", "--", path], cwd=ROOT, capture_output=True, text=True, check=True)
    return listed.stdout.split() == [path]


NOTEBOOK_PAGES = [p for p in _toc_files() if (ROOT / f"{p}.ipynb").exists()]


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_notebook_pages_have_valid_colab_links(page):
    """The Colab buttons open the page's plain edition (scripts/editions.py), which the Pages workflow publishes
    at the same path on the editions branch (html_theme_options.repository_branch)."""
    html = (HTML / f"{page}.html").read_text(encoding="utf-8")
    repo = CONFIG["repository"]["url"].removeprefix("https://github.com/")
    branch = CONFIG["sphinx"]["config"]["html_theme_options"]["repository_branch"]
    links = re.findall(r'href="(https://colab\.research\.google\.com/github/[^"]+)"', html)
    assert links, f"{page}: no Colab launch link"
    prefix = f"https://colab.research.google.com/github/{repo}/blob/{branch}/"
    for link in links:
        assert link.startswith(prefix), f"{page}: Colab link {link} does not point at {repo}@{branch}"
        path = link[len(prefix):]
        assert path == f"{page}.ipynb" and _in_repository(path), f"{page}: {path} is not this page's notebook"


def _has_widgets(path: Path) -> bool:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return any(
        "application/vnd.jupyter.widget-view+json" in out.get("data", {})
        for cell in nb["cells"] if cell["cell_type"] == "code" for out in cell.get("outputs", [])
    )


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_a_page_embeds_widget_state_only_where_it_shows_a_widget(page):
    """A widget the page shows is drawn from its embedded state; a widget output the book removes (the comparator's:
    it needs a kernel) leaves no state, which would load RequireJS and the widget manager for nothing
    (scripts/run_notebooks.py saves state only where the book shows a widget)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from run_notebooks import shows_a_widget

    shown = shows_a_widget(nbformat.read(ROOT / f"{page}.ipynb", as_version=4))
    html = (HTML / f"{page}.html").read_text(encoding="utf-8")
    assert ("application/vnd.jupyter.widget-state+json" in html) == shown, f"{page}: widget state {shown=}"
    assert ("requirejs/require.js" in html) == shown and ("html-manager/embed-amd.js" in html) == shown, page


def test_at_least_one_page_has_widgets():
    assert any(_has_widgets(ROOT / f"{p}.ipynb") for p in NOTEBOOK_PAGES)


def test_computing_chapter_shows_the_committed_benchmark_results():
    """Chapter 6 shows every committed target with its verdict, and the scaling figure the benchmark drew."""
    import html as html_lib

    page = html_lib.unescape((HTML / "book" / "ch06_computing.html").read_text(encoding="utf-8"))
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    results = ROOT / "benchmarks" / "results"
    targets = {**json.loads((results / "metric.json").read_text())["targets"],
               **json.loads((results / "extraction.json").read_text())["targets"]}
    for t in targets.values():
        verdict = "met" if t["met"] else "MISSED"
        assert re.search(re.escape(t["target"]) + r" .{0,200}? " + verdict + r"\b", text), t["target"]
    figure = re.search(r'<img[^>]+src="([^"]*scaling[^"]*\.png)"', page)
    assert figure, "the scaling figure is missing from Chapter 6"
    shown = (HTML / "book" / figure.group(1)).resolve()
    assert shown.read_bytes() == (results / "scaling.png").read_bytes()


def test_pages_load_scripts_and_styles_from_the_book_itself():
    """No CDN: every script and stylesheet a page loads is a file of the built book (MathJax, RequireJS and the
    widgets' HTML manager included, fetched into _static/ by `make build-book`)."""
    pages = sorted(p for p in HTML.rglob("*.html") if "_static" not in p.relative_to(HTML).parts)
    assert len(pages) >= len(_toc_files())
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assets = re.findall(r'<script\b[^>]*\bsrc="([^"]+)"', html)
        assets += re.findall(r'<link\b[^>]*\brel="stylesheet"[^>]*\bhref="([^"]+)"', html)
        for src in assets:
            assert "//" not in src, f"{page.relative_to(HTML)} loads {src} from the network"
            assert (page.parent / src.split("?")[0]).is_file(), f"{page.relative_to(HTML)}: {src} is missing"
    comparator = (HTML / "notebooks" / "nb04_comparator.html").read_text(encoding="utf-8")
    for asset in ("_static/mathjax/tex-mml-chtml.js", "_static/vega/vega-embed.min.js"):
        assert f'src="../{asset}' in comparator, f"the comparator page does not load {asset}"


@pytest.mark.parametrize("page", NOTEBOOK_PAGES)
def test_solution_cells_show_their_code_only_behind_a_toggle(page):
    """"Your turn" solutions (cells tagged `solution` and `hide-input`) are collapsed in the book."""
    html = (HTML / f"{page}.html").read_text(encoding="utf-8")
    for cell in re.split(r'(?=<div class="cell )', html)[1:]:
        if re.match(r'<div class="cell [^"]*\btag_solution\b', cell):
            assert re.search(r'<details class="[^"]*\bhide above-input\b', cell), f"{page}: a solution is shown"
