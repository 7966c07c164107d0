"""The explorer of notebook 4: the per-pair results of every encoder the book ships, compared in the page.

:func:`explorer_chart` turns the results files of one folder (:func:`socm_lib.explorer.read_results`) into one
Vega-Lite chart (Vega-Altair) whose parameters are bound to four menus: encoder A, encoder B, the text set and the
pair kind. Choosing in a menu filters and recombines data the chart carries inline, so the averages, the pair
scatters and the distributions change with no kernel and no network, in a page opened from disk.

:class:`Explorer` shows the chart in each medium: JupyterLab (and the online book, through
:mod:`socm_lib.viz.mystnb`) receive the Vega-Lite MIME bundle and draw it with their own Vega; Colab, which draws no
Vega-Lite MIME bundle, receives Altair's HTML, which loads Vega from a CDN (Colab has a network). Where
vl-convert-python is installed (requirements.txt pins it), the bundle also holds a PNG of the chart as first drawn,
titled as a still image at the menus' default choices: viewers without Vega (GitHub, nbviewer) show it, and
JupyterLab, which adds such a PNG to a Vega-Lite output that has none, leaves a notebook it opens unmodified. In a
notebook the chart comes after the output that keeps its menus' keys in JupyterLab (:mod:`socm_lib.viz.keyboard`).
"""

from __future__ import annotations

import base64
import json
import math
import sys

import altair as alt
import numpy as np
import pandas as pd

from ..data import PAIR_KINDS
from ..explorer import MEASURES, Results, read_results
from .keyboard import display_with_keyboard
from .mystnb import VEGALITE_MIME

#: The Vega-Lite that JupyterLab 4.6 draws with (its @jupyterlab/vega5-extension), which the spec declares: vega-embed
#: warns about a spec that declares a later one, as Altair's own ``$schema`` (5.20) is. The book's vendored
#: Vega-Lite 5.23 (scripts/fetch_assets.sh) draws it too; the spec uses nothing newer.
VEGALITE_VERSION = "5.6.1"
SCHEMA = f"https://vega.github.io/schema/vega-lite/v{VEGALITE_VERSION}.json"
#: How vega-embed draws the chart everywhere: SVG (its text is in the page, for screen readers and tests) and no
#: actions menu (its "open in the editor" needs a network).
EMBED_OPTIONS = {"renderer": "svg", "actions": False}
#: The slots' colours (A, B), from Vega's default category scheme. Marks are translucent by their fill
#: (fillOpacity), not by opacity: printed to PDF, each mark with an opacity becomes a transparency group of its own
#: (a 13 MB page for this chart, against 0.5 MB).
COLOURS = ("#4c78a8", "#f58518")
ALL_KINDS = "all"
#: Sizes in pixels: the side of each scatter plot and the width of the rows below them, so that the chart fits
#: the text column of the book's pages (about 650 pixels) with its axes.
SIDE, WIDTH = 230, 520


def _select(name: str, label: str, options: list[str], labels: list[str], value: str):
    """A parameter bound to a labelled menu (a ``<select>`` inside its ``<label>``)."""
    return alt.param(name=name, value=value, bind=alt.binding_select(options=options, labels=labels, name=label))


def _slot_colour():
    """Colour by slot ("A", "B"), one scale and one legend for the whole chart, naming the encoder each slot holds."""
    return alt.Color("slot:N", scale=alt.Scale(domain=["A", "B"], range=list(COLOURS)),
                     legend=alt.Legend(title=None, orient="top", symbolOpacity=1,
                                       labelExpr="datum.label == 'A' ? 'A: ' + encoder_a : 'B: ' + encoder_b"))


def axis_top(values) -> float:
    """The top of an axis that holds every value: 1, or the largest value rounded up to a tenth where one exceeds
    1 (SOCM and d_Sigma can: chapter 4)."""
    return max(1.0, math.ceil(float(np.max(values)) * 10) / 10) if len(values) else 1.0


