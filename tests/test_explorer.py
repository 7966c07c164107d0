"""The explorer's library side: per-pair results (socm_lib.explorer), their files and folder, the Vega-Lite chart
(socm_lib.viz.explorer) and the book's renderer of it (socm_lib.viz.mystnb). The chart in the built page is tested
in tests/test_explorer_page.py."""

import base64
import json
import struct
import sys
import types
import unicodedata
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
    record["values"]["corpus"]["socm"][0] *= 1 + 1e-4  # float32 noise of another CPU: kept
    nudged = json.dumps(record)
    path.write_text(nudged)
    explorer.write_results(tmp_path, "untrained-minilm-l6", sets, device="cpu")
    assert path.read_text() == nudged
    record["values"]["corpus"]["socm"][0] *= 1.05  # a real change: rewritten
    path.write_text(json.dumps(record))
    explorer.write_results(tmp_path, "untrained-minilm-l6", sets, device="cpu")
    assert json.loads(path.read_text())["values"]["corpus"]["socm"][0] == round(
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
    with pytest.raises(FileNotFoundError, match="does not exist"):
        explorer.read_results(tmp_path / "missing")
    with pytest.raises(ValueError, match="holds no results files"):
        explorer.read_results(tmp_path)
    (tmp_path / "notes.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"notes.json: holds a JSON list, not an object"):
        explorer.read_results(tmp_path)
    (tmp_path / "notes.json").unlink()
    for path in folder.glob("*.json"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
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


# ------------------------------------------------------------------ the folder's schema, checked on reading


def _copy(folder, to):
    for path in folder.glob("*.json"):
        (to / path.name).write_bytes(path.read_bytes())
    return to


def _edit(path, change):
    record = json.loads(path.read_text(encoding="utf-8"))
    change(record)
    path.write_text(json.dumps(record), encoding="utf-8")


def _set_value(value):
    def change(record):
        record["values"]["corpus"]["socm"][0] = value
    return change


def _drop(*keys):
    def change(record):
        target = record
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]
    return change


def _set(value, *keys):
    def change(record):
        target = record
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


ENCODER_FILE = "untrained-minilm-l6.json"
BROKEN_FILES = [  # (file, how it is broken, what the refusal says after the file's name)
    (ENCODER_FILE, _set_value(None), r"values\['corpus'\]\.socm\[0\] is None, not a number"),
    (ENCODER_FILE, _set_value("0.5"), r"values\['corpus'\]\.socm\[0\] is '0.5', not a number"),
    (ENCODER_FILE, _set_value(True), r"values\['corpus'\]\.socm\[0\] is True, not a number"),
    (ENCODER_FILE, _drop("label"), r"the field 'label' is missing"),
    (ENCODER_FILE, _drop("values", "labelled"), r"the field 'values' holds the sets \['corpus'\]"),
    (ENCODER_FILE, _set([0.1], "values", "corpus", "socm"), r"values\['corpus'\]\.socm has 1 entries, but the set "
                                                             r"has 28 pairs"),
    (ENCODER_FILE, _set(2.0, "version"), r"the field 'version' must be a int"),
    (ENCODER_FILE, _set(3, "version"), r"schema version 3, but this library reads version 2"),
    (explorer.TEXT_SETS_FILE, _set([0.5, 1], "sets", 0, "pairs", 0), r"sets\[0\]\.pairs\[0\] is \[0\.5, 1\], not a "
                                                                      r"pair \[i, j\] of whole numbers"),
    (explorer.TEXT_SETS_FILE, _set([0, 99], "sets", 0, "pairs", 0), r"sets\[0\]: .*a pair indexes a text outside"),
    (explorer.TEXT_SETS_FILE, _set("abc", "sets", 0, "texts"), r"the field sets\[0\]\.'texts' must be a list"),
    (explorer.TEXT_SETS_FILE, _drop("sets", 1, "label"), r"the field sets\[1\]\.'label' is missing"),
    (explorer.TEXT_SETS_FILE, _set(["x"], "sets", 1, "pair_kinds"), r"sets\[1\]\.pair_kinds has 1 entries"),
]


@pytest.mark.parametrize("name, change, message", BROKEN_FILES)
def test_every_field_is_checked_on_reading_and_the_refusal_names_file_and_field(tmp_path, folder, name, change,
                                                                                 message):
    _edit(_copy(folder, tmp_path) / name, change)
    with pytest.raises(ValueError, match=f"{tmp_path / name}: {message}"):
        explorer.read_results(tmp_path)


@pytest.mark.parametrize("text, message", [("NaN", "NaN is not a number JSON allows"),
                                           ("Infinity", "Infinity is not a number JSON allows"),
                                           ("1e999", "1e999 is beyond the range of float64")])
def test_values_json_itself_would_not_allow_are_refused_not_averaged(tmp_path, folder, text, message):
    path = _copy(folder, tmp_path) / ENCODER_FILE
    raw = path.read_text(encoding="utf-8")
    head, tail = raw.split('"socm":[', 1)
    path.write_text(head + '"socm":[' + text + tail[tail.index(","):], encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}: not strict JSON .*{message}"):
        explorer.read_results(tmp_path)


def test_a_folder_or_a_broken_link_named_json_is_named_in_the_refusal(tmp_path, folder):
    _copy(folder, tmp_path)
    (tmp_path / "gte.json").mkdir()
    with pytest.raises(ValueError, match=f"{tmp_path / 'gte.json'} is a folder, not a results file"):
        explorer.read_results(tmp_path)
    (tmp_path / "gte.json").rmdir()
    (tmp_path / "bert.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(ValueError, match=f"{tmp_path / 'bert.json'} is a symbolic link to .*gone.json, which does "
                                         "not exist"):
        explorer.read_results(tmp_path)


def test_a_file_of_the_first_layout_is_named_as_such(tmp_path):
    (tmp_path / "bert.json").write_text(json.dumps({"format": 1, "encoder": "bert", "sets": {}}))
    with pytest.raises(ValueError, match=r"bert.json: a results file of the first layout \(format 1"):
        explorer.read_results(tmp_path)


def test_texts_and_pairs_are_written_once_and_each_key_has_one_meaning(folder, sets):
    texts = json.loads((folder / explorer.TEXT_SETS_FILE).read_text(encoding="utf-8"))
    assert texts["schema"] == explorer.SETS_SCHEMA and texts["version"] == explorer.VERSION
    assert [s["name"] for s in texts["sets"]] == ["corpus", "labelled"]
    assert texts["sets"][1]["pair_kinds"] == list(sets[1].kinds) and texts["sets"][1]["pairs"] == sets[1].pairs.tolist()
    for name in ENCODERS:
        record = json.loads(explorer.results_path(folder, name).read_text(encoding="utf-8"))
        assert set(record) == {"schema", "version", "text_sets", "encoder", "label", "encoder_kind", "provenance",
                               "decimals", "values"}  # no texts, no pairs, no "kind"
        assert record["text_sets"] == explorer.fingerprint(sets)
        assert set(record["values"]["corpus"]) == set(explorer.MEASURES)
    assert explorer.read_results(folder).encoders["untrained-minilm-l6"]["kind"] == "control"


# ------------------------------------------------------------------ writing: atomic, and never a mixed folder


def test_a_full_disk_during_a_rewrite_keeps_the_earlier_file_whole(tmp_path, folder, sets):
    """The data loss of issue 42: the file was rewritten in place, so a full disk left a truncated file."""
    import resource
    import signal

    path = _copy(folder, tmp_path) / ENCODER_FILE
    _edit(path, _set_value(0.9))  # a value the new run will not keep: the file is rewritten
    before = path.read_bytes()
    limits, handler = resource.getrlimit(resource.RLIMIT_FSIZE), signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) // 2, limits[1]))  # the disk fills halfway
    try:
        with pytest.raises(OSError, match=f"results file {path}: could not be written .*earlier file there is "
                                          "unchanged"):
            explorer.write_results(tmp_path, "untrained-minilm-l6", sets, device="cpu")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in folder.glob("*.json"))  # no .part


