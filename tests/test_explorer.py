"""The explorer's library side: per-pair results (socm_lib.explorer), their files and folder, the Vega-Lite chart
(socm_lib.viz.explorer) and the book's renderer of it (socm_lib.viz.mystnb). The chart in the built page is tested
in tests/test_explorer_page.py."""

import base64
import json
import struct
import sys
import types
from importlib.metadata import entry_points

import altair as alt
import numpy as np
import pytest

from socm_lib import explorer, labelled_pairs, load_encoder, socm_pairs, token_embeddings
from socm_lib.viz import mystnb
from socm_lib.viz.explorer import Explorer, explorer_chart, show_explorer
from socm_lib.viz.widgets import source_texts

ENCODERS = ("all-minilm-l6", "untrained-minilm-l6")


@pytest.fixture(scope="module")
def sets():
    """A small sample of corpus texts (all pairs) and three labelled pairs of each of two kinds."""
    full = explorer.labelled_set()
    keep = [k for kind in ("negation", "paraphrase") for k in np.flatnonzero(np.array(full.kinds) == kind)[:3]]
    used = sorted({int(t) for k in keep for t in full.pairs[k]})
    where = {t: n for n, t in enumerate(used)}
    labelled = explorer.TextSet("labelled", "six labelled pairs", tuple(full.texts[t] for t in used),
                                np.array([[where[int(a)], where[int(b)]] for a, b in full.pairs[keep]]),
                                tuple(full.kinds[k] for k in keep))
    return [explorer.sample_set(source_texts("corpus", 8, 3)), labelled]


@pytest.fixture(scope="module")
def folder(tmp_path_factory, sets):
    out = tmp_path_factory.mktemp("explorer")
    for name in ENCODERS:
        explorer.write_results(out, name, sets, device="cpu")
    return out


def test_pair_results_agree_with_socm_pairs(sets):
    sample, labelled = sets
    for text_set in sets:
        frame = explorer.pair_results("untrained-minilm-l6", text_set, device="cpu")
        clouds = token_embeddings(load_encoder("untrained-minilm-l6", device="cpu"), list(text_set.texts))
        direct = socm_pairs(clouds, text_set.pairs, device="cpu", progress=False)
        assert list(frame.columns) == ["i", "j", "kind", "d_mu", "d_sigma", "socm"]
        assert np.array_equal(frame[["i", "j"]].to_numpy(), text_set.pairs)
        assert list(frame["kind"]) == list(text_set.kinds)
        for m in explorer.MEASURES:
            np.testing.assert_allclose(frame[m], getattr(direct, m), rtol=0, atol=1e-12)
    assert len(sample) == 8 * 7 // 2 and set(sample.kinds) == {""}
    assert sample.label == "corpus sample: 8 texts, all 28 pairs"


def test_the_labelled_set_holds_every_labelled_pair_with_its_kind():
    full, df = explorer.labelled_set(), labelled_pairs()
    assert len(full) == len(df) and list(full.kinds) == list(df["kind"])
    assert len(set(full.texts)) == len(full.texts)
    assert [(full.texts[a], full.texts[b]) for a, b in full.pairs] == list(zip(df["text_a"], df["text_b"]))


def test_write_then_read_round_trip(folder, sets):
    results = explorer.read_results(folder)
    assert list(results.encoders) == ["all-minilm-l6", "untrained-minilm-l6"]  # the registry's order
    assert list(results.sets) == ["corpus", "labelled"] and all(results.sets[s.name].same_as(s) for s in sets)
    for name in ENCODERS:
        record = json.loads(explorer.results_path(folder, name).read_text())
        assert record["encoder"] == name and "source" not in record["provenance"]  # no machine paths
        for text_set in sets:
            frame = explorer.pair_results(name, text_set, device="cpu")
            got = results.select(name, text_set.name)
            for m in explorer.MEASURES:
                np.testing.assert_array_equal(got[m], np.round(frame[m], explorer.DECIMALS))
            assert results.mean(name, text_set.name) == pytest.approx(np.mean(np.round(frame["socm"], 4)), abs=1e-15)
    negation = results.select("all-minilm-l6", "labelled", "negation")
    assert len(negation) == 3
    with pytest.raises(ValueError, match="no pairs of kind 'unrelated'"):
        results.select("all-minilm-l6", "labelled", "unrelated")
    with pytest.raises(ValueError, match="No results for encoder 'bert'"):
        results.mean("bert", "corpus")
    table = results.pair_table()
    assert len(table) == sum(len(s) for s in sets)
    assert list(table.columns[:4]) == ["set", "i", "j", "kind"] and "socm@untrained-minilm-l6" in table.columns


