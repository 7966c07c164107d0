"""The explorer explains itself and its outputs work in each place that shows them (socm_lib.viz.explorer,
socm_lib.viz.keyboard, socm_lib.viz.mystnb), read from the committed results of notebook 4 (notebooks/explorer/):

- the chart says how to read it (what high SOCM means, which side of the diagonal is which encoder), names its axes
  dμ and dΣ, and every axis holds every value of the results (SOCM and dΣ above 1 included);
- its spec declares the Vega-Lite that JupyterLab 4.6 draws with; its still image says it shows the default choices;
- in a notebook the chart and the comparator come after the output that keeps their menus' keys in JupyterLab, which
  the book leaves out, and a cell's images each get their own alt text in the book.

The chart drawn in a page is tested in tests/test_explorer_page.py, the keys in JupyterLab in tests/test_jupyterlab.py.
"""

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from docutils import nodes

from socm_lib import explorer
from socm_lib.viz import keyboard, mystnb
from socm_lib.viz.explorer import READING, SCHEMA, Explorer, axis_top

ROOT = Path(__file__).resolve().parent.parent
RESULTS = explorer.read_results(ROOT / "notebooks" / "explorer")
SHOWN = Explorer(RESULTS, encoder_a="all-minilm-l6", encoder_b="multilingual-e5-small-4bit")
SPEC = SHOWN.spec()


def _walk(node):
    """Every dict of a spec, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def test_an_axis_holds_every_value():
    assert axis_top(np.array([0.2, 0.81])) == 1.0  # SOCM's usual range
    assert axis_top(np.array([0.3, 1.42])) == 1.5 and axis_top(np.array([1.2])) == 1.2
    assert axis_top(np.array([])) == 1.0


def test_the_axes_hold_every_value_of_the_results_and_say_dmu_and_dsigma():
    spec = SPEC
    table = RESULTS.pair_table()
    encodings = [d for d in _walk(spec) if isinstance(d.get("field"), str) and "scale" in d]
    tops = {}
    for enc in encodings:
        measure = enc["field"].split("_", 1)[1] if enc["field"][:2] in ("a_", "b_") else enc["field"]
        tops.setdefault(measure, set()).add(enc["scale"]["domain"][1])
    for measure in explorer.MEASURES:
        largest = table.filter(like=f"{measure}@").to_numpy().max()
        assert tops[measure] and min(tops[measure]) >= largest, (measure, tops[measure], largest)
    titles = {d["title"] for d in _walk(spec) if isinstance(d.get("title"), str)}
    assert {"dμ (means apart)", "dΣ (shapes apart)"} <= titles and not [t for t in titles if "d_mu" in t or "d_sigma" in t]


def test_the_chart_says_how_to_read_it():
    text = json.dumps(SPEC, ensure_ascii=False)
    for line in READING:
        assert line in text
    reading = " ".join(READING)
    assert "high when" in reading and "above the dashed diagonal, B collapses the pair more than A" in reading
    assert '"B collapses more"' in text and '"A collapses more"' in text  # the two sides, in the scatter
    assert max(len(line) for line in READING) <= 50  # a phone's width at the chart's font


def test_the_spec_declares_the_vega_lite_jupyterlab_draws_with():
    """vega-embed warns when a spec declares a later Vega-Lite than it has (JupyterLab 4.6: 5.6.1)."""
    assert SPEC["$schema"] == SCHEMA == "https://vega.github.io/schema/vega-lite/v5.6.1.json"


def test_the_still_image_says_it_shows_the_default_choices():
    title = SHOWN.still_chart().to_dict()["title"]
    assert "default choices" in title["text"]
    assert title["subtitle"] == ["encoder A: all-minilm-l6 (contrastive)",
                                 "encoder B: multilingual-e5-small-4bit (contrastive)",
                                 f"texts: {RESULTS.sets['corpus'].label}", "pair kind (labelled pairs): all kinds"]


def _displayed(monkeypatch, shown):
    calls = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: calls.append(obj))
    shown._ipython_display_()
    return calls


def test_in_a_notebook_the_chart_comes_after_the_keyboard_output_but_not_in_colab(monkeypatch):
    monkeypatch.setattr(Explorer, "png", lambda self: None)
    calls = _displayed(monkeypatch, SHOWN)
    assert calls == [{keyboard.MIME: keyboard.SCRIPT}, SHOWN._repr_mimebundle_()]
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    calls = _displayed(monkeypatch, SHOWN)
    assert len(calls) == 1 and "text/html" in calls[0]


def test_the_keyboard_script_marks_menus_of_widget_and_chart_outputs_only():
    assert "data-lm-suppress-shortcuts" in keyboard.SCRIPT and '"keydown"' in keyboard.SCRIPT
    assert ".jp-OutputArea-output .jupyter-widgets" in keyboard.SCRIPT
    assert ".jp-OutputArea-output .vega-bindings" in keyboard.SCRIPT


class _Renderer:
    """What the plugin asks of myst-nb's renderer: an image node per image output."""

    @staticmethod
    def render_image(data):
        return [nodes.image(uri="x.png", alt="the cell's alt")]


def test_the_book_leaves_the_keyboard_output_out_and_gives_each_image_its_alt():
    handle = mystnb.VegaLiteRenderer.handle_mime
    script = types.SimpleNamespace(mime_type=keyboard.MIME, string=keyboard.SCRIPT, cell_metadata={})
    assert handle(_Renderer, script, False) == []
    other_js = types.SimpleNamespace(mime_type=keyboard.MIME, string="alert(1)", cell_metadata={})
    assert handle(_Renderer, other_js, False) is None  # any other script renders as myst-nb renders it
    alts = {mystnb.ALTS: ["first plot", "second plot"]}
    for k, alt in enumerate(alts[mystnb.ALTS]):
        image = types.SimpleNamespace(mime_type="image/png", string="", cell_metadata=alts, output_index=k,
                                      cell_index=16)
        assert handle(_Renderer, image, False)[0]["alt"] == alt
    plain = types.SimpleNamespace(mime_type="image/png", string="", cell_metadata={}, output_index=0, cell_index=3)
    assert handle(_Renderer, plain, False) is None  # no per-image alts: myst-nb's own (mystnb.image.alt)
    beyond = types.SimpleNamespace(mime_type="image/png", string="", cell_metadata=alts, output_index=2, cell_index=16)
    with pytest.raises(ValueError, match="none for output 2"):
        handle(_Renderer, beyond, False)
