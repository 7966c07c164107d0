"""Interactive comparison of two encoders (notebook 4): a thin ipywidgets 8 UI over :func:`compare`.

All computing happens in :func:`compare`, which a notebook's static twin calls directly with the
widget's default settings; the :class:`Comparator` widget only reads its controls, calls
:func:`compare`, and displays the result. Encoders are cached here by name and token embeddings by the library
(:func:`socm_lib.token_embeddings`), so moving the pair picker or switching back to an encoder already used costs
no new forward pass.

An encoder that cannot be loaded here (no network, or code from its model repository that must be
trusted explicitly) does not break the widget: its Output shows which model failed, why, and how to
run it (Colab), and every control keeps working. In JupyterLab the arrow keys change a focused menu, not the
notebook's cell (:mod:`socm_lib.viz.keyboard`). Where the Hugging Face Hub cannot be reached, the encoders that
would need it are marked so in the menus. Every control is a labelled form field (menus and number boxes; a
slider's handle has no accessible name).
"""

from __future__ import annotations

import base64
import functools
import html
import io
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..checks import as_device, as_texts, distinct_texts
from ..data import corpus, labelled_pairs, read_stsb, sample_texts, shared_data_dir
from ..encoders import (OFFLINE_ENCODERS, REGISTRY, Encoder, ModelUnavailableError, hub_reachable, load_encoder,
                        needs_network)
from ..extract import token_embeddings
from ..pairs import socm_pairs
from ..results import PairResult
from .display import fixed, fmt
from .keyboard import display_with_keyboard

#: The default pair: two offline contrastive encoders that collapse very differently. The menus offer the
#: offline encoders (socm_lib.encoders.OFFLINE_ENCODERS) first.
DEFAULT_A, DEFAULT_B = "all-minilm-l6", "multilingual-e5-small-4bit"
#: How an encoder that needs the Hub is marked in the menus when the Hub cannot be reached.
NEEDS_NETWORK = " (needs a network)"
DEFAULT_N_TEXTS = 120
MAX_N_TEXTS = 500

#: Text sources offered by the widget: key -> label shown in the dropdown.
SOURCES = {
    "corpus": "embedded corpus (random sample)",
    "labelled": "labelled pairs (their texts)",
    "stsb-dev": "STS-B dev sentences (shared data)",
}


# ---------------------------------------------------------------------------------------------------------------
# Texts
# ---------------------------------------------------------------------------------------------------------------


def _stsb_dev_path():
    root = shared_data_dir()
    if root is None:
        return None
    path = root / "stsb" / "sts-dev.csv"
    return path if path.is_file() else None


def available_sources() -> dict[str, str]:
    """The entries of :data:`SOURCES` that exist here (STS-B only when :func:`shared_data_dir` holds it)."""
    return {k: v for k, v in SOURCES.items() if k != "stsb-dev" or _stsb_dev_path() is not None}


@functools.cache
def _source_pool(source: str) -> tuple[str, ...]:
    if source == "corpus":
        return tuple(corpus()["text"])
    if source == "labelled":
        df = labelled_pairs()
        return tuple(distinct_texts(list(df["text_a"]) + list(df["text_b"])))  # distinct texts, first-seen order
    if source == "stsb-dev":
        path = _stsb_dev_path()
        if path is None:
            raise FileNotFoundError("STS-B is not present: socm_lib.shared_data_dir() has no stsb/sts-dev.csv.")
        df = read_stsb(path)
        return tuple(t for t in distinct_texts(list(df["sentence1"]) + list(df["sentence2"])) if t.strip())
    raise ValueError(f"Unknown text source {source!r}; choose from {list(SOURCES)}.")


def source_size(source: str) -> int:
    """Number of distinct texts a source offers."""
    return len(_source_pool(source))


def source_texts(source: str = "corpus", n_texts: int = DEFAULT_N_TEXTS, seed: int = 0) -> list[str]:
    """``n_texts`` texts of a source (see :data:`SOURCES`), sampled with :func:`socm_lib.sample_texts` and ``seed``."""
    pool = _source_pool(source)
    return sample_texts(pool, min(int(n_texts), len(pool)), seed)


