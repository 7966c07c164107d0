"""The library installed without its compiled kernel, as on a machine without a C compiler: the pure wheel that the
student kit ships (scripts/student_edition.py). It must say that the small SVDs run on LAPACK and why, and give the
numbers of this install (with the kernel where it is built) to round-off.

The wheel runs in a separate interpreter started without site processing (``python -S``), with only the unpacked
wheel and this environment's dependencies on its path: the repository's editable install, whose finder would hand
it the kernel built in the source tree, is not loaded there.

Each other reason for an install without the kernel is built too (disabled by SOCM_BUILD_KERNEL=0, no C compiler, a
build that fails), three wheels at once, and its report checked; an extension that does not load is simulated."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from concurrent.futures import ThreadPoolExecutor
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import numpy as np
import pytest

import socm_lib
from socm_lib import nuclear

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import student_edition  # noqa: E402

CLOUDS = """
import numpy as np
rng = np.random.default_rng(0)
clouds = [rng.standard_normal((int(n), 48)) for n in rng.integers(1, 70, size=40)]
"""
RUN = CLOUDS + """
import json, socm_lib
from socm_lib import nuclear
result = socm_lib.socm_pairs(clouds, device="cpu", progress=False)
print(json.dumps({"file": socm_lib.__file__, "variants": list(nuclear.variants()), "report": nuclear.kernel_report(),
                  "d_sigma": result.d_sigma.tolist(), "socm": result.socm.tolist()}))
"""


def test_without_the_kernel_the_engine_takes_lapack_says_why_and_gives_the_same_numbers(tmp_path):
    wheel = student_edition.build_wheel(tmp_path / "wheel")
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if n.endswith((".so", ".pyd", ".c", ".h"))], "the wheel is not pure"
        zf.extractall(tmp_path / "site")
    path = os.pathsep.join([str(tmp_path / "site"), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    run = subprocess.run([sys.executable, "-S", "-c", RUN], env={**os.environ, "PYTHONPATH": path}, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    there = json.loads(run.stdout.splitlines()[-1])
    assert Path(there["file"]).is_relative_to(tmp_path / "site"), f"the wheel's library was not the one loaded: {there['file']}"
    assert there["variants"] == []
    assert there["report"].startswith("nuclear norms: LAPACK per matrix (compiled lane kernel not built: this install "
                                      "has no socm_lib._lanes extension"), there["report"]

    scope: dict = {}
    exec(CLOUDS, scope)
    here = socm_lib.socm_pairs(scope["clouds"], device="cpu", progress=False)
    scale = np.abs(here.d_sigma).max()
    np.testing.assert_allclose(there["d_sigma"], here.d_sigma, rtol=1e-12, atol=1e-14 * scale,
                               err_msg=f"LAPACK (wheel) against {nuclear.kernel_report()} (this install)")
    np.testing.assert_allclose(there["socm"], here.socm, rtol=1e-12, atol=1e-14 * scale)


#: How each build without the kernel is made, and the words the report must use for it.
BUILDS = {
    "disabled": ({"SOCM_BUILD_KERNEL": "0"}, "not built: disabled at build time by SOCM_BUILD_KERNEL=0"),
    "no compiler": ({"CC": "/nonexistent/cc"}, "not built: no C compiler was found at build time"),
    "failed": ({"CFLAGS": "-fsocm-no-such-option"}, "not built: its build failed ("),
}


@pytest.fixture(scope="module")
def wheels_without_kernel(tmp_path_factory):
    """The library's wheel built with setup.py under each cause of BUILDS (three builds at once)."""
    base = tmp_path_factory.mktemp("builds")
    with ThreadPoolExecutor(len(BUILDS)) as pool:
        built = pool.map(lambda cause: student_edition.build_wheel(base / cause, kernel_env=BUILDS[cause][0]), BUILDS)
        return dict(zip(BUILDS, built))


@pytest.mark.parametrize("cause", list(BUILDS))
def test_each_build_without_the_kernel_ships_its_reason(wheels_without_kernel, cause, tmp_path):
    """pip -q shows nothing of an optional build that failed; the wheel carries the reason, and the report says it:
    disabled (a pure wheel), no compiler, or the compiler's first error (its messages kept in the record)."""
    wheel = wheels_without_kernel[cause]
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if n.endswith((".so", ".pyd"))]
        assert f"socm_lib/{nuclear.BUILD_RECORD}" in zf.namelist()
        zf.extractall(tmp_path)
    assert wheel.name.endswith("-py3-none-any.whl") == (cause == "disabled")
    record = json.loads((tmp_path / "socm_lib" / nuclear.BUILD_RECORD).read_text())
    assert record["cause"] == cause
    reason = nuclear._why_missing(tmp_path / "socm_lib", ImportError("No module named 'socm_lib._lanes'"))
    assert reason.startswith(BUILDS[cause][1]), reason
    if cause == "failed":  # the compiler's own error, and where the rest of its messages are
        assert "-fsocm-no-such-option" in reason
        assert reason.endswith(f"in {tmp_path / 'socm_lib' / nuclear.BUILD_RECORD}")


def test_a_kernel_built_but_not_loadable_is_reported_with_the_loader_error(tmp_path):
    """An extension file that does not load (another Python's, a missing library, a corrupt file)."""
    broken = tmp_path / f"_lanes{EXTENSION_SUFFIXES[0]}"
    broken.write_bytes(b"not a shared object")
    spec = importlib.util.spec_from_file_location("_lanes", broken)
    with pytest.raises(ImportError) as error:
        spec.loader.create_module(spec)
    assert nuclear._why_missing(tmp_path, error.value) == f"built but not loaded: {broken.name}: {error.value}"
