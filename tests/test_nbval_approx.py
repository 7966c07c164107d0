"""The rule of the root conftest.py for numbers: float64 and float32 noise pass, anything else fails."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)

TABLE = "layer    w2_sq     socm\n    6   0.6445   1.2031e-04\n"
F32 = rc.RTOL_FLOAT32  # the tolerance of cells tagged nbval-approx (float32 results)


@pytest.mark.parametrize("new", [
    TABLE,
    "layer    w2_sq     socm\n    6   0.6444   1.2031e-04\n",      # one unit in the last digit (rounding)
    "layer    w2_sq     socm\n    6   0.6449   1.2032e-04\n",      # within rtol 1e-3 + one unit
    "layer    w2_sq     socm\n    6  0.6445   1.2031e-04\n",       # column padding
])
def test_within_tolerance_passes(new):
    assert rc.numbers_close(TABLE, new, F32)


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
    assert not rc.numbers_close(TABLE, new, F32)


def test_relative_tolerance_scales_with_the_value():
    assert rc.numbers_close("W2 = 1234.5", "W2 = 1235.6", F32)  # 1.1 <= 1e-3 * 1234.5 + 0.1
    assert not rc.numbers_close("W2 = 1234.5", "W2 = 1236.0", F32)


def _outputs(text, html, stream):
    return [nbformat.v4.new_output("stream", name="stdout", text=stream),
            nbformat.v4.new_output("execute_result", data={"text/plain": text, "text/html": html},
                                   execution_count=1)]


def test_reconcile_replaces_only_close_texts():
    ref = _outputs("0.6445", "<td>0.6445</td>", "mean 0.1234\n")
    new = _outputs("0.6444", "<td>0.6500</td>", "mean 0.1235\n")
    out = rc.reconcile(new, ref, F32)
    assert out[0]["text"] == "mean 0.1234\n"
    assert out[1]["data"]["text/plain"] == "0.6445"
    assert out[1]["data"]["text/html"] == "<td>0.6500</td>"     # left for nbval's strict comparison to report
    assert new[1]["data"]["text/plain"] == "0.6444"             # the new outputs themselves are not changed
    assert out[1].output_type == "execute_result"               # still nbformat nodes, as nbval reads them


def test_glued_text_is_compared_approximately():
    key = "application/papermill.record/text/plain"
    ref = [nbformat.v4.new_output("display_data", data={key: "'0.6445'"})]
    assert rc.reconcile([nbformat.v4.new_output("display_data", data={key: "'0.6444'"})], ref, F32)[0]["data"][key] \
        == "'0.6445'"
    assert rc.reconcile([nbformat.v4.new_output("display_data", data={key: "'0.7000'"})], ref, F32)[0]["data"][key] \
        == "'0.7000'"


W2_SQ = 2.837722339831622  # nb01's glued float64 W2^2 as committed; SkylakeX kernels give the next float up


@pytest.mark.parametrize("new", [
    "2.837722339831622",
    "2.8377223398316223",                     # one ulp: another BLAS kernel's order of summation (a repr, 16 digits)
    repr(W2_SQ * (1 + 5e-13)),                # within 1e-12 relative
])
def test_float64_noise_passes(new):
    assert rc.numbers_close(repr(W2_SQ), new)


@pytest.mark.parametrize("new", [
    repr(W2_SQ * (1 + 1e-9)),                 # 1e-9 relative: not round-off, a changed result
    repr(W2_SQ * (1 + 1e-11)),
    "2.837722339831622e-01",                  # another format
    "2.9",                                    # another number of decimals
])
def test_float64_beyond_round_off_fails(new):
    assert not rc.numbers_close(repr(W2_SQ), new)


@pytest.mark.parametrize("ref, new", [
    ("pairs: 499500", "pairs: 499501"),       # a count
    ("seed 0, layer 6 of 12", "seed 0, layer 7 of 12"),
    ("nbval 0.11.0", "nbval 0.11.1"),         # a version is text, not numbers
    ("nbval 0.11.0", "nbval 0.12.0"),
    ("d_sigma", "d_mu"),                      # a string
])
def test_integers_versions_and_strings_are_exact(ref, new):
    assert not rc.numbers_close(ref, new) and not rc.numbers_close(ref, new, F32)


def test_one_unit_in_the_last_printed_digit_passes_a_rounding_boundary():
    assert rc.numbers_close("w2 = 0.6445", "w2 = 0.6444")     # 0.64445 +- 1 ulp prints either way
    assert not rc.numbers_close("w2 = 0.6445", "w2 = 0.6443")


def test_each_cell_gets_the_tolerance_of_its_kind_or_its_own():
    assert rc.cell_tolerance({}) == (rc.RTOL_FLOAT64, 0.0) == (1e-12, 0.0)
    assert rc.cell_tolerance({"tags": ["nbval-approx"]}) == (rc.RTOL_FLOAT32, 0.0) == (1e-3, 0.0)
    assert rc.cell_tolerance({"tags": ["nbval-approx"], "nbval_approx_rtol": 0.05}) == (0.05, 0.0)
    assert rc.cell_tolerance({"nbval_approx_rtol": 1e-9, "nbval_approx_atol": 1e-15}) == (1e-9, 1e-15)


NOTEBOOK_CELL = "print('w2 = %.4f' % {value})"
GLUE_CELL = "from myst_nb import glue\nglue('w2_sq', {value}, display=False)"


@pytest.mark.parametrize("value, tags, passes", [
    (0.64444, ["nbval-approx"], True),     # prints 0.6444 where 0.6445 was committed (a rounding boundary)
    (0.64444, [], True),                   # the same in a float64 cell
    (0.6449, ["nbval-approx"], True),      # float32 noise, within 1e-3
    (0.6449, [], False),                   # beyond round-off in a float64 cell
    (0.6600, ["nbval-approx"], False),     # beyond the tolerance
])
def test_nbval_uses_the_rule_on_every_cell(pytester, value, tags, passes):
    """nbval itself, with the root conftest, on a one-cell notebook whose committed output says 0.6445."""
    _run_nbval(pytester, NOTEBOOK_CELL.format(value=value), tags,
               nbformat.v4.new_output("stream", name="stdout", text="w2 = 0.6445\n"), passes)


@pytest.mark.parametrize("value, passes", [
    ("2.8377223398316223", True),          # one ulp from the committed float64
    (repr(W2_SQ * (1 + 1e-9)), False),     # 1e-9 relative
    ("3", False),                          # an integer where a float was glued
])
def test_nbval_compares_glued_float64_within_round_off(pytester, value, passes):
    """A glued float64 (myst-nb's glue, as nb01 glues W2^2), committed as 2.837722339831622, in an untagged cell."""
    glued = nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": repr(W2_SQ)},
                                   metadata={"scrapbook": {"name": "w2_sq", "mime_prefix": "application/papermill.record/"}})
    _run_nbval(pytester, GLUE_CELL.format(value=value), [], glued, passes)