# ---------------------------------------------------------------------------------------------------------------
# Computing
# ---------------------------------------------------------------------------------------------------------------


@functools.cache
def cached_encoder(name: str) -> Encoder:
    """:func:`socm_lib.load_encoder` with a cache keyed by name (a failed load is not cached, so it can be retried)."""
    return load_encoder(name)


def _clouds(encoder, texts: list[str]) -> list[np.ndarray]:
    """The clouds of ``texts``; token_embeddings keeps them, so going back to a pair or an encoder is free."""
    if isinstance(encoder, Encoder):
        return token_embeddings(encoder, texts)
    try:
        loaded = cached_encoder(encoder)
    except (ModelUnavailableError, ValueError) as exc:
        exc.encoder_name = encoder  # lets the widget say which of the two encoders failed
        raise
    return token_embeddings(loaded, texts)


def unavailable_message(name: str, exc: BaseException) -> str:
    """A message saying which encoder could not be loaded, why, and how to run it (the library's error names the
    offline encoders; the advice fits where the comparator runs: Colab, or JupyterLab and other local kernels)."""
    spec = REGISTRY.get(name)
    what = f"{name!r} ({spec.hf_id})" if spec is not None and spec.hf_id else repr(name)
    if "google.colab" in sys.modules:
        how = ("This Colab session could not reach the Hugging Face Hub: check its connection and pick the encoder "
               "again.")
    else:
        how = ("To compare it, run this notebook where the Hugging Face Hub can be reached, for example in Google "
               "Colab: the page of this notebook in the online book has a launch button that opens it there.")
    if spec is not None and spec.needs_remote_code:
        how = (
            "This widget does not run code from model repositories. If you trust that repository, load it yourself "
            f"with socm_lib.load_encoder({name!r}, trust_remote_code=True) where a network exists (e.g. Colab) and "
            "pass the encoder to socm_lib.viz.widgets.compare()."
        )
    return f"Encoder {what} could not be loaded: {exc}\n{how}"


@dataclass
class Comparison:
    """What :func:`compare` measured: the texts, each encoder's token clouds and SOCM over all pairs."""

    names: tuple[str, str]
    texts: list[str]
    clouds: tuple[list, list]
    results: tuple[PairResult, PairResult]
    order: np.ndarray = field(repr=False)  # pair indices sorted by encoder A's SOCM, highest first (stable)

    def mean_socm(self) -> dict[str, float]:
        """Average SOCM over all pairs, per encoder name."""
        return {n: float(np.mean(r.socm)) for n, r in zip(self.names, self.results)}

    def summary_table(self):
        """One row per encoder: kind, pairs, mean and median SOCM, mean d_mu and d_sigma, share d_sigma > 1.

        The last column quotes the average SOCM that Hara et al. (2026) report on Wikipedia pairs (other texts,
        so only a rough point of reference), or "-" where the paper has none.
        """
        import pandas as pd

        rows = []
        for name, r in zip(self.names, self.results):
            s = r.summary()
            spec = REGISTRY.get(name)
            paper = spec.paper_socm if spec is not None else None
            rows.append({
                "encoder": name,
                "kind": spec.kind if spec is not None else "unregistered",
                "pairs": int(s["pairs"]),
                "mean SOCM": s["mean_socm"],
                "median SOCM": s["median_socm"],
                "mean d_mu": s["mean_d_mu"],
                "mean d_sigma": s["mean_d_sigma"],
                "share d_sigma > 1": s["share_d_sigma_above_1"],
                "paper SOCM (Wikipedia)": fmt(paper, 3) if paper is not None else "-",
            })
        df = pd.DataFrame(rows)
        for col in ("encoder", "kind", "paper SOCM (Wikipedia)"):  # object dtype: socm_lib.fixed checks with numpy
            df[col] = df[col].astype(object)
        return fixed(df)

    def summary_text(self) -> str:
        """One line per encoder ("A name: ...", "B name: ..."): its average SOCM over the pairs, at 4 decimals."""
        n = len(self.results[0])
        return "\n".join(
            f"{slot} {name}: average SOCM {fmt(np.mean(r.socm))} over {n} pairs of {len(self.texts)} texts"
            for slot, name, r in zip("AB", self.names, self.results)
        )

    def pair_at(self, rank: int) -> int:
        """Index (into the results) of the pair ranked ``rank`` by encoder A's SOCM (0 = highest)."""
        if not 0 <= rank < len(self.order):
            raise IndexError(f"rank must be in [0, {len(self.order) - 1}], got {rank}.")
        return int(self.order[rank])


