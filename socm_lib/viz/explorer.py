"""The explorer of notebook 4: the per-pair results of every encoder the book ships, compared in the page.

:func:`explorer_chart` turns the results files of one folder (:func:`socm_lib.explorer.read_results`) into one
Vega-Lite chart (Vega-Altair) whose parameters are bound to four menus: encoder A, encoder B, the text set and the
pair kind. Choosing in a menu filters and recombines data the chart carries inline, so the averages, the pair
scatters and the distributions change with no kernel and no network, in a page opened from disk.

:class:`Explorer` shows the chart in each medium: JupyterLab (and the online book, through
:mod:`socm_lib.viz.mystnb`) receive the Vega-Lite MIME bundle and draw it with their own Vega; Colab, which draws no
Vega-Lite MIME bundle, receives Altair's HTML, which loads Vega from a CDN (Colab has a network). Where
vl-convert-python is installed (requirements.txt pins it), the bundle also holds a PNG of the chart as first drawn:
viewers without Vega (GitHub, nbviewer) show it, and JupyterLab, which adds such a PNG to a Vega-Lite output that
has none, leaves a notebook it opens unmodified.
"""

from __future__ import annotations

import base64
import sys

import altair as alt
import pandas as pd

from ..data import PAIR_KINDS
from ..explorer import MEASURES, Results, read_results
from .mystnb import VEGALITE_MIME
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


