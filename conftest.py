"""pytest configuration shared by the test suite and nbval: what nbval compares, and how.

Every notebook cell's outputs are compared with the committed ones (``--nbval``), with three exceptions:

- stderr is left out for every notebook: progress bars (tqdm) and library warnings go there and carry timings.
- Image bytes are never compared, glued ones included (``image/png``, ``image/jpeg``, ``image/svg+xml`` and
  their ``application/papermill.record/...`` forms): pixels vary with the CPU, the fonts and matplotlib. Where a
  figure carries a result, the cell also prints or glues the numbers behind it, and those are compared.
- Cells tagged ``nbval-approx`` (cell metadata ``"tags": ["nbval-approx"]``) print numbers computed in float32
  (torch's kernels: extraction, the paper route), whose last digits vary with the CPU's kernel family and BLAS.
  In their stdout, ``text/plain``, ``text/html`` and glued ``application/papermill.record/text/plain`` outputs,
  the text is split into numbers and the text around them. The text around them must match exactly (runs of
  spaces may differ in length, since a table's columns are padded to its widest number); the numbers must be
  as many, printed with the same number of decimals (unless both have 8 or more: a float's repr, as glued
  floats are, varies in length), and each within

      |x_new - x_ref| <= RTOL * |x_ref| (+ ATOL) + one unit in the last printed digit,

  the unit allowing for a value next to a rounding boundary. Numbers printed without a decimal point or an
  exponent (counts, indices, layer numbers) must match exactly. RTOL is 1e-3. A cell printing differences of
  float32 results (cancellation) states a larger rtol in its metadata (``"nbval_approx_rtol": 0.05``), and a
  cell printing rounding noise itself (float32 minus float64, a residual near zero, a singular value at
  1e-17) states an absolute slack ATOL added to the bound (``"nbval_approx_atol": 1e-3``), the noise's size. Untagged cells are compared strictly, so
  float64 results stay exact. ``make test-kernels`` re-executes the float32 notebooks with torch on another
  kernel family and checks them with this same rule; tests/test_nbval_approx.py shows the rule can fail.
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
RTOL = 1e-3
FULL_PRECISION = 8  # decimals from which a number is a float's repr, whose length varies (glued floats)
RTOL_KEY = "nbval_approx_rtol"  # cell metadata: a larger rtol, for a cell printing differences of float32 results
ATOL_KEY = "nbval_approx_atol"  # cell metadata: an absolute slack, for a cell printing rounding noise itself
APPROX_KEYS = ("text/plain", "text/html", "application/papermill.record/text/plain")
IMAGE_KEYS = ("image/png", "image/jpeg", "image/svg+xml", "application/papermill.record/image/png",
              "application/papermill.record/image/jpeg", "application/papermill.record/image/svg+xml")
_NUMBER = re.compile(r"([-+\u2212]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")
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


def numbers_close(ref: str, new: str, rtol: float = RTOL, atol: float = 0.0) -> bool:
    """Whether ``new`` reads as ``ref`` up to float32 noise in its numbers (the rule in this module's docstring)."""
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
            decimal, _, exponent = _shape(a)
            if not (decimal or exponent):
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
        for key in APPROX_KEYS:
            if key in out.get("data", {}):
                yield out, key, key


def _get(out, field):
    return _text(out["text"] if field is None else out["data"][field])


def reconcile(new_outputs: list, ref_outputs: list, rtol: float = RTOL, atol: float = 0.0) -> list:
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


def _approx_compare_outputs(item, test, ref, skip_compare=None):
    """nbval's IPyNbCell.compare_outputs, run on the new outputs reconciled with the committed ones."""
    rtol = float(item.cell.metadata.get(RTOL_KEY, RTOL))
    atol = float(item.cell.metadata.get(ATOL_KEY, 0.0))
    return type(item).compare_outputs(item, reconcile(test, ref, rtol, atol), ref, skip_compare)


def pytest_collectstart(collector):
    if getattr(collector, "fspath", None) is not None and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",) + IMAGE_KEYS


def pytest_collection_modifyitems(items):
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and APPROX_TAG in cell.get("metadata", {}).get("tags", []):
            item.compare_outputs = functools.partial(_approx_compare_outputs, item)
