"""One mechanism for the library's process-wide choices (socm_lib.config): settings held in a context variable,
changed by config_context for the code a with-block runs and put back after it; SOCM_SVD_KERNEL read once, at import,
as the default; the engine's worker threads and the progress bars follow the caller's settings; nothing else of the
process is changed."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import socm_lib
from socm_lib import checks, config, nuclear

CLOUDS = [np.random.default_rng(k).normal(size=(int(n), 6)) + 0.5 for k, n in enumerate([3, 9, 4, 12, 7, 2, 10, 5])]


def run_python(code: str, **env) -> str:
    """Run ``code`` in a fresh interpreter with extra environment variables; its stdout."""
    import os

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, **env}).stdout.strip()


def test_config_context_changes_settings_inside_the_block_and_puts_them_back():
    before = socm_lib.get_config()
    with socm_lib.config_context(svd_kernel="lapack", progress=False):
        assert socm_lib.get_config() == {**before, "svd_kernel": "lapack", "progress": False}
        with socm_lib.config_context(torch_svd="jacobi"):  # nested: the outer settings stay
            assert socm_lib.get_config() == {**before, "svd_kernel": "lapack", "progress": False, "torch_svd": "jacobi"}
        assert socm_lib.get_config()["torch_svd"] == before["torch_svd"]
    assert socm_lib.get_config() == before
    with pytest.raises(RuntimeError), socm_lib.config_context(progress=True):
        raise RuntimeError("a block that fails")
    assert socm_lib.get_config() == before


@pytest.mark.parametrize("settings,error,words", [
    ({"svd_kernel": "sse9"}, ValueError, "svd_kernel must be one of 'auto', 'lapack', 'avx512', 'avx2', 'portable'"),
    ({"torch_svd": "gesvdj"}, ValueError, "torch_svd must be one of 'auto', 'jacobi', 'svdvals'"),
    ({"progress": "yes"}, TypeError, "progress must be True, False or None"),
    ({"threads": 2}, TypeError, "unknown setting 'threads'; the settings are svd_kernel, torch_svd, progress"),
])
def test_bad_settings_are_refused_before_anything_changes(settings, error, words):
    before = socm_lib.get_config()
    with pytest.raises(error, match=words):
        with socm_lib.config_context(**{"progress": False, **settings}):
            pass
    assert socm_lib.get_config() == before


def test_settings_belong_to_a_context_not_to_the_process():
    """Another thread starts from the defaults while this one has changed them, and its own change stays its own."""
    seen = {}

    def other():
        seen["start"] = socm_lib.get_config()["svd_kernel"]
        with socm_lib.config_context(svd_kernel="lapack"):
            seen["inside"] = socm_lib.get_config()["svd_kernel"]
            barrier.wait()
            barrier.wait()

    barrier = threading.Barrier(2)
    with socm_lib.config_context(svd_kernel="lapack", torch_svd="svdvals"):
        worker = threading.Thread(target=other)
        worker.start()
    barrier.wait()  # the other thread is inside its block; ours has left its own
    assert socm_lib.get_config() == config.get_config() and socm_lib.get_config()["torch_svd"] == "auto"
    assert socm_lib.get_config()["svd_kernel"] == config.DEFAULTS.svd_kernel
    barrier.wait()
    worker.join()
    assert seen == {"start": config.DEFAULTS.svd_kernel, "inside": "lapack"}


def test_the_engine_threads_follow_the_callers_route(monkeypatch):
    """The numpy path's worker threads run every block under the settings of the call that started them: with
    svd_kernel='lapack' every nuclear norm goes to LAPACK, also in the threads (a new thread alone would start from
    the defaults)."""
    import torch

    if not nuclear.variants():
        pytest.skip("without the compiled kernel every route is LAPACK: there is nothing to tell apart")
    threads, lapack = [], nuclear.lapack_nuclear_norms

    def spy(G):
        if G.size:  # a block with no pair above the diagonal hands LAPACK an empty batch
            threads.append(threading.get_ident())
        return lapack(G)

    monkeypatch.setattr(nuclear, "lapack_nuclear_norms", spy)
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        socm_lib.socm_pairs(CLOUDS, block_elems=50, progress=False)
        assert not threads  # the kernel's route by default
        with socm_lib.config_context(svd_kernel="lapack"):
            result = socm_lib.socm_pairs(CLOUDS, block_elems=50, progress=False)
    finally:
        torch.set_num_threads(saved)
    assert threads and threading.get_ident() not in threads  # worker threads, every block by LAPACK
    reference = socm_lib.socm_pairs(CLOUDS, progress=False)
    np.testing.assert_allclose(result.socm, reference.socm, rtol=1e-12, atol=1e-15)


def test_the_environment_gives_the_default_once_at_import():
    code = ("import os, socm_lib; from socm_lib import nuclear; "
            "os.environ['SOCM_SVD_KERNEL'] = 'auto'; "  # read once: a change after import changes nothing
            "print(socm_lib.get_config()['svd_kernel'], nuclear.kernel())")
    assert run_python(code, SOCM_SVD_KERNEL=" LAPACK ") == "lapack None"


def test_a_bad_environment_value_is_refused_where_the_route_is_chosen_never_at_import():
    code = ("import socm_lib; from socm_lib import nuclear\n"
            "try:\n    nuclear.kernel()\nexcept ValueError as e:\n    print(e)\n"
            "with socm_lib.config_context(svd_kernel='lapack'):\n    print(nuclear.kernel())")
    out = run_python(code, SOCM_SVD_KERNEL="sse9").splitlines()
    assert out[0].startswith("SOCM_SVD_KERNEL='sse9' (read when socm_lib was imported) is not a route: use auto, "
                             "lapack, avx512, avx2 or portable")
    assert out[1] == "None"  # config_context overrides it


def test_progress_follows_the_setting_and_a_call_argument_wins(capsys):
    assert checks.show_progress(None, 10**9) is False  # pytest's stderr is no terminal
    with socm_lib.config_context(progress=True):
        assert checks.show_progress(None, 1) is True
        assert checks.show_progress(False, 10**9) is False  # the call's own choice wins
        socm_lib.socm_pairs(CLOUDS)
        assert "SOCM" in capsys.readouterr().err
        socm_lib.socm_pairs(CLOUDS, progress=False)
        assert capsys.readouterr().err == ""
    with socm_lib.config_context(progress=False):
        assert checks.show_progress(True, 1) is True
        socm_lib.socm_summary(CLOUDS)
        assert capsys.readouterr().err == ""

