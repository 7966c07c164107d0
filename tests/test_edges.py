"""Odd and bad inputs at the library's edges (issue 19): nothing lost, nothing silently wrong."""

from __future__ import annotations

import io
import numpy as np
import pytest

import socm_lib
import socm_lib.cli
from socm_lib import reference


# --- read_lines and the file readers -------------------------------------------------------------

def test_read_lines_keeps_a_last_line_without_newline(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("\n".join(["one", "two", "three"]), encoding="utf-8")
    assert socm_lib.read_lines(p) == ["one", "two", "three"]
    p.write_text("only", encoding="utf-8")
    assert socm_lib.read_lines(p) == ["only"]


def test_read_lines_strips_a_byte_order_mark(tmp_path):
    p = tmp_path / "bom.txt"
    p.write_bytes("\ufefffirst\nsecond\n".encode("utf-8"))
    assert socm_lib.read_lines(p) == ["first", "second"]


def test_read_lines_refuses_non_utf8_and_folders(tmp_path):
    p = tmp_path / "latin.txt"
    p.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match="latin.txt is not UTF-8"):
        socm_lib.read_lines(p)
    with pytest.raises(ValueError, match="is a folder"):
        socm_lib.read_lines(tmp_path)


def test_read_sick_refuses_a_file_that_is_not_sick(tmp_path):
    p = tmp_path / "notsick.txt"
    p.write_text("a\tb\nc\td\n", encoding="utf-8")
    with pytest.raises(ValueError, match="notsick.txt lacks the column"):
        socm_lib.read_sick(p)


# --- normalisation at extreme scales -------------------------------------------------------------

@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_extreme_scales_give_the_unscaled_answer(scale):
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(5, 4)) + 1, rng.normal(size=(7, 4)) + 1
    want = reference.lowrank_pair(X, Y)
    got = socm_lib.socm(X * scale, Y * scale)
    assert got.d_mu == pytest.approx(want.d_mu, rel=1e-10)
    assert got.d_sigma == pytest.approx(want.d_sigma, rel=1e-10)


def test_cloud_whose_mean_norm_overflows_is_measured_scale_free_or_refused():
    X = np.full((3, 4), 1e308)  # ||mu|| = 2e308 overflows, but X / ||mu|| does not
    assert socm_lib.socm(X, X) == socm_lib.SOCMResult(0.0, 0.0, 0.0)
    assert socm_lib.socm(X, X, normalize=False) == socm_lib.SOCMResult(0.0, 0.0, 0.0)  # no spread: nothing overflows
    wide = np.array([[1e308, 1.0], [-1e308, 1.0]])  # its spread, 1e616, is past float64
    with pytest.raises(ValueError, match="X1 is too large for normalize=False"):
        socm_lib.socm(wide, wide[:, ::-1].copy(), normalize=False)


# --- CLI: pairs, files and --out are checked before the model loads -----------------------------

@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the inputs were checked")
    monkeypatch.setattr(socm_lib.cli, "load_encoder", refuse)


def run_cli(capsys, *args):
    code = socm_lib.cli.main(["run", *args])
    captured = capsys.readouterr()
    return code, captured.err


def test_random_pairs_are_distinct_and_ordered():
    pairs = socm_lib.cli._pairs("random:3", 3, seed=0)
    assert sorted(map(tuple, pairs)) == [(0, 1), (0, 2), (1, 2)]
    pairs = socm_lib.cli._pairs("random:200", 40, seed=1)
    assert len({tuple(p) for p in pairs}) == 200
    assert (pairs[:, 0] < pairs[:, 1]).all() and pairs.max() < 40


def test_condensed_pairs_follow_triu_order():
    for n in (2, 3, 9, 61):
        i, j = np.triu_indices(n, k=1)
        got = socm_lib.block_plan.condensed_pairs(np.arange(len(i)), n)
        np.testing.assert_array_equal(got, np.stack([i, j], axis=1))


@pytest.mark.parametrize("spec", ["random:0", "random:-5", "random:abc", "random:4"])
def test_bad_random_pairs_one_line_error(capsys, no_model, tmp_path, spec):
    p = tmp_path / "three.txt"
    p.write_text("a b\nc d\ne f", encoding="utf-8")
    code, err = run_cli(capsys, "--texts", str(p), "--pairs", spec)
    assert code == 2
    assert err.startswith(f"error: --pairs {spec!r}") and err.count("\n") == 1


def test_bad_files_one_line_error_naming_the_file(capsys, no_model, tmp_path):
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9\n".encode("latin-1"))
    notsick = tmp_path / "notsick.tsv"
    notsick.write_text("x\ty\n1\t2\n", encoding="utf-8")
    for spec, name in [(str(latin), "latin.txt"), (str(tmp_path), str(tmp_path)),
                       (f"sick:{notsick}", "notsick.tsv"), (str(tmp_path / "nope.txt"), "nope.txt")]:
        code, err = run_cli(capsys, "--texts", spec)
        assert code == 2, spec
        assert err.startswith("error: ") and name in err and err.count("\n") == 1, err


