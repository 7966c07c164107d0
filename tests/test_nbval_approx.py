"""The nbval-approx rule of the root conftest.py: float32 noise passes, anything else fails."""

import importlib.util
from pathlib import Path

import nbformat
import pytest

_spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).resolve().parent.parent / "conftest.py")
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)

TABLE = "layer    w2_sq     socm\n    6   0.6445   1.2031e-04\n"


@pytest.mark.parametrize("new", [
    TABLE,
    "layer    w2_sq     socm\n    6   0.6444   1.2031e-04\n",      # one unit in the last digit (rounding)
    "layer    w2_sq     socm\n    6   0.6449   1.2032e-04\n",      # within rtol 1e-3 + one unit
    "layer    w2_sq     socm\n    6  0.6445   1.2031e-04\n",       # column padding
])
def test_within_tolerance_passes(new):
    assert rc.numbers_close(TABLE, new)


@pytest.mark.parametrize("new", [
    "layer    w2_sq     socm\n    6   0.6460   1.2031e-04\n",      # beyond the tolerance
    "layer    w2_sq     socm\n    6   0.6445   1.2100e-04\n",      # beyond it, in the exponent form
    "layer    w2_sq     SOCM\n    6   0.6445   1.2031e-04\n",      # a changed word
    "layer    w2_sq     socm\n    7   0.6445   1.2031e-04\n",      # a changed integer (exact)
    "layer    w2_sq     socm\n    6   0.6445\n",                   # a missing number
    "layer    w2_sq     socm\n    6   0.64450   1.2031e-04\n",     # another format
    "layer    w2_sq     socm\n    6   -0.6445   1.2031e-04\n",     # a changed sign
    "layer    w2_sq     socm\n    6   nan   1.2031e-04\n",         # a number gone
])
def test_beyond_tolerance_or_changed_text_fails(new):
    assert not rc.numbers_close(TABLE, new)


def test_relative_tolerance_scales_with_the_value():
    assert rc.numbers_close("W2 = 1234.5", "W2 = 1235.6")       # 1.1 <= 1e-3 * 1234.5 + 0.1
    assert not rc.numbers_close("W2 = 1234.5", "W2 = 1236.0")


def _outputs(text, html, stream):
    return [nbformat.v4.new_output("stream", name="stdout", text=stream),
            nbformat.v4.new_output("execute_result", data={"text/plain": text, "text/html": html},
                                   execution_count=1)]


def test_reconcile_replaces_only_close_texts():
    ref = _outputs("0.6445", "<td>0.6445</td>", "mean 0.1234\n")
    new = _outputs("0.6444", "<td>0.6500</td>", "mean 0.1235\n")
    out = rc.reconcile(new, ref)
    assert out[0]["text"] == "mean 0.1234\n"
    assert out[1]["data"]["text/plain"] == "0.6445"
    assert out[1]["data"]["text/html"] == "<td>0.6500</td>"     # left for nbval's strict comparison to report
    assert new[1]["data"]["text/plain"] == "0.6444"             # the new outputs themselves are not changed
    assert out[1].output_type == "execute_result"               # still nbformat nodes, as nbval reads them


def test_glued_text_is_compared_approximately():
    key = "application/papermill.record/text/plain"
    ref = [nbformat.v4.new_output("display_data", data={key: "'0.6445'"})]
    assert rc.reconcile([nbformat.v4.new_output("display_data", data={key: "'0.6444'"})], ref)[0]["data"][key] \
        == "'0.6445'"
    assert rc.reconcile([nbformat.v4.new_output("display_data", data={key: "'0.7000'"})], ref)[0]["data"][key] \
        == "'0.7000'"


NOTEBOOK_CELL = "print('w2 = %.4f' % {value})"


@pytest.mark.parametrize("value, tags, passes", [
    (0.64444, ["nbval-approx"], True),     # prints 0.6444 where 0.6445 was committed
    (0.64444, [], False),                  # untagged cells stay strict
    (0.6600, ["nbval-approx"], False),     # beyond the tolerance
])
def test_nbval_uses_the_rule_on_tagged_cells(pytester, value, tags, passes):
    """nbval itself, with the root conftest, on a one-cell notebook whose committed output says 0.6445."""
    cell = nbformat.v4.new_code_cell(NOTEBOOK_CELL.format(value=value), execution_count=1,
                                     metadata={"tags": tags},
                                     outputs=[nbformat.v4.new_output("stream", name="stdout", text="w2 = 0.6445\n")])
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), pytester.path / "nb.ipynb")
    pytester.makeconftest((Path(__file__).resolve().parent.parent / "conftest.py").read_text())
    result = pytester.runpytest_subprocess("--nbval", "--nbval-current-env", "nb.ipynb", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1) if passes else result.assert_outcomes(failed=1)


def test_a_cell_stated_tolerance_reads_noise_by_its_size():
    assert rc.numbers_close("noise 2.22e-04, residual 1.2e-05", "noise 3.61e-04, residual -3.1e-05", atol=1e-3)
    assert not rc.numbers_close("noise 2.22e-04", "noise 2.22e-02", atol=1e-3)
    assert not rc.numbers_close("noise 2.22e-04", "noise 3.61e-04")
    assert rc.numbers_close("shift -0.005763", "shift -0.005790", rtol=0.05)
    assert not rc.numbers_close("shift -0.005763", "shift -0.005790")


def test_interleaved_stderr_does_not_shift_the_pairing():
    key = "application/papermill.record/text/plain"
    ref = [nbformat.v4.new_output("display_data", data={key: "0.3419364906570324"}),
           nbformat.v4.new_output("display_data", data={key: "12"})]
    new = [nbformat.v4.new_output("stream", name="stderr", text="progress 100%"),
           nbformat.v4.new_output("display_data", data={key: "0.34193658184677045"}),
           nbformat.v4.new_output("display_data", data={key: "12"})]
    assert [o["data"][key] for o in rc.reconcile(new, ref)[1:]] == ["0.3419364906570324", "12"]
