"""Sphinx extension: three repairs of the HTML that docutils, myst-nb and the theme write, so that every page of the
book passes axe-core's WCAG 2 A and AA rules and loads without a console error (tests/test_accessibility.py).

- **Bibliography.** docutils gives each citation the DPUB-ARIA role ``doc-biblioentry`` inside a ``role="list"``
  wrapper; that role is deprecated (DPUB-ARIA 1.1), so a screen reader may not announce the entries as items of
  the list. `CitationListTranslator` writes ``role="listitem"`` instead (the HTML translator of the ``html``
  builder, which the theme then extends with its own mixin as it extends any registered translator).
- **Alt text of figures.** myst-nb gives an image output the ``alt`` of its cell's metadata
  (``"mystnb": {"image": {"alt": ...}}``) on the notebook's page, but a figure glued into a chapter from another
  page (``{glue}`` with ``:doc:``) arrives with none, and the HTML writer then puts the file name there. Every image
  file of a notebook output is named by the SHA-256 of its bytes (myst-nb's ``render_image`` and its glue
  cross-reference both do so), so `_figure_alts` maps each such digest to the alt text of the cell that made
  the image, and `GluedFigureAlt` gives that text to every image of the page that has none.
- **Duplicate inline script.** sphinx-thebe registers its settings (``const THEBE_JS_URL = …``) after the builder
  was set up; Sphinx 7.4 then adds the same inline script to every page twice (once as filename ``None``, once as
  ``''``), and the second ``const`` is a SyntaxError in the console of every page. `_drop_duplicate_scripts`
  removes the repeat from each page's script list.
"""

import base64
import functools
import hashlib
import posixpath
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.writers.html5 import HTML5Translator

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")


class CitationListTranslator(HTML5Translator):
    """The HTML5 translator with each citation an item (``role="listitem"``) of the list docutils wraps them in."""

    def visit_citation(self, node):
        super().visit_citation(node)
        self.body[-1] = self.body[-1].replace('role="doc-biblioentry"', 'role="listitem"')


@functools.lru_cache(maxsize=4)
def _figure_alts(notebooks: tuple[tuple[str, int], ...]) -> dict[str, str]:
    """SHA-256 hex digest of each image output's bytes (shown or glued) -> the alt text of its cell's metadata,
    over the notebooks given as (path, modification time) pairs (the time makes an edited notebook read again)."""
    alts = {}
    for path, _ in notebooks:
        for cell in nbformat.read(path, as_version=4).cells:
            alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
            if cell.cell_type != "code" or not alt:
                continue
            for output in cell.get("outputs", []):
                for mime, content in output.get("data", {}).items():
                    if mime.rpartition("papermill.record/")[2] in IMAGE_TYPES:
                        alts[hashlib.sha256(base64.b64decode(content)).hexdigest()] = alt
    return alts


class GluedFigureAlt(SphinxPostTransform):
    """An image without alt text whose file is a notebook output gets the alt text of that output's cell."""

    default_priority = 6  # after myst-nb's ReplacePendingGlueReferences (5) has put the glued images in place

    def run(self, **kwargs):
        images = [n for n in self.document.findall(nodes.image) if not n.get("alt")]
        if not images:
            return
        paths = [Path(self.env.doc2path(d)) for d in sorted(self.env.found_docs)]
        alts = _figure_alts(tuple((str(p), p.stat().st_mtime_ns) for p in paths if p.suffix == ".ipynb"))
        for image in images:
            digest = posixpath.splitext(posixpath.basename(image["uri"]))[0]
            if digest in alts:
                image["alt"] = alts[digest]


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    """The page's scripts with each inline script or file once, in order (see the module docstring)."""
    seen, kept = set(), []
    for script in context.get("script_files", []):
        key = (getattr(script, "filename", script) or "", tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app):
    app.set_translator("html", CitationListTranslator)
    app.add_post_transform(GluedFigureAlt)
    app.connect("html-page-context", _drop_duplicate_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
