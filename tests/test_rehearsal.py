"""The Colab path rehearsed here: stand-in checkpoints of ``bert`` and ``gte`` (tests/standins.py) through the
library, the comparator widget, and notebooks 4, 5 and 6 (scripts/rehearse.py). Stand-in weights: checks the
code path, not the science."""

import hashlib
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

import socm_lib
from socm_lib.encoders import load_encoder

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import rehearse  # noqa: E402

TEXTS = list(socm_lib.sample_texts(socm_lib.corpus()["text"], 8, 0))


def test_extraction_pairs_and_comparator_with_bert_and_gte(standin_hub):
    from socm_lib.viz.widgets import Comparator

    clouds = {}
    for name in ("bert", "gte"):
        enc = load_encoder(name, device="cpu")
        clouds[name] = socm_lib.token_embeddings(enc, TEXTS)
        assert all(c.shape[1] == 768 and np.isfinite(c).all() for c in clouds[name])
        result = socm_lib.socm_pairs(clouds[name], device="cpu")
        assert len(result) == 28 and np.isfinite(result.socm).all() and (result.d_sigma >= 0).all()
    comparator = Comparator("bert", "gte", n_texts=10, show_figures=False, device="cpu")
    assert comparator.last_error is None, comparator.last_error
    assert comparator.last_summary.startswith("A bert: average SOCM") and "\nB gte: average SOCM" in \
        comparator.last_summary
    assert len(comparator.comparison.results[1]) == 45
    assert comparator.comparison.clouds[0][0].shape[1] == 768


def test_inject_sets_only_the_parameters_a_notebook_defines():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("ENCODERS = ['a']\nN_TEXTS = 1000  # comment\nSEED = 0", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("print(ENCODERS)"),
    ])
    chosen = rehearse.inject(nb, rehearse.parameters(12, Path("out")))
    assert chosen == {"ENCODERS": ["bert", "gte"], "N_TEXTS": 12}
    assert nb.cells[2].metadata["tags"] == ["injected-parameters"] and "ENCODER_A" not in nb.cells[2].source
    namespace = {}
    exec(nb.cells[1].source + "\n" + nb.cells[2].source.replace("print(", "str("), namespace)
    assert namespace["ENCODERS"] == ["bert", "gte"] and namespace["N_TEXTS"] == 12 and namespace["SEED"] == 0
    with pytest.raises(ValueError, match="one cell tagged 'parameters'"):
        rehearse.inject(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("N_TEXTS = 3")]), {})


def test_projection_scales_the_measured_parts(standin_hub):
    p = rehearse.projection(n_texts=4, tile_to=12, runs=3)
    assert p["encoder"] == "bert [stand-in]" and p["d"] == 768 and p["pairs_timed"] == 66
    assert p["extraction_ms_per_text"] > 0 and p["socm_us_per_pair"] > 0
    assert p["protocol_extraction_s"] == pytest.approx(p["extraction_ms_per_text"], rel=0.01, abs=0.1)
    assert p["protocol_pairs_s"] == pytest.approx(0.4995 * p["socm_us_per_pair"], rel=0.01, abs=0.1)
    # repeated warm runs, each projecting the protocol; the projection is their median, quoted with their range
    assert p["runs"] == 3 and all(len(p[k]) == 3 for k in
                                  ("extraction_ms_per_text_runs", "socm_us_per_pair_runs", "protocol_runs_s"))
    assert p["extraction_ms_per_text"] == pytest.approx(float(np.median(p["extraction_ms_per_text_runs"])), abs=0.01)
    assert p["protocol_runs_s"] == pytest.approx([a + 0.4995 * b for a, b in zip(p["extraction_ms_per_text_runs"],
                                                                                p["socm_us_per_pair_runs"])], abs=0.2)
    assert p["protocol_s"] == pytest.approx(float(np.median(p["protocol_runs_s"])), abs=0.1)
    assert p["nb05_full_s"] == pytest.approx(4 * p["protocol_s"], abs=0.5)
    assert p["load_average_1min_before"] >= 0 and "cores" in p["other_processes"]


def test_rehearsal_of_notebooks_4_5_6(standin_hub, tmp_path):
    committed = {p: hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in [*(ROOT / "notebooks").glob("nb0[456]_*.ipynb"), *(ROOT / "notebooks" / "explorer").iterdir()]}
    record = rehearse.rehearse(tmp_path / "executed", n_texts=12, with_projection=False)
    assert len(record["notebooks"]) == 3
    for name, entry in record["notebooks"].items():
        copy = nbformat.read(tmp_path / "executed" / Path(name).name, as_version=4)
        counts = rehearse.output_counts(copy)
        assert counts["errors"] == 0 and counts["images"] >= 1 and counts["tables"] >= 1 and counts["note"] >= 1
        assert entry["outputs"] == {k: counts[k] for k in ("images", "tables", "widgets")}
        assert entry["seconds"] > 0 and entry["peak_rss_mib"] > 100  # the kernel holds two BERT-base models
        shown = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                        + str(o.get("data", {}).get("text/html", "")) for c in copy.cells for o in c.get("outputs", []))
        assert "bert" in shown and "gte" in shown
        assert entry["parameters"]["N_TEXTS"] == 12
    nb04 = nbformat.read(tmp_path / "executed" / "nb04_comparator.ipynb", as_version=4)
    assert rehearse.output_counts(nb04)["widgets"] >= 1
    assert nb04.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert sorted(p.name for p in (tmp_path / "executed" / "explorer").iterdir()) == [
        "bert.json", "gte.json", "text-sets.json", "untrained-minilm-l6.json"]  # the stand-ins' results, beside the copies
    after = [*(ROOT / "notebooks").glob("nb0[456]_*.ipynb"), *(ROOT / "notebooks" / "explorer").iterdir()]
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in after} == committed  # copies only


def test_run_notebooks_records_the_snapshot_commit_of_each_hub_model(standin_hub, tmp_path):
    import standins
    from run_notebooks import environment, run

    path = tmp_path / "uses_bert.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import socm_lib\nprint(socm_lib.load_encoder('bert', device='cpu').label)")]), path)
    seconds, models = run(path, provenance=True)
    rev = standins.revision("bert")
    assert seconds > 0 and models == [{"name": "bert", "id": "google-bert/bert-base-uncased", "commit": rev,
                                       "source": "google-bert/bert-base-uncased", "stand_in": True,
                                       "dtype": "float32"}]
    written = nbformat.read(path, as_version=4)
    stdout = [o["text"] for o in written.cells[0].outputs if o.get("name") == "stdout"]
    assert len(written.cells) == 1 and stdout == ["bert [stand-in]\n"]
    env = environment({"notebooks/uses_bert.ipynb": {"models": models}})
    assert env["models"]["bert"] == {"source": "Hugging Face google-bert/bert-base-uncased", "commit": rev,
                                     "stand_in": True}
    assert "all-minilm-l6" in env["models"] and "untrained-minilm-l6" in env["models"]