def compare(encoder_a, encoder_b, texts, *, device=None) -> Comparison:
    """Token embeddings of ``texts`` from two encoders and SOCM over all their pairs, for each encoder.

    ``encoder_a`` / ``encoder_b`` are registry names (loaded once and cached) or loaded
    :class:`~socm_lib.encoders.Encoder` objects. Raises :class:`~socm_lib.encoders.ModelUnavailableError`
    (or ``ValueError``) when an encoder cannot be loaded; the exception's ``encoder_name`` attribute names it
    (see :func:`unavailable_message`).
    """
    texts, device = as_texts(texts), as_device(device)
    if len(texts) < 2:
        raise ValueError(f"compare needs at least two texts to form a pair, got {len(texts)}.")
    names, clouds, results = [], [], []
    for enc in (encoder_a, encoder_b):
        c = _clouds(enc, texts)
        names.append(enc.name if isinstance(enc, Encoder) else str(enc))
        clouds.append(c)
        results.append(socm_pairs(c, device=device, progress=False))
    order = np.argsort(-results[0].socm, kind="stable")
    return Comparison(tuple(names), texts, tuple(clouds), tuple(results), order)


# ---------------------------------------------------------------------------------------------------------------
# The widget
# ---------------------------------------------------------------------------------------------------------------


def encoder_options() -> list[tuple[str, str]]:
    """The comparator's menu of encoders, ``(label, name)``: the offline ones first, then the registry's others,
    each marked :data:`NEEDS_NETWORK` when the Hub cannot be reached from here and its files are not cached."""
    names = list(OFFLINE_ENCODERS) + [n for n in REGISTRY if n not in OFFLINE_ENCODERS]
    offline = not hub_reachable()
    return [(n + NEEDS_NETWORK if offline and needs_network(n) else n, n) for n in names]


def enable_colab_widgets() -> bool:
    """In Google Colab, switch on its custom widget manager (needed for ipywidgets 8); elsewhere do nothing.

    Returns whether it was switched on. Called by :class:`Comparator` before it builds its controls.
    """
    if "google.colab" not in sys.modules:
        return False
    from google.colab import output

    output.enable_custom_widget_manager()
    return True