def _text_block(data, lines: list[tuple[str, str]], width: int):
    """Lines of text, one text mark each: (Vega expression of the line, font weight), 18 pixels apart."""
    return alt.layer(*(
        data.mark_text(align="left", baseline="middle", fontSize=12, fontWeight=weight, color="#1a1a1a")
        .encode(text=alt.Text("line:N"), x=alt.value(0), y=alt.value(9 + 18 * k))
        .transform_calculate(line=expression)
        for k, (expression, weight) in enumerate(lines)
    )).properties(width=width, height=18 * len(lines), view=alt.ViewBackground(stroke=None))


#: How to read the chart, under its averages: lines short enough for a phone's width.
READING = ["How to read it: SOCM = (1 \u2212 dμ)·dΣ is high when",
           "mean pooling puts a pair's means close (low dμ)",
           "although its token clouds differ (high dΣ): the",
           "pooled embeddings hide that difference.",
           "SOCM of each pair, A against B: above the dashed",
           "diagonal, B collapses the pair more than A;",
           "below it, A does."]


def explorer_chart(results: Results, *, encoder_a: str | None = None, encoder_b: str | None = None,
                   text_set: str | None = None) -> alt.VConcatChart:
    """Averages, SOCM of A against B per pair, :math:`d_\\mu` against :math:`d_\\Sigma` per pair and the distribution
    of SOCM, for the encoders, text set and pair kind chosen in the chart's menus, with a key saying how to read it.

    ``results`` comes from :func:`socm_lib.explorer.read_results`; the menus start at ``encoder_a``, ``encoder_b``
    (default: the first two encoders) and ``text_set`` (default: the first set). Pairs of a set without kinds (a
    sample's pairs) are all shown whatever the pair-kind menu says. Every axis holds every value of the results,
    whatever the menus choose (:func:`axis_top`), and both SOCM axes share one scale, so that the diagonal is
    where A and B agree.
    """
    if not isinstance(results, Results):
        raise TypeError(f"results must come from socm_lib.explorer.read_results, got {type(results).__name__}.")
    names = list(results.encoders)
    encoder_a = names[0] if encoder_a is None else encoder_a
    encoder_b = names[min(1, len(names) - 1)] if encoder_b is None else encoder_b
    text_set = next(iter(results.sets)) if text_set is None else text_set
    for what, value, choices in (("encoder_a", encoder_a, names), ("encoder_b", encoder_b, names),
                                 ("text_set", text_set, list(results.sets))):
        if value not in choices:
            raise ValueError(f"{what}={value!r} is not in the results of {results.folder}; choose from {choices}.")
    present = {k for s in results.sets.values() for k in s.kinds if k}
    kinds = [k for k in PAIR_KINDS if k in present] + sorted(present - set(PAIR_KINDS))
    labels = [f"{n} ({results.encoders[n]['kind']})" for n in names]
    params = [
        _select("encoder_a", "encoder A ", names, labels, encoder_a),
        _select("encoder_b", "encoder B ", names, labels, encoder_b),
        _select("texts", "texts ", list(results.sets), [s.label for s in results.sets.values()], text_set),
        _select("kind", "pair kind (labelled pairs) ", [ALL_KINDS, *kinds],
                ["all kinds", *(k.replace("_", " ") for k in kinds)], ALL_KINDS),
    ]
    table = results.pair_table()
    numeric = [c for c in table.columns if "@" in c]
    top = {m: axis_top(table[[c for c in numeric if c.startswith(f"{m}@")]].to_numpy().ravel()) for m in MEASURES}
    pairs = alt.InlineData(values=table.to_csv(index=False),
                           format=alt.CsvDataFormat(type="csv", parse={c: "number" for c in numeric}))
    texts = results.text_table().assign(key=lambda t: t["set"] + "/" + t["index"].astype(str))[["key", "text"]]
    chosen = (alt.Chart(pairs)
              .transform_filter(f"datum.set == texts && (kind == '{ALL_KINDS}' || datum.kind == '' "
                                "|| datum.kind == kind)")
              .transform_calculate(**{f"{slot}_{m}": f"datum['{m}@' + encoder_{slot}]"
                                      for slot in "ab" for m in MEASURES}))

    means = {f"mean_{slot}_{m}": f"mean({slot}_{m})" for slot in "ab" for m in MEASURES}
    summary = chosen.transform_aggregate(pairs="count()", **means)
    lines = [("'Averages over ' + format(datum.pairs, ',') + ' pairs:'", "bold")]
    for slot in "ab":
        lines += [(f"'{slot.upper()} ' + encoder_{slot}", "bold"),
                  (f"'    SOCM ' + format(datum.mean_{slot}_socm, '.4f') + ',  dμ ' + format(datum.mean_{slot}_d_mu, "
                   f"'.4f') + ',  dΣ ' + format(datum.mean_{slot}_d_sigma, '.4f')", "normal")]
    averages = _text_block(summary, lines, WIDTH)
    reading = _text_block(alt.Chart(pd.DataFrame({"k": [0]})),
                          [(json.dumps(line, ensure_ascii=False), "normal") for line in READING], WIDTH)

    looked_up = (chosen
                 .transform_calculate(key_i="datum.set + '/' + datum.i", key_j="datum.set + '/' + datum.j")
                 .transform_lookup(lookup="key_i", from_=alt.LookupData(texts, "key", ["text"]), as_=["text i"])
                 .transform_lookup(lookup="key_j", from_=alt.LookupData(texts, "key", ["text"]), as_=["text j"]))
    tooltip = [alt.Tooltip("kind:N"), alt.Tooltip("text i:N"), alt.Tooltip("text j:N"),
               alt.Tooltip("a_socm:Q", title="SOCM, A", format=".4f"),
               alt.Tooltip("b_socm:Q", title="SOCM, B", format=".4f")]
    socm_scale = alt.Scale(domain=[0, top["socm"]], nice=False)
    diagonal = alt.Chart(pd.DataFrame({"v": [0.0, top["socm"]]})).mark_line(strokeDash=[4, 4], color="#767676").encode(
        x=alt.X("v:Q", scale=socm_scale), y=alt.Y("v:Q", scale=socm_scale))
    # each side of the diagonal named inside it: top left (B above A), and right, low enough that the whole label
    # stays below the diagonal (A above B)
    sides = alt.Chart(pd.DataFrame({"x": [0.03 * top["socm"], 0.97 * top["socm"]],
                                    "y": [0.97 * top["socm"], 0.3 * top["socm"]],
                                    "align": ["left", "right"], "label": ["B collapses more", "A collapses more"]}))
    side_labels = alt.layer(*(
        sides.transform_filter(f"datum.align == '{align}'").mark_text(align=align, baseline=baseline, fontSize=11,
                                                                      color="#4d4d4d")
        .encode(x=alt.X("x:Q", scale=socm_scale), y=alt.Y("y:Q", scale=socm_scale), text="label:N")
        for align, baseline in (("left", "top"), ("right", "middle"))))
    socm_ab = alt.layer(
        diagonal,
        looked_up.mark_circle(size=14, fillOpacity=0.4, color="#54a24b", aria=False).encode(
            x=alt.X("a_socm:Q", title="SOCM under A", scale=socm_scale),
            y=alt.Y("b_socm:Q", title="SOCM under B", scale=socm_scale), tooltip=tooltip),
        side_labels,
    ).properties(width=SIDE, height=SIDE, title=alt.Title("SOCM of each pair, A against B", fontSize=12))

    factors = alt.layer(*(
        chosen.transform_calculate(slot=f"'{slot.upper()}'")
        .mark_circle(size=10, fillOpacity=0.35, aria=False).encode(
            x=alt.X(f"{slot}_d_mu:Q", title="dμ (means apart)", scale=alt.Scale(domain=[0, top["d_mu"]])),
            y=alt.Y(f"{slot}_d_sigma:Q", title="dΣ (shapes apart)", scale=alt.Scale(domain=[0, top["d_sigma"]])),
            color=_slot_colour())
        for slot in "ab"
    )).properties(width=SIDE, height=SIDE, title=alt.Title("dμ and dΣ of each pair", fontSize=12))

    spread = (chosen.transform_fold(["a_socm", "b_socm"], as_=["slot", "value"])
              .transform_calculate(slot="datum.slot == 'a_socm' ? 'A' : 'B'")
              .mark_bar(fillOpacity=0.55, aria=False)
              .encode(x=alt.X("value:Q", bin=alt.Bin(maxbins=50, extent=[0, top["socm"]]), title="SOCM",
                              scale=alt.Scale(domain=[0, top["socm"]])),
                      y=alt.Y("count():Q", stack=None, title="pairs"), color=_slot_colour())
              .properties(width=WIDTH, height=150, title=alt.Title("Distribution of SOCM over the chosen pairs",
                                                                   fontSize=12)))

    described = (f"Explorer of per-pair results of {len(names)} encoders ({', '.join(names)}) on "
                 f"{len(results.sets)} text sets: the averages of SOCM, dμ and dΣ for encoders A and B, how to read "
                 "SOCM, a scatter of each pair's SOCM under A against B (above the diagonal B collapses the pair "
                 "more), a scatter of dμ against dΣ, and histograms of SOCM. Change the menus below the chart to "
                 "choose the encoders, the texts and the pair kind.")
    return (alt.vconcat(averages, reading, alt.hconcat(socm_ab, factors), spread)
            .add_params(*params)
            .properties(description=described, usermeta={"embedOptions": EMBED_OPTIONS}))