def test_nbval_counts_stay_exact(pytester):
    _run_nbval(pytester, "print('pairs:', 499501)", ["nbval-approx"],
               nbformat.v4.new_output("stream", name="stdout", text="pairs: 499500\n"), False)


def test_nbval_waits_for_a_cells_outputs_as_long_as_a_busy_machine_needs(pytester):
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), pytester.path / "nb.ipynb")
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    items, _ = pytester.inline_genitems("--nbval", "--nbval-current-env", "nb.ipynb", "-p", "no:cacheprovider")
    assert [item.output_timeout for item in items] == [rc.OUTPUT_WAIT] and rc.OUTPUT_WAIT >= 60


def test_nbval_sanitizes_before_it_compares_numbers(pytester):
    """An address (sanitize.cfg) and float noise in one text: the address is replaced first, then the rule reads it."""
    _run_nbval(pytester, "print('<Figure at 0x7f3a2c1d9e50> w2 = %.4f' % 0.64444)", [],
               nbformat.v4.new_output("stream", name="stdout", text="<Figure at 0x55d1c0ffee00> w2 = 0.6445\n"), True,
               "--nbval-sanitize-with", str(ROOT / "notebooks" / "sanitize.cfg"))


def _run_nbval(pytester, source, tags, committed, passes, *options):
    cell = nbformat.v4.new_code_cell(source, execution_count=1, metadata={"tags": tags}, outputs=[committed])
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), pytester.path / "nb.ipynb")
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    result = pytester.runpytest_subprocess("--nbval", "--nbval-current-env", "nb.ipynb", "-p", "no:cacheprovider",
                                           *options)
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
    assert [o["data"][key] for o in rc.reconcile(new, ref, F32)[1:]] == ["0.3419364906570324", "12"]


def _nbval_command(target: str) -> list[str]:
    """The pytest command line of ``make <target>`` that runs nbval (a dry run: nothing executes)."""
    out = subprocess.run(["make", "-n", target, f"PY={sys.executable}"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return next(line for line in out.splitlines() if "--nbval" in line).split()


def test_make_test_runs_every_notebook_under_the_rule():
    """make test takes every notebook, the book's executed pages included, through nbval, once: in test-kernels."""
    out = subprocess.run(["make", "-n", "test", f"PY={sys.executable}"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert sum("--nbval" in line for line in out.splitlines()) == 1
    command = _nbval_command("test-kernels")
    notebooks = sorted(str(p.relative_to(ROOT)) for p in [*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("book/*.ipynb")])
    assert sorted(a for a in command if a.endswith(".ipynb")) == notebooks
    assert {"--nbval", "--nbval-current-env"} <= set(command)


def test_the_notebooks_run_on_a_kernel_family_every_x86_64_cpu_has():
    command = _nbval_command("test-kernels")
    for setting in ("OPENBLAS_CORETYPE=Prescott", "ATEN_CPU_CAPABILITY=default", "OMP_NUM_THREADS=1",
                    "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1"):
        assert setting in command