class Comparator:
    """Two encoders side by side on the same texts: average SOCM, scatter plots, one pair, extreme pairs.

    Controls: ``encoder_a``, ``encoder_b`` (menus of registry names, :func:`encoder_options`), ``source`` (menu of
    text sources), ``n_texts`` (number box: sample size), ``pair`` (number box: rank of a pair by encoder A's SOCM,
    0 = highest). Every change re-renders ``out``. For headless use and tests, each render records
    ``last_summary`` (text of the averages, or ``None`` after an error), ``last_error`` (the message shown, or
    ``None``), ``last_pair`` (the texts' indices ``(i, j)``), ``last_table`` (the extreme-pairs DataFrame) and
    ``last_html`` (the HTML shown); ``out.outputs`` holds exactly one output after each render.
    ``show_figures=False`` skips the figures.
    """

    def __init__(self, encoder_a: str = DEFAULT_A, encoder_b: str = DEFAULT_B, *, source: str = "corpus",
                 n_texts: int = DEFAULT_N_TEXTS, seed: int = 0, device=None, show_figures: bool = True):
        import ipywidgets as w

        enable_colab_widgets()  # before any widget exists, so Colab renders them with its ipywidgets 8 manager
        sources = available_sources()
        if source not in sources:
            raise ValueError(f"Text source {source!r} is not available here; choose from {list(sources)}.")
        self.seed, self.device, self.show_figures = seed, device, show_figures
        # labels never cut: each control as wide as its label and value, the rows wrapping where space runs out
        style, fit = {"description_width": "initial"}, {"width": "auto"}
        names = encoder_options()
        self.encoder_a = w.Dropdown(options=names, value=encoder_a, description="encoder A", style=style, layout=fit)
        self.encoder_b = w.Dropdown(options=names, value=encoder_b, description="encoder B", style=style, layout=fit)
        self.source = w.Dropdown(options=[(label, key) for key, label in sources.items()], value=source,
                                 description="texts", style=style, layout=fit)
        top = min(MAX_N_TEXTS, source_size(source))
        self.n_texts = w.BoundedIntText(value=min(int(n_texts), top), min=10, max=top, step=10,
                                        description="sample size", style=style, layout={"width": "12em"})
        self.pair = w.BoundedIntText(value=0, min=0, max=1, description="pair (rank by A's SOCM)", style=style,
                                     layout={"width": "16em"})
        self.out = w.Output()
        wrap = {"flex_flow": "row wrap"}
        self.widget = w.VBox([
            w.HBox([self.encoder_a, self.encoder_b], layout=wrap),
            w.HBox([self.source, self.n_texts], layout=wrap),
            self.pair,
            self.out,
        ])
        self.comparison: Comparison | None = None
        self.last_summary: str | None = None
        self.last_error: str | None = None
        self.last_pair: tuple[int, int] | None = None
        self.last_table = None
        self.last_html: str | None = None
        self.renders = 0
        self._key = None
        self._quiet = False
        for control in (self.encoder_a, self.encoder_b, self.n_texts):
            control.observe(self._on_inputs, names="value")
        self.source.observe(self._on_source, names="value")
        self.pair.observe(self._on_pair, names="value")
        self.update()

    # display the container when the object itself is shown in a notebook; where no widget can be drawn (a saved
    # notebook opened without its kernel, nbconvert, a terminal) the plain-text form says what to do
    PLAIN_TEXT = "Encoder comparator: run this cell to use the comparator (its controls need a running kernel)."

    def _repr_mimebundle_(self, **kwargs):
        return {**self.widget._repr_mimebundle_(**kwargs), "text/plain": self.PLAIN_TEXT}

    def _ipython_display_(self):
        """Shown in a notebook: the widget, after the output that keeps its menus' keys in JupyterLab
        (:mod:`socm_lib.viz.keyboard`)."""
        display_with_keyboard(self._repr_mimebundle_())

    def __repr__(self) -> str:
        return self.PLAIN_TEXT

    @contextmanager
    def _hold(self):
        """Change controls programmatically without triggering their handlers."""
        old, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = old

    # -- handlers ---------------------------------------------------------------------------------------------
    def _on_inputs(self, change=None):
        if not self._quiet:
            self.update()

    def _on_source(self, change=None):
        if self._quiet:
            return
        with self._hold():
            top = min(MAX_N_TEXTS, source_size(self.source.value))
            self.n_texts.max = top
            self.n_texts.value = min(self.n_texts.value, top)
        self.update()

    def _on_pair(self, change=None):
        if not self._quiet:
            self.render()

    # -- computing and rendering --------------------------------------------------------------------------------
    def texts(self) -> list[str]:
        """The texts selected by the source and sample-size controls."""
        return source_texts(self.source.value, self.n_texts.value, self.seed)

    def update(self) -> None:
        """Recompute if encoders, source or sample size changed since the last computation, then render."""
        key = (self.encoder_a.value, self.encoder_b.value, self.source.value, self.n_texts.value)
        if key != self._key or self.comparison is None:
            self.comparison, self._key, self.last_error = None, None, None
            self._show({"output_type": "stream", "name": "stdout",
                        "text": f"Computing: {key[0]} and {key[1]} on {key[3]} texts ({key[2]}) ...\n"})
            try:
                self.comparison = compare(key[0], key[1], self.texts(), device=self.device)
                self._key = key
            except (ModelUnavailableError, ValueError, OSError) as exc:
                failed = getattr(exc, "encoder_name", None)
                self.last_error = unavailable_message(failed, exc) if failed else f"Could not compare: {exc}"
            if self.comparison is not None:
                with self._hold():
                    self.pair.max = max(0, len(self.comparison.order) - 1)
                    self.pair.value = min(self.pair.value, self.pair.max)
        self.render()

    def render(self) -> None:
        """Show the current comparison (or the error) in ``out``, and record what was shown.

        Everything goes into ``out`` as *one* output (an HTML block with the figures inlined as PNG, or the
        error message as text), so each render is a single update of the widget's state.
        """
        self.renders += 1
        self.pair.disabled = self.comparison is None
        if self.comparison is None:  # HTML paragraphs: a text output would break its lines inside words
            self.last_summary, self.last_pair, self.last_table, self.last_html = None, None, None, None
            paragraphs = "".join(f"<p>{html.escape(line)}</p>" for line in self.last_error.splitlines())
            self._show({"output_type": "display_data", "metadata": {},
                        "data": {"text/html": paragraphs, "text/plain": self.last_error}})
            return
        from .plots import extreme_pairs_table

        c = self.comparison
        k = c.pair_at(self.pair.value)
        i, j = int(c.results[0].i[k]), int(c.results[0].j[k])
        self.last_summary = c.summary_text()
        self.last_pair = (i, j)
        self.last_table = extreme_pairs_table(c.results[0], c.texts, k=5)
        parts = [f"<pre>{html.escape(self.last_summary)}</pre>", c.summary_table().to_html(index=False)]
        if self.show_figures:
            parts += [_png_html(fig) for fig in comparison_figures(c, k)]
        parts += [f"<p>Most and least collapsed pairs for {html.escape(c.names[0])}:</p>",
                  self.last_table.to_html(index=False)]
        self.last_html = "\n".join(parts)
        self._show({"output_type": "display_data", "metadata": {},
                    "data": {"text/html": self.last_html, "text/plain": self.last_summary}})

    def _show(self, output: dict) -> None:
        """Replace what ``out`` shows by one output (an nbformat output dict), in a single state update.

        Outside Colab the Output widget's ``outputs`` are set directly from the kernel. Capturing with
        ``with out:`` would make a notebook runner such as nbclient mirror every captured output back to the
        kernel on the shell channel, which can stall execution. Colab's widget manager is given the classic
        ``with out: clear_output(wait=True)`` form, which it renders reliably.
        """
        if "google.colab" in sys.modules:
            from IPython.display import clear_output, display

            with self.out:
                clear_output(wait=True)
                if output["output_type"] == "stream":
                    print(output["text"], end="")
                else:
                    display(output["data"], raw=True)
        else:
            self.out.outputs = (output,)


def _png_html(fig, dpi: int = 80) -> str:
    """A matplotlib figure as an inline ``<img>`` (base64 PNG); the figure is closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" style="max-width: 100%;"/>'


def comparison_figures(c: Comparison, pair_index: int) -> list:
    """The widget's figures: one d_mu/d_sigma scatter per encoder, and the chosen pair projected for both."""
    import matplotlib.pyplot as plt

    from .plots import pair_projection, scatter_dmu_dsigma

    figs = [scatter_dmu_dsigma(r, title=name) for name, r in zip(c.names, c.results)]
    i, j = int(c.results[0].i[pair_index]), int(c.results[0].j[pair_index])
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, name, clouds in zip(axes, c.names, c.clouds):
        pair_projection(clouds[i], clouds[j], ax=ax, labels=(c.texts[i], c.texts[j]), title=name)
    fig.tight_layout()
    figs.append(fig)
    return figs