class Explorer:
    """The explorer chart, displayed by whatever front end shows it (see the module docstring).

    ``chart`` is the Altair chart; ``spec()`` its Vega-Lite specification. The plain-text form names the encoders
    and text sets, for places that draw no chart.
    """

    def __init__(self, results: Results, **choices):
        self.results = results
        self.chart = explorer_chart(results, **choices)

    def spec(self) -> dict:
        """The Vega-Lite specification (a dict), data inline, declaring the Vega-Lite JupyterLab draws with
        (:data:`VEGALITE_VERSION`)."""
        return {**self.chart.to_dict(), "$schema": SCHEMA}

    def __repr__(self) -> str:
        return (f"Explorer of {len(self.results.encoders)} encoders ({', '.join(self.results.encoders)}) on the text "
                f"sets {', '.join(self.results.sets)}: a Vega-Lite chart, drawn by JupyterLab, Colab and the online "
                "book.")

    def default_choices(self) -> list[str]:
        """The menus' default choices, one line each: "encoder A: all-minilm-l6 (contrastive)", ..."""
        return [f"{p['bind']['name'].strip()}: {p['bind']['labels'][p['bind']['options'].index(p['value'])]}"
                for p in self.spec()["params"]]

    def still_chart(self) -> alt.VConcatChart:
        """The chart titled as what a still image of it is: the explorer at its menus' default choices."""
        return self.chart.properties(title=alt.Title(
            "A still image of the explorer at its default choices (its menus work in JupyterLab and the online book):",
            subtitle=self.default_choices(), anchor="start", fontSize=12, subtitleFontSize=11))

    def png(self) -> bytes | None:
        """:meth:`still_chart` as PNG bytes (by vl-convert-python), or ``None`` where that is not installed."""
        try:
            import vl_convert
        except ImportError:
            return None
        version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])  # the Vega-Lite of Altair's specs
        return vl_convert.vegalite_to_png(self.still_chart().to_dict(), vl_version=version)

    def _repr_mimebundle_(self, include=None, exclude=None):
        if "google.colab" in sys.modules:  # Altair's HTML renderer
            return self.chart._repr_mimebundle_(include, exclude)
        png = self.png()
        still = {"image/png": base64.b64encode(png).decode("ascii")} if png is not None else {}
        return {VEGALITE_MIME: self.spec(), **still, "text/plain": repr(self)}

    def _ipython_display_(self):
        """Shown in a notebook: the chart, after the output that keeps its menus' keys in JupyterLab."""
        bundle = self._repr_mimebundle_()
        display_with_keyboard(bundle[0] if isinstance(bundle, tuple) else bundle)


def show_explorer(folder, **choices) -> Explorer:
    """:class:`Explorer` of the results files in ``folder`` (:func:`socm_lib.explorer.read_results`)."""
    return Explorer(read_results(folder), **choices)