def test_a_run_on_other_texts_is_refused_before_computing_or_replaces_the_whole_set(tmp_path, folder, sets,
                                                                                    monkeypatch):
    """Notebook 4 run with another N_TEXTS: the folder is checked first, and never left with files of two runs."""
    _copy(folder, tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    other = [explorer.sample_set(source_texts("corpus", 6, 4)), sets[1]]
    computed = []
    real = explorer.pair_results
    monkeypatch.setattr(explorer, "pair_results", lambda *a, **k: computed.append(a) or real(*a, **k))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ValueError, match=r"holds results of other text sets \(all-minilm-l6.json, text-sets.json, "
                                         r"untrained-minilm-l6.json\); nothing was computed or written.*replace=True"):
        explorer.write_results(tmp_path, "untrained-minilm-l6", other, device="cpu")
    assert computed == [] and {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    with pytest.warns(UserWarning, match="removed all-minilm-l6.json, text-sets.json, untrained-minilm-l6.json"):
        explorer.write_results(tmp_path, "untrained-minilm-l6", other, device="cpu", replace=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "text-sets.json", "untrained-minilm-l6.json"]
    results = explorer.read_results(tmp_path)
    assert list(results.encoders) == ["untrained-minilm-l6"] and len(results.sets["corpus"]) == 15
    explorer.write_results(tmp_path, "all-minilm-l6", other, device="cpu")  # the same run: joins it, no warning
    assert list(explorer.read_results(tmp_path).encoders) == list(ENCODERS)


def test_a_file_of_another_run_dropped_into_a_folder_is_refused_naming_both_files(tmp_path, folder, sets):
    _copy(folder, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = [explorer.sample_set(source_texts("corpus", 6, 4)), sets[1]]
    explorer.write_results(elsewhere, "untrained-minilm-l6", other, device="cpu")
    (tmp_path / "bert.json").write_bytes((elsewhere / ENCODER_FILE).read_bytes().replace(
        b'"encoder":"untrained-minilm-l6"', b'"encoder":"bert"'))
    with pytest.raises(ValueError, match=f"{tmp_path / 'bert.json'} was measured on other text sets than the "
                                         f"folder's {explorer.TEXT_SETS_FILE} holds .*mixes two runs"):
        explorer.read_results(tmp_path)


def test_texts_are_one_text_whatever_their_unicode_spelling():
    nfc, nfd = "Un café à Zürich.", unicodedata.normalize("NFD", "Un café à Zürich.")
    assert nfc != nfd
    with pytest.raises(ValueError, match="1 repeated text"):
        explorer.sample_set([nfc, "Another text.", nfd])
    a, b = explorer.sample_set([nfc, "Another text."]), explorer.sample_set([nfd, "Another\u00a0text."])
    assert a.same_as(b) and explorer.fingerprint([a]) == explorer.fingerprint([b])