def explorer_chart(results: Results, *, encoder_a: str | None = None, encoder_b: str | None = None,
                   text_set: str | None = None) -> alt.VConcatChart:
    """Averages, SOCM of A against B per pair, :math:`d_\\mu` against :math:`d_\\Sigma` per pair and the distribution
    of SOCM, for the encoders, text set and pair kind chosen in the chart's menus.

    ``results`` comes from :func:`socm_lib.explorer.read_results`; the menus start at ``encoder_a``, ``encoder_b``
    (default: the first two encoders) and ``text_set`` (default: the first set). Pairs of a set without kinds (a
    sample's pairs) are all shown whatever the pair-kind menu says.
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
    pairs = alt.InlineData(values=table.to_csv(index=False),
                           format=alt.CsvDataFormat(type="csv", parse={c: "number" for c in numeric}))
    texts = results.text_table().assign(key=lambda t: t["set"] + "/" + t["index"].astype(str))[["key", "text"]]
    chosen = (alt.Chart(pairs)
              .transform_filter(f"datum.set == texts && (kind == '{ALL_KINDS}' || datum.kind == '' "
                                "|| datum.kind == kind)")
              .transform_calculate(**{f"{slot}_{m}": f"datum['{m}@' + encoder_{slot}]"
                                      for slot in "ab" for m in MEASURES}))

    means = {f"mean_{slot}_{m}": f"mean({slot}_{m})" for slot in "ab" for m in MEASURES}
    lines = {"line_n": "'Averages over ' + format(datum.pairs, ',') + ' pairs:'"} | {
        f"line_{slot}": (f"'{slot.upper()} ' + encoder_{slot} + ': average SOCM '"
                         f" + format(datum.mean_{slot}_socm, '.4f') + ', d_mu ' + format(datum.mean_{slot}_d_mu, '.4f')"
                         f" + ', d_sigma ' + format(datum.mean_{slot}_d_sigma, '.4f')")
        for slot in "ab"
    }
    summary = chosen.transform_aggregate(pairs="count()", **means).transform_calculate(**lines)
    averages = alt.layer(*(
        summary.mark_text(align="left", baseline="middle", fontSize=13, fontWeight=weight, color="#1a1a1a")
        .encode(text=f"line_{key}:N", x=alt.value(0), y=alt.value(y))
        for key, y, weight in (("n", 8, "bold"), ("a", 28, "normal"), ("b", 48, "normal"))
    )).properties(width=WIDTH, height=56, view=alt.ViewBackground(stroke=None))

    looked_up = (chosen
                 .transform_calculate(key_i="datum.set + '/' + datum.i", key_j="datum.set + '/' + datum.j")
                 .transform_lookup(lookup="key_i", from_=alt.LookupData(texts, "key", ["text"]), as_=["text i"])
                 .transform_lookup(lookup="key_j", from_=alt.LookupData(texts, "key", ["text"]), as_=["text j"]))
    tooltip = [alt.Tooltip("kind:N"), alt.Tooltip("text i:N"), alt.Tooltip("text j:N"),
               alt.Tooltip("a_socm:Q", title="SOCM, A", format=".4f"),
               alt.Tooltip("b_socm:Q", title="SOCM, B", format=".4f")]
    diagonal = alt.Chart(pd.DataFrame({"v": [0.0, 1.0]})).mark_line(strokeDash=[4, 4], color="#767676").encode(
        x="v:Q", y="v:Q")
    socm_ab = alt.layer(
        diagonal,
        looked_up.mark_circle(size=14, fillOpacity=0.4, color="#54a24b", aria=False).encode(
            x=alt.X("a_socm:Q", title="SOCM under A"), y=alt.Y("b_socm:Q", title="SOCM under B"),
            tooltip=tooltip),
    ).properties(width=SIDE, height=SIDE, title=alt.Title("SOCM of each pair, A against B", fontSize=12))

    factors = alt.layer(*(
        chosen.transform_calculate(slot=f"'{slot.upper()}'")
        .mark_circle(size=10, fillOpacity=0.35, aria=False).encode(
            x=alt.X(f"{slot}_d_mu:Q", title="d_mu (means apart)"),
            y=alt.Y(f"{slot}_d_sigma:Q", title="d_sigma (shapes apart)"), color=_slot_colour())
        for slot in "ab"
    )).properties(width=SIDE, height=SIDE, title=alt.Title("d_mu and d_sigma of each pair", fontSize=12))

    spread = (chosen.transform_fold(["a_socm", "b_socm"], as_=["slot", "value"])
              .transform_calculate(slot="datum.slot == 'a_socm' ? 'A' : 'B'")
              .mark_bar(fillOpacity=0.55, aria=False)
              .encode(x=alt.X("value:Q", bin=alt.Bin(maxbins=50), title="SOCM"),
                      y=alt.Y("count():Q", stack=None, title="pairs"), color=_slot_colour())
              .properties(width=WIDTH, height=150, title=alt.Title("Distribution of SOCM over the chosen pairs",
                                                                   fontSize=12)))

    described = (f"Explorer of per-pair results of {len(names)} encoders ({', '.join(names)}) on "
                 f"{len(results.sets)} text sets: the averages of SOCM, d_mu and d_sigma for encoders A and B, a "
                 "scatter of each pair's SOCM under A against B, a scatter of d_mu against d_sigma, and histograms "
                 "of SOCM. Change the menus below the chart to choose the encoders, the texts and the pair kind.")
    return (alt.vconcat(averages, alt.hconcat(socm_ab, factors), spread)
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
        """The Vega-Lite specification (a dict), data inline."""
        return self.chart.to_dict()

    def __repr__(self) -> str:
        return (f"Explorer of {len(self.results.encoders)} encoders ({', '.join(self.results.encoders)}) on the text "
                f"sets {', '.join(self.results.sets)}: a Vega-Lite chart, drawn by JupyterLab, Colab and the online "
                "book.")

    def png(self) -> bytes | None:
        """The chart as first drawn, as PNG bytes (by vl-convert-python), or ``None`` where that is not installed."""
        try:
            import vl_convert
        except ImportError:
            return None
        version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])  # the Vega-Lite of Altair's specs
        return vl_convert.vegalite_to_png(self.spec(), vl_version=version)

    def _repr_mimebundle_(self, include=None, exclude=None):
        if "google.colab" in sys.modules:  # Altair's HTML renderer
            return self.chart._repr_mimebundle_(include, exclude)
        png = self.png()
        still = {"image/png": base64.b64encode(png).decode("ascii")} if png is not None else {}
        return {VEGALITE_MIME: self.spec(), **still, "text/plain": repr(self)}


def show_explorer(folder, **choices) -> Explorer:
    """:class:`Explorer` of the results files in ``folder`` (:func:`socm_lib.explorer.read_results`)."""
    return Explorer(read_results(folder), **choices)
