"""pytest configuration shared by the test suite and nbval: what nbval compares, and how.

Every notebook cell's outputs are re-executed (``--nbval``) and compared with the committed ones by one rule,
the one below, whichever kernels (BLAS, torch) the machine picks. Left out of the comparison:

- stderr, for every notebook: progress bars (tqdm) and library warnings go there and carry timings.
- Image bytes, glued ones included (``image/png``, ``image/jpeg``, ``image/svg+xml`` and their
  ``application/papermill.record/...`` forms): pixels vary with the CPU, the fonts and matplotlib. Where a
  figure carries a result, the cell also prints or glues the numbers behind it, and those are compared. The same
  holds for a Vega-Lite chart's specification (``application/vnd.vegalite.v5+json``: the explorer of notebook 4),
  whose inline data are float32 results; its plain-text form is compared.

The rule for numbers. Each text a cell shows (stdout, and every ``text/...`` output, glued
``application/papermill.record/text/...`` ones included) is split into numbers and the text around them (after
notebooks/sanitize.cfg). The text around them must match exactly (runs of spaces may differ in length, since a
table's columns are padded to its widest number); the numbers must be as many, printed with the same number of
decimals (unless both have 8 or more: a float's repr, as glued floats are, varies in length), and each within

    |x_new - x_ref| <= RTOL * |x_ref| + ATOL + one unit in the last printed digit,

the unit allowing for a value next to a rounding boundary, which any change in the last bits can flip. Numbers
printed without a decimal point or an exponent (counts, indices, seeds, layer numbers) and dotted numbers
(versions such as 0.11.0) are text: they match exactly, as do strings.

RTOL is what the arithmetic behind the number supports:

- ``RTOL_FLOAT64`` = 1e-12 in every cell by default (float64 results: numpy, scipy, the library's exact engine).
  Float64 carries 2.2e-16 relative; another BLAS kernel family (SkylakeX, Haswell, Prescott: other blocking,
  FMA or not) sums a dot product of n terms in another order, which moves a sum by up to about n ulps, more
  where terms cancel. The book's sums run over hundreds to thousands of terms (tokens, dimensions, texts), so
  1e-12, some 4,500 ulps, holds them, while any real change of a result (a formula, a seed, the data) moves it
  far more. (Compared exactly, a float64 result was one kernel away from failing on a reader's machine.)
- ``RTOL_FLOAT32`` = 1e-3 in cells tagged ``nbval-approx`` (cell metadata ``"tags": ["nbval-approx"]``): they
  print numbers computed in float32 by torch's kernels (extraction, the paper route), whose last digits vary
  with the CPU's kernel family and BLAS.

A cell whose numbers the arithmetic holds less tightly states its own tolerance in its metadata, with the
reason in the notebook: a larger ``"nbval_approx_rtol"`` for numbers that are differences of nearly equal
results (cancellation), an absolute slack ``"nbval_approx_atol"`` (the noise's size) for numbers that are
rounding noise themselves (float32 minus float64, a residual near zero, a singular value at 1e-17).

nbval waits 5 s for a cell's last messages after the kernel says the cell is done; a loaded machine can delay them
longer, so that wait is OUTPUT_WAIT here: a guard against a dead kernel, not a limit on speed.

``make test`` runs every notebook once, in ``make test-kernels``: on the kernel family every x86-64 CPU runs (OpenBLAS
``Prescott``) with torch on its baseline kernels on one thread, while the committed outputs come from another family
(AVX2 or AVX-512), so one run checks both that the outputs are reproduced and that they hold across kernels.
tests/test_nbval_approx.py shows the rule can fail.
"""

import copy
import functools
import math
import os
import re

# Notebook kernels inherit this process's environment. A non-interactive MPLBACKEND (e.g. Agg) would make
# plt.show() display nothing, so figure outputs would go missing; kernels must use their inline backend.
os.environ.pop("MPLBACKEND", None)

pytest_plugins = ["pytester"]  # tests/test_nbval_approx.py runs nbval on a small notebook

APPROX_TAG = "nbval-approx"
RTOL_FLOAT64 = 1e-12  # every cell, unless tagged or stating its own (the module's docstring says why)
RTOL_FLOAT32 = 1e-3  # cells tagged APPROX_TAG
OUTPUT_WAIT = 120  # seconds nbval waits for a finished cell's outputs (its own default, 5 s, fails on busy machines)
FULL_PRECISION = 8  # decimals from which a number is a float's repr, whose length varies (glued floats)
RTOL_KEY = "nbval_approx_rtol"  # cell metadata: a larger rtol, for a cell printing differences of near results
ATOL_KEY = "nbval_approx_atol"  # cell metadata: an absolute slack, for a cell printing rounding noise itself
TEXT_PREFIXES = ("text/", "application/papermill.record/text/")  # MIME types compared by the rule
FIGURE_KEYS = ("image/png", "image/jpeg", "image/svg+xml", "application/papermill.record/image/png",
               "application/papermill.record/image/jpeg", "application/papermill.record/image/svg+xml",
               "application/vnd.vegalite.v5+json")