def test_unwritable_out_one_line_error(capsys, no_model, tmp_path):
    code, err = run_cli(capsys, "--sample", "5", "--out", str(tmp_path / "missing" / "out.csv"))
    assert code == 2 and "--out" in err and "out.csv" in err and err.count("\n") == 1
    code, err = run_cli(capsys, "--sample", "5", "--out", str(tmp_path))
    assert code == 2 and "--out" in err


def test_hf_texts_without_datasets_one_line_error(capsys, no_model, monkeypatch):
    import builtins
    real = builtins.__import__

    def no_datasets(name, *args, **kwargs):
        if name == "datasets":
            raise ImportError("no datasets")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    code, err = run_cli(capsys, "--texts", "hf:wikitext")
    assert code == 2 and "datasets" in err and err.count("\n") == 1


# --- max_length --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm():
    return socm_lib.load_encoder("all-minilm-l6", device="cpu")


@pytest.mark.parametrize("bad", [0, -1, 100_000])
def test_max_length_out_of_range(minilm, bad):
    with pytest.raises(ValueError, match="max_length"):
        socm_lib.token_embeddings(minilm, ["a short text"], max_length=bad)


def test_max_length_bool_refused(minilm):
    with pytest.raises(TypeError, match="max_length"):
        socm_lib.token_embeddings(minilm, ["a short text"], max_length=True)


def test_truncation_warns_once_with_the_count(minilm):
    texts = ["word " * 50, "short", "word " * 30]
    with pytest.warns(UserWarning, match="2 of 3 texts are longer than max_length = 16") as record:
        clouds = socm_lib.token_embeddings(minilm, texts, max_length=16)
    assert len([w for w in record if "max_length" in str(w.message)]) == 1
    assert [c.shape[0] for c in clouds][::2] == [16, 16]


# --- packaging ---------------------------------------------------------------------------------

def test_one_version_string_and_a_licence():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "socm_lib.__version__"}
    assert socm_lib.__version__.count(".") == 2
    assert (root / "LICENSE").read_text().startswith("MIT License")
    deps = " ".join(project["project"]["dependencies"])
    assert "huggingface_hub" in deps and "matplotlib" not in deps and "ipywidgets" not in deps
    assert {"matplotlib", "ipywidgets"} <= {d.split(">")[0] for d in project["project"]["optional-dependencies"]["viz"]}


def test_import_socm_lib_loads_neither_transformers_nor_pandas():
    import subprocess
    import sys

    code = ("import sys, socm_lib; assert socm_lib.socm; "
            "print(sorted(m for m in ('transformers', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    code = "import sys, socm_lib; socm_lib.read_lines; print('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "True"


# --- available_memory reads a container's cgroup limit ------------------------------------------

@pytest.mark.parametrize("version", ["v2", "v1"])
def test_available_memory_reads_the_cgroup_limit(tmp_path, monkeypatch, version):
    from socm_lib import memory

    limit, usage = tmp_path / "limit", tmp_path / "usage"
    limit.write_text(f"{300 * 2**20}\n")
    usage.write_text(f"{100 * 2**20}\n")
    files = [(str(limit), str(usage))]
    if version == "v1":
        files = [(str(tmp_path / "absent.max"), str(tmp_path / "absent.current"))] + files
    monkeypatch.setattr(memory, "CGROUP_FILES", tuple(files))
    real_open = open  # the host's MemAvailable held still (it moves between two reads on a busy machine)
    monkeypatch.setattr(memory, "open", lambda path, *a, **k: io.StringIO("MemAvailable: 8388608 kB\n")
                        if path == "/proc/meminfo" else real_open(path, *a, **k), raising=False)
    assert memory.available_memory() == 200 * 2**20
    limit.write_text("max\n")
    host = memory.available_memory()
    assert host is not None and host != 200 * 2**20
    limit.write_text(f"{1 << 62}\n")  # v1's "no limit"
    assert memory.available_memory() == host


# --- paper_route shares socm_pairs' checks -------------------------------------------------------

def _two_clouds():
    rng = np.random.default_rng(5)
    return [rng.normal(size=(4, 3)) + 1, rng.normal(size=(6, 3)) + 1]


def test_paper_route_refuses_a_gpu_it_does_not_have():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="asks for a CUDA GPU"):
        socm_lib.paper_route(_two_clouds(), device="cuda")


def test_paper_route_refuses_a_zero_mean_cloud():
    clouds = _two_clouds()
    clouds[1] = np.array([[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]])
    with pytest.raises(ValueError, match=r"clouds\[1\] has a zero mean"):
        socm_lib.paper_route(clouds)


def test_paper_route_checks_memory_first(monkeypatch):
    from socm_lib import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 100)  # the route needs about 350 bytes here
    with pytest.raises(socm_lib.InsufficientMemoryError, match="paper_route on 2 clouds"):
        socm_lib.paper_route(_two_clouds())
    monkeypatch.setattr(memory, "available_memory", lambda: 10**12)
    assert len(socm_lib.paper_route(_two_clouds())) == 1


# --- socm() on one pair: a direct path, checked against the engine -------------------------------