def test_a_file_within_tolerance_is_kept_and_one_beyond_it_rewritten(tmp_path, sets):
    path = explorer.write_results(tmp_path, "untrained-minilm-l6", sets, device="cpu")
    record = json.loads(path.read_text())
    record["sets"]["corpus"]["socm"][0] *= 1 + 1e-4  # float32 noise of another CPU: kept
    nudged = json.dumps(record)
    path.write_text(nudged)
    explorer.write_results(tmp_path, "untrained-minilm-l6", sets, device="cpu")
    assert path.read_text() == nudged
    record["sets"]["corpus"]["socm"][0] *= 1.05  # a real change: rewritten
    path.write_text(json.dumps(record))
    explorer.write_results(tmp_path, "untrained-minilm-l6", sets, device="cpu")
    assert json.loads(path.read_text())["sets"]["corpus"]["socm"][0] == round(
        float(explorer.pair_results("untrained-minilm-l6", sets[0], device="cpu")["socm"][0]), explorer.DECIMALS)


def test_a_new_results_file_is_a_new_choice(tmp_path, folder, sets, standin_hub):
    """An encoder measured elsewhere (here the stand-in of bert, as a Colab run of bert would write it) joins the
    explorer by its file alone."""
    for path in folder.glob("*.json"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    before = explorer.read_results(tmp_path)
    explorer.write_results(tmp_path, "bert", sets, device="cpu")
    after = explorer.read_results(tmp_path)
    assert list(after.encoders) == [*before.encoders, "bert"]  # the registry's order: the offline encoders first
    menus = {p["name"]: p["bind"] for p in explorer_chart(after).to_dict()["params"]}
    assert menus["encoder_a"]["options"] == menus["encoder_b"]["options"] == list(after.encoders)
    assert "bert (backbone)" in menus["encoder_b"]["labels"]


def test_folders_that_are_no_results_are_refused(tmp_path, folder, sets):
    with pytest.raises(FileNotFoundError, match="No results folder"):
        explorer.read_results(tmp_path / "missing")
    with pytest.raises(ValueError, match="holds no results files"):
        explorer.read_results(tmp_path)
    (tmp_path / "notes.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a results file of format 1"):
        explorer.read_results(tmp_path)
    (tmp_path / "notes.json").unlink()
    for path in folder.glob("*.json"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    other = [explorer.sample_set(source_texts("corpus", 8, 4)), sets[1]]  # another sample of texts
    explorer.write_results(tmp_path, "untrained-minilm-l6", other, device="cpu")
    with pytest.raises(ValueError, match="different texts or pairs in text set 'corpus'"):
        explorer.read_results(tmp_path)
    with pytest.raises(TypeError, match="TextSet"):
        explorer.write_results(tmp_path, "untrained-minilm-l6", ["a text", "another"])


def test_the_chart_binds_four_labelled_menus_and_carries_its_data(folder):
    spec = show_explorer(folder, encoder_b="untrained-minilm-l6").spec()
    params = {p["name"]: p for p in spec["params"]}
    assert list(params) == ["encoder_a", "encoder_b", "texts", "kind"]
    assert all(p["bind"]["input"] == "select" and p["bind"]["name"].strip() for p in params.values())
    assert (params["encoder_a"]["value"], params["encoder_b"]["value"]) == ENCODERS
    assert params["texts"]["bind"]["options"] == ["corpus", "labelled"]
    assert params["kind"]["bind"]["options"] == ["all", "paraphrase", "negation"]  # present kinds, PAIR_KINDS order
    assert '"url"' not in json.dumps(spec)  # every dataset inline: a page opened from disk fetches nothing
    csv = next(v for v in spec["datasets"].values() if isinstance(v, str))
    header = csv.splitlines()[0].split(",")
    assert header[:4] == ["set", "i", "j", "kind"] and "socm@all-minilm-l6" in header
    assert spec["usermeta"]["embedOptions"] == {"renderer": "svg", "actions": False}
    assert spec["description"].startswith("Explorer of per-pair results of 2 encoders")
    with pytest.raises(ValueError, match="encoder_a='bert' is not in the results"):
        explorer_chart(explorer.read_results(folder), encoder_a="bert")


def test_each_medium_gets_the_form_it_draws(folder, monkeypatch):
    shown = Explorer(explorer.read_results(folder))
    bundle = shown._repr_mimebundle_()  # JupyterLab, the book: Vega-Lite 5, which JupyterLab 4 draws natively
    assert set(bundle) == {mystnb.VEGALITE_MIME, "image/png", "text/plain"}
    png = base64.b64decode(bundle["image/png"])  # the chart as first drawn, for viewers without Vega
    assert png.startswith(b"\x89PNG") and struct.unpack(">II", png[16:24])[0] > 400  # width in pixels
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # not installed: no PNG (JupyterLab draws its own)
    assert shown.png() is None and set(shown._repr_mimebundle_()) == {mystnb.VEGALITE_MIME, "text/plain"}
    assert mystnb.VEGALITE_MIME == alt.vegalite.v5.display.VEGALITE_MIME_TYPE
    assert bundle[mystnb.VEGALITE_MIME]["$schema"].startswith("https://vega.github.io/schema/vega-lite/v5")
    assert bundle["text/plain"] == repr(shown) and "2 encoders" in repr(shown)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    html = shown._repr_mimebundle_()  # Colab: Altair's HTML (Colab reaches Vega on its CDN)
    assert "text/html" in (html[0] if isinstance(html, tuple) else html)


def test_the_book_renders_the_chart_from_its_own_scripts(folder):
    """The myst-nb plugin (registered in pyproject.toml) writes the spec into the page and adds the scripts that
    draw it from _static/, ahead of RequireJS."""
    assert "socm_lib.viz.mystnb:VegaLiteRenderer" in {e.value for e in entry_points(group="myst_nb.mime_renderers")}
    spec = Explorer(explorer.read_results(folder)).spec()
    added = []
    renderer = types.SimpleNamespace(add_js_file=lambda key, uri, kwargs: added.append((uri, kwargs["priority"])))
    data = types.SimpleNamespace(mime_type=mystnb.VEGALITE_MIME, content=spec)
    [node] = mystnb.VegaLiteRenderer.handle_mime(renderer, data, False)
    text = node.astext()
    assert node["format"] == "html" and text.startswith('<div class="vega-lite-chart"><script type="application/json">')
    inner = text.split(">", 2)[2].rsplit("</script>", 1)[0]
    assert "</" not in inner and json.loads(inner.replace("<\\/", "</")) == spec
    assert [uri for uri, _ in added] == list(mystnb.SCRIPTS) and {p for _, p in added} == {mystnb.PRIORITY}
    assert mystnb.PRIORITY < 500  # Sphinx's default priority, the widgets' RequireJS's
    assert mystnb.VegaLiteRenderer.handle_mime(renderer, types.SimpleNamespace(mime_type="text/html"), False) is None
    assert ("html", mystnb.VEGALITE_MIME, 5) in mystnb.VegaLiteRenderer.mime_priority_overrides