# A number: sign, digits, decimals, exponent; not a piece of a dotted run such as a version (0.11.0), which is text.
_NUMBER = re.compile(r"(?<!\d)(?<!\d\.)([-+\u2212]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?)(?!\.?\d)")
_SPACES = re.compile(r"[ \t\u00a0]+")


def _value(text: str) -> float:
    return float(text.replace("\u2212", "-"))


def _last_digit_unit(text: str) -> float:
    """One unit in the last printed digit of a decimal number: 0.01 for "0.64", 1e-6 for "1.23e-4"."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _shape(text: str) -> tuple[bool, int, bool]:
    """What the format of a printed number fixes: decimal point or not, decimals, exponent or not."""
    mantissa, e, _ = text.lower().partition("e")
    return "." in mantissa, len(mantissa.partition(".")[2]), bool(e)


def numbers_close(ref: str, new: str, rtol: float = RTOL_FLOAT64, atol: float = 0.0) -> bool:
    """Whether ``new`` reads as ``ref`` up to ``rtol``, ``atol`` and rounding in its numbers (the module's rule)."""
    ref_parts, new_parts = _NUMBER.split(ref), _NUMBER.split(new)
    if len(ref_parts) != len(new_parts):
        return False
    for i, (a, b) in enumerate(zip(ref_parts, new_parts)):
        if i % 2 == 0:  # the text between numbers
            if _SPACES.sub(" ", a) != _SPACES.sub(" ", b):
                return False
        elif a != b:
            (da, na, ea), (db, nb, eb) = _shape(a), _shape(b)
            if (da, ea) != (db, eb) or (na != nb and min(na, nb) < FULL_PRECISION):
                return False
            if not (da or ea):
                return False  # integers are exact
            x, y = _value(a), _value(b)
            if not (math.isfinite(x) and math.isfinite(y)):
                return False
            if abs(y - x) > rtol * abs(x) + atol + max(_last_digit_unit(a), _last_digit_unit(b)) * (1 + 1e-9):
                return False
    return True


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def _texts(outputs: list):
    """(output, field, key) for each comparable text, key naming it as nbval does ('stdout', a MIME type)."""
    for out in outputs:
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            yield out, None, "stdout"
        for key in out.get("data", {}):
            if key.startswith(TEXT_PREFIXES):
                yield out, key, key


def _get(out, field):
    return _text(out["text"] if field is None else out["data"][field])


def reconcile(new_outputs: list, ref_outputs: list, rtol: float = RTOL_FLOAT64, atol: float = 0.0) -> list:
    """A copy of ``new_outputs`` with each comparable text replaced by its reference where numbers_close.

    Texts are paired as nbval pairs them: the k-th new text of a kind (stdout, a MIME type) with the k-th
    committed one, whatever other outputs (stderr, images) lie between. A text that is not close, or has no
    partner, is left as it is, so that nbval's strict comparison that follows reports it with its usual diff.
    """
    new_outputs = copy.deepcopy(new_outputs)
    refs = {}
    for out, field, key in _texts(ref_outputs):
        refs.setdefault(key, []).append(_get(out, field))
    seen = {}
    for out, field, key in _texts(new_outputs):
        k = seen[key] = seen.get(key, -1) + 1
        if k < len(refs.get(key, [])) and numbers_close(refs[key][k], _get(out, field), rtol, atol):
            if field is None:
                out["text"] = refs[key][k]
            else:
                out["data"][field] = refs[key][k]
    return new_outputs


def cell_tolerance(metadata: dict) -> tuple[float, float]:
    """(rtol, atol) for a cell's numbers: its own, stated in ``metadata``, or the default of its kind."""
    rtol = RTOL_FLOAT32 if APPROX_TAG in metadata.get("tags", []) else RTOL_FLOAT64
    return float(metadata.get(RTOL_KEY, rtol)), float(metadata.get(ATOL_KEY, 0.0))


def _compare_outputs(item, test, ref, skip_compare=None):
    """nbval's IPyNbCell.compare_outputs, run on the new outputs reconciled with the committed ones."""
    rtol, atol = cell_tolerance(item.cell.metadata)
    test, ref = item.sanitize_outputs(test), item.sanitize_outputs(ref)  # sanitize.cfg first, as nbval does
    return type(item).compare_outputs(item, reconcile(test, ref, rtol, atol), ref, skip_compare)


def pytest_collectstart(collector):
    if getattr(collector, "fspath", None) is not None and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",) + FIGURE_KEYS


def pytest_collection_modifyitems(items):
    for item in items:
        if getattr(item, "cell", None) is not None and hasattr(item, "compare_outputs"):  # an nbval cell
            item.compare_outputs = functools.partial(_compare_outputs, item)
            item.output_timeout = OUTPUT_WAIT