@pytest.mark.parametrize("shapes", [((5, 4), (7, 4)), ((1, 3), (6, 3)), ((1, 3), (1, 3)), ((30, 8), (2, 8))])
@pytest.mark.parametrize("normalize", [True, False])
def test_socm_direct_path_equals_the_engine(shapes, normalize):
    rng = np.random.default_rng(len(shapes[0]) + shapes[0][0])
    X, Y = (rng.normal(size=s) + 0.5 for s in shapes)
    got = socm_lib.socm(X, Y, normalize=normalize)
    want = socm_lib.socm_pairs([X, Y], [(0, 1)], normalize=normalize, device="cpu", progress=False)[0]
    for name in ("d_mu", "d_sigma", "socm"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-10, abs=1e-14), name
    ref = reference.lowrank_pair(X, Y, normalize=normalize)
    assert got.d_sigma == pytest.approx(ref.d_sigma, rel=1e-10, abs=1e-14)


def test_socm_direct_path_validates_like_the_engine():
    with pytest.raises(ValueError, match="X2 has a zero mean"):
        socm_lib.socm(np.ones((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="same encoder"):
        socm_lib.socm(np.ones((2, 3)), np.ones((2, 4)))


# --- socm_summary's means do not depend on thread timing or thread count -------------------------

def test_summary_means_do_not_depend_on_block_order_or_threads(monkeypatch):
    import torch

    from socm_lib import block_runner

    rng = np.random.default_rng(11)
    clouds = [rng.normal(size=(int(n), 6)) + 0.3 for n in rng.integers(2, 12, size=40)]

    def means():
        r = socm_lib.socm_summary(clouds, block_elems=64, progress=False)
        return r.mean_socm, r.mean_d_mu, r.mean_d_sigma

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = means()
        torch.set_num_threads(4)
        four = means()
    finally:
        torch.set_num_threads(threads)
    monkeypatch.setattr(block_runner, "as_completed", lambda futures: list(futures)[::-1])  # blocks finish backwards
    torch.set_num_threads(4)
    try:
        backwards = means()
    finally:
        torch.set_num_threads(threads)
    assert one == four == backwards
    full = socm_lib.socm_pairs(clouds, device="cpu", progress=False)
    assert one[0] == pytest.approx(full.socm.mean(), rel=1e-12)


def test_summary_histogram_range_like_numpy():
    rng = np.random.default_rng(2)
    clouds = [rng.normal(size=(int(n), 5)) + 0.4 for n in rng.integers(2, 9, size=25)]
    full = socm_lib.socm_pairs(clouds, device="cpu", progress=False)
    lo, hi = np.quantile(full.socm, [0.0, 0.9])
    r = socm_lib.socm_summary(clouds, bins=20, range={"socm": (lo, hi)}, progress=False)
    h = r.histograms["socm"]
    want_counts, want_edges = np.histogram(np.clip(full.socm, lo, hi), bins=20, range=(lo, hi))
    np.testing.assert_allclose(h.edges[[0, -1]], [lo, hi], rtol=1e-8)
    assert h.counts.sum() == len(full)
    inside = (full.socm >= lo) & (full.socm < want_edges[-2])
    assert abs(int(h.counts[:-1].sum()) - int(inside.sum())) <= 1  # the top edge's round-off margin
    for bad, err in [({"socm": (1, 0)}, ValueError), ({"cos": (0, 1)}, ValueError), ({"socm": 3}, TypeError),
                     ((0, 1), TypeError)]:
        with pytest.raises(err, match="range"):
            socm_lib.socm_summary(clouds, range=bad, progress=False)


def test_all_pairs_order_is_pdist_condensed_order():
    from scipy.spatial.distance import pdist, squareform

    rng = np.random.default_rng(4)
    clouds = [rng.normal(size=(3, 2)) + 1 for _ in range(6)]
    r = socm_lib.socm_pairs(clouds, device="cpu", progress=False)
    means = np.array([c.mean(axis=0) / np.linalg.norm(c.mean(axis=0)) for c in clouds])
    np.testing.assert_allclose(r.d_mu, pdist(means, "sqeuclidean") / 4, rtol=1e-12)
    M = squareform(r.socm)
    assert M[2, 4] == pytest.approx(socm_lib.socm(clouds[2], clouds[4]).socm, rel=1e-10)


def test_generators_are_accepted_alike():
    rng = np.random.default_rng(8)
    clouds = [rng.normal(size=(4, 3)) + 1 for _ in range(4)]
    want = socm_lib.socm_pairs(clouds, [(0, 1), (2, 3)], device="cpu", progress=False)
    got = socm_lib.socm_pairs((c for c in clouds), ((i, j) for i, j in [(0, 1), (2, 3)]), device="cpu",
                              progress=False)
    np.testing.assert_array_equal(got.socm, want.socm)
    from socm_lib.checks import as_texts

    assert as_texts(t for t in ["a", "b"]) == ["a", "b"]
    with pytest.raises(ValueError, match="clouds is empty"):
        socm_lib.socm_pairs(c for c in [])
