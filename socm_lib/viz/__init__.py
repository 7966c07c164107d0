"""Presentation: figures, widgets, fixed-precision display and the benchmark viewer (the book's notebooks).

Nothing below :mod:`socm_lib.viz` imports from here. Import the submodule you need:

* :mod:`socm_lib.viz.display` -- :func:`~socm_lib.viz.display.fmt`, :func:`~socm_lib.viz.display.fixed`
  (numbers at fixed precision, so notebook outputs compare as text), the device report, and the p-values,
  direction words and estimates with intervals the downstream notebooks print (:func:`~socm_lib.viz.display.fmt_p`,
  :func:`~socm_lib.viz.display.direction`, :func:`~socm_lib.viz.display.format_ci`);
* :mod:`socm_lib.viz.plots` -- the SOCM surface, clouds in the plane, the paper's Figure 1 for real clouds,
  :math:`d_\\mu`--:math:`d_\\Sigma` scatter plots, extreme pairs;
* :mod:`socm_lib.viz.theory` -- the figures of the theory chapters (a token cloud and its mean, a pair on the SOCM
  surface, the 2-Wasserstein decomposition);
* :mod:`socm_lib.viz.layers` -- layer profiles and pair distributions;
* :mod:`socm_lib.viz.downstream` -- SOCM by pair kind and by length;
* :mod:`socm_lib.viz.control` -- the untrained control: measured against its initialisation's prediction;
* :mod:`socm_lib.viz.widgets` -- the encoder comparator (ipywidgets);
* :mod:`socm_lib.viz.benchmarking` -- tables and figures of ``benchmarks/results``;
* :mod:`socm_lib.viz.paper_route` -- the per-pair shift of the paper's regularised route;
* :mod:`socm_lib.viz.glued` -- glue a statistic with its sample and a time with its spread (the book's prose rules).

The display helpers are re-exported here because every notebook uses them; they import neither
matplotlib nor ipywidgets.
"""
from .display import device_report, fixed, fmt, summary_lines

__all__ = ["device_report", "fixed", "fmt", "summary_lines"]
