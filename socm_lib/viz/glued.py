r"""Glue a number together with what it is a number of: the sample behind a statistic, the runs behind a timing.

The book's prose quotes measured numbers through myst-nb's glue roles. A mean, median or share describes one
sample, and a timing describes some runs; a number glued without them lets the prose set two figures side by side
that measure different things (an encoder's mean SOCM on 1,000 texts in one chapter and on 200 in another, or one
run's seconds next to the median of three). The two helpers here glue the value under its name, as
:func:`myst_nb.glue` does, and next to it what it describes, as plain glued values that the book's tests read from
the committed notebooks:

* :func:`glue_stat` adds ``<name>__sample``, a dict ``{"n", "unit", "of", "quantity"}`` (and ``"within"`` for the
  pairs of a set of texts): the sample size and what it counts (``"texts"``, ``"pairs"``), a description of the
  sample precise enough that two notebooks giving the same description measured the same texts, and the quantity
  (``"mean SOCM, all-minilm-l6, final layer"``). The book's
  rules: every place in the prose that quotes the value names ``n`` with its unit in the same paragraph, and two
  values of one quantity on one sample agree to their printed digits.
* :func:`glue_timing` glues the median of the runs under the name and adds ``<name>_min``, ``<name>_max`` and
  ``<name>_runs``. The rule: the prose quotes the median with its minimum and maximum, or says it was a single run.
  It serves every figure measured once per run, not only seconds: a speed ratio of two routes timed in turn is
  glued from its per-run (or per-round) ratios, so that it too comes with its fastest and slowest run.

The values are glued with ``display=False``, as every notebook of the book glues its numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Suffix of the record that :func:`glue_stat` glues next to a statistic.
SAMPLE_SUFFIX = "__sample"
#: Suffixes of the values that :func:`glue_timing` glues next to a median time.
TIMING_SUFFIXES = ("_min", "_max", "_runs")


@dataclass(frozen=True)
class Sample:
    """A sample a statistic was computed on: ``n`` items of kind ``unit``, described by ``of``.

    ``of`` must identify the sample: the same words in two notebooks mean the same texts or pairs (say the source,
    the seed and the size, e.g. ``"all pairs of 200 corpus texts (seed 0)"``). ``within``, for the pairs of a set of
    texts, is that set's size and unit: naming "all pairs of 200 texts" names the sample too.
    """

    n: int
    unit: str
    of: str
    within: tuple[int, str] | None = None

    def __post_init__(self):
        if int(self.n) != self.n or self.n < 1:
            raise ValueError(f"Sample.n must be a whole number >= 1, got {self.n!r}.")
        if not self.unit or not self.of:
            raise ValueError("Sample needs a unit (e.g. 'texts', 'pairs') and a description 'of'.")

    def record(self, quantity: str) -> dict:
        """What :func:`glue_stat` glues next to a value: plain numbers and strings."""
        out = {"n": int(self.n), "unit": self.unit, "of": self.of, "quantity": quantity}
        if self.within is not None:
            out["within"] = [int(self.within[0]), self.within[1]]
        return out


def corpus_texts(n_texts: int, seed: int, source: str = "corpus") -> Sample:
    """``n_texts`` texts of the book's corpus (or of ``source``) sampled with ``seed``."""
    return Sample(int(n_texts), "texts", f"{int(n_texts)} {source} texts (seed {seed})")


def all_pairs(texts: Sample) -> Sample:
    """Every pair ``i < j`` of the texts of ``texts``."""
    return Sample(int(texts.n) * (int(texts.n) - 1) // 2, "pairs", f"all pairs of {texts.of}",
                  within=(int(texts.n), texts.unit))


def _glue(name: str, value) -> None:
    from myst_nb import glue

    glue(name, value, display=False)


def glue_stat(name: str, value, sample: Sample, quantity: str) -> None:
    """Glue ``value`` (a mean, median or share of ``sample``) under ``name``, and its sample under ``name__sample``."""
    if not isinstance(sample, Sample):
        raise TypeError(f"sample must be a socm_lib.viz.glued.Sample, got {type(sample).__name__}.")
    if not quantity:
        raise ValueError("quantity must say what the value is, e.g. 'mean SOCM, all-minilm-l6, final layer'.")
    _glue(name, value)
    _glue(name + SAMPLE_SUFFIX, sample.record(quantity))


def glue_timing(name: str, runs_s, scale: float = 1.0, digits: int = 4) -> None:
    """Glue the median of ``runs_s`` (seconds of repeated runs) times ``scale`` under ``name``, with its spread.

    ``name_min`` and ``name_max`` are the smallest and the largest of the runs' figures (for seconds, the fastest
    and the slowest run), ``name_runs`` their number; all values are rounded to ``digits`` decimals after scaling
    (``scale=1e6 / pairs`` gives microseconds per pair). ``runs_s`` may hold any figure measured once per run,
    such as the speed ratio of two routes in each round that timed both.
    """
    runs = np.asarray(runs_s, dtype=np.float64).ravel()
    if runs.size == 0 or not np.all(np.isfinite(runs)) or np.any(runs < 0):
        raise ValueError(f"runs_s must hold one or more finite, non-negative times; got {list(runs)}.")
    values = runs * float(scale)
    _glue(name, round(float(np.median(values)), digits))
    _glue(name + "_min", round(float(values.min()), digits))
    _glue(name + "_max", round(float(values.max()), digits))
    _glue(name + "_runs", int(runs.size))
