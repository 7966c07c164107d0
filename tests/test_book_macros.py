"""One list of macros serves MathJax (HTML) and LaTeX (PDF via --builder latex): `scripts/book_macros.py`
generates the LaTeX preamble from `_config.yml`'s mathjax3_config macros. Checked on a real Sphinx LaTeX build
of a one-page project configured like the book, and on every macro the chapters use."""

import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from book_macros import latex_preamble  # noqa: E402

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
MACROS = CONFIG["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]


def test_single_source():
    sphinx = CONFIG["sphinx"]
    assert "latex_elements" not in sphinx["config"], "a typed preamble would be a second list of macros"
    assert sphinx["local_extensions"]["book_macros"] == "scripts/"  # the one extension that writes the preamble


def test_preamble_lines():
    preamble = latex_preamble(MACROS)
    assert r"\newcommand{\tr}{\operatorname{tr}}" in preamble.splitlines()
    assert r"\newcommand{\nuc}[1]{\lVert #1 \rVert_{*}}" in preamble.splitlines()
    assert len(preamble.splitlines()) == len(MACROS)
    with pytest.raises(ValueError, match="number of arguments"):
        latex_preamble({"bad": ["x", "one"]})


def test_every_macro_the_book_uses_is_defined():
    """Each backslash command in the chapters that neither LaTeX nor amsmath knows is one of the macros."""
    used = set()
    for page in sorted((ROOT / "book").glob("*.md")):
        used |= set(re.findall(r"\\([A-Za-z]+)", page.read_text(encoding="utf-8")))
    ours = {"R", "tr", "BW", "SOCM", "dmu", "dSigma", "Wtwo", "Normal", "nuc", "fro", "norm"}
    assert used & ours <= set(MACROS), f"used but not defined: {sorted((used & ours) - set(MACROS))}"
    assert set(MACROS) == ours, "a macro was added or removed: update this test's list"


def test_latex_build_has_preamble(tmp_path):
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'scripts')!r})\nextensions = ['book_macros']\n"
        f"mathjax3_config = {CONFIG['sphinx']['config']['mathjax3_config']!r}\n"
        "latex_documents = [('index', 'book.tex', 'T', 'A', 'manual')]\n", encoding="utf-8")
    (src / "index.rst").write_text("T\n=\n\n:math:`\\tr \\Sigma`\n", encoding="utf-8")
    app = Sphinx(str(src), str(src), str(tmp_path / "out"), str(tmp_path / "doctrees"), "latex",
                 status=None, warning=None, freshenv=True)
    app.build()
    tex = (tmp_path / "out" / "book.tex").read_text(encoding="utf-8")
    for line in latex_preamble(MACROS).splitlines():
        assert line in tex, f"{line} missing from the LaTeX preamble"
