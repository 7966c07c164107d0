"""The book's renderer of Vega-Lite outputs (the explorer of notebook 4): a myst-nb MIME render plugin.

myst-nb, which builds the book's notebook pages, shows one MIME type of each output, by priority, and has no
renderer for Vega-Lite. This plugin, registered under myst-nb's entry point group ``myst_nb.mime_renderers`` in
``pyproject.toml``, puts :data:`VEGALITE_MIME` first for HTML builds and writes each such
output into the page as its specification, JSON in a ``<script type="application/json">`` inside a
``<div class="vega-lite-chart">``. To the pages that hold one it adds the scripts that draw it, from the book's own
``_static/``: Vega, Vega-Lite and vega-embed (``vega/``, fetched at pinned versions by ``scripts/fetch_assets.sh``),
then ``vega_charts.js`` (``book/_static/``), which hands each specification to vega-embed. Loaded before RequireJS
(the widgets' loader), they define their globals instead of registering as AMD modules. A page opened from disk
(``file://``) can load scripts but not fetch data files: the data travel inside the specification. The output that
keeps the menus' keys in JupyterLab (:data:`socm_lib.viz.keyboard.SCRIPT`) means nothing in the book: it is left out.

A cell that shows several images gives each its own alt text: its metadata's ``image_alts`` lists one per output, in
order (myst-nb's ``mystnb.image.alt`` gives every image of a cell the same one).
"""

from __future__ import annotations

import json

from . import keyboard

#: The MIME type of the Vega-Lite major that JupyterLab 4 draws natively (Altair 5 writes its specs).
VEGALITE_MIME = "application/vnd.vegalite.v5+json"
#: Scripts a page with a chart loads, relative to ``_static/``, in this order.
SCRIPTS = ("vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js", "vega_charts.js")
#: Sphinx's priority for them: below the default (500) of the widgets' RequireJS, so they load first.
PRIORITY = 400
#: The image outputs myst-nb writes as images (and so gives alt texts).
IMAGES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")
#: The cell metadata key of the alt text of each output, in order.
ALTS = "image_alts"


def chart_html(spec: dict) -> str:
    """The page's form of a Vega-Lite output: its specification as JSON, in a div that ``vega_charts.js`` fills."""
    text = json.dumps(spec, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return f'<div class="vega-lite-chart"><script type="application/json">{text}</script></div>'


class VegaLiteRenderer:
    """myst-nb's MIME render plugin protocol (``myst_nb.core.render.MimeRenderPlugin``) for Vega-Lite 5, which also
    leaves out the keyboard output and gives each image of a cell its alt text (see the module docstring)."""

    mime_priority_overrides = [("html", VEGALITE_MIME, 5), ("dirhtml", VEGALITE_MIME, 5),
                               ("singlehtml", VEGALITE_MIME, 5)]

    @staticmethod
    def handle_mime(renderer, data, inline: bool):
        if data.mime_type == keyboard.MIME:
            return [] if data.string == keyboard.SCRIPT else None
        alts = data.cell_metadata.get(ALTS) if data.mime_type in IMAGES and not inline else None
        if alts and data.output_index is not None:
            if data.output_index >= len(alts):
                raise ValueError(f"cell {data.cell_index}: {ALTS} has {len(alts)} alt texts, none for output "
                                 f"{data.output_index}")
            images = renderer.render_image(data)
            images[0]["alt"] = alts[data.output_index]
            return images
        if inline or data.mime_type != VEGALITE_MIME:
            return None
        from docutils import nodes

        spec = data.content if isinstance(data.content, dict) else json.loads(data.content)
        for k, script in enumerate(SCRIPTS):
            renderer.add_js_file(f"vega_lite_{k}", script, {"priority": PRIORITY})
        return [nodes.raw("", chart_html(spec), format="html", classes=["output", "vega-lite"])]
