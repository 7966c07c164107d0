"""What the library cannot do right, it refuses: a clear error (type and message naming the option, file, line or
cloud) or the right answer, never a silent wrong one; no work lost; every command-line error before a model loads."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import torch

import socm_lib
import socm_lib.cli
from socm_lib import authors_route, block_plan, checks, data, encoders, gpu_check, memory, protocol, stats
from socm_lib.extract import token_embeddings

RNG = np.random.default_rng(27)
CLOUDS = [RNG.normal(size=(n, 8)) + 1.0 for n in (4, 6, 5, 7)]


@pytest.fixture(scope="module")
def encoder():
    return socm_lib.load_encoder("all-minilm-l6", device="cpu")


# --------------------------------------------------------------------------- on/off options are real bools
BAD_BOOLS = ["False", "no", None, 0, 1.0]


@pytest.mark.parametrize("value", BAD_BOOLS, ids=repr)
@pytest.mark.parametrize("option,call", [
    ("normalize", lambda v: socm_lib.socm(CLOUDS[0], CLOUDS[1], normalize=v)),
    ("normalize", lambda v: socm_lib.socm_pairs(CLOUDS, normalize=v, device="cpu")),
    ("normalize", lambda v: socm_lib.socm_summary(CLOUDS, normalize=v, device="cpu")),
    ("normalize", lambda v: socm_lib.socm_cross(CLOUDS[:2], CLOUDS[2:], normalize=v, device="cpu")),
    ("aligned", lambda v: socm_lib.socm_cross(CLOUDS[:2], CLOUDS[2:], aligned=v)),
    ("aligned", lambda v: socm_lib.cross_pairs(2, 2, aligned=v)),
    ("trust_remote_code", lambda v: socm_lib.load_encoder("nomic-embed", trust_remote_code=v)),
    ("drop_unterminated_last", lambda v: data.read_lines(__file__, drop_unterminated_last=v)),
], ids=["socm", "socm_pairs", "socm_summary", "socm_cross", "socm_cross-aligned", "cross_pairs", "load_encoder",
        "read_lines"])
def test_on_off_options_must_be_bools(option, call, value):
    # before: "False", "no" and 1.0 counted as true (normalize="no" normalised; trust_remote_code="False" passed
    # the remote-code guard), None and 0 as false
    with pytest.raises(TypeError, match=f"{option} must be True or False, got {value!r}"):
        call(value)


@pytest.mark.parametrize("option", ["special_tokens", "half", "cache"])
def test_extraction_switches_must_be_bools(encoder, option):
    with pytest.raises(TypeError, match=f"{option} must be True or False, got 'no'"):
        token_embeddings(encoder, ["A sentence."], **{option: "no"})
    with pytest.raises(TypeError, match="special_tokens must be True or False"):
        protocol.measure(encoder, ["One.", "Two."], special_tokens="no")


def test_numpy_bools_are_bools():
    assert checks.as_bool(np.bool_(False), "x") is False
    assert socm_lib.socm(CLOUDS[0], CLOUDS[1], normalize=np.True_) == socm_lib.socm(CLOUDS[0], CLOUDS[1])


# --------------------------------------------------------------------------- arrays the library cannot read
def test_masked_array_is_refused_not_its_mask_ignored():
    X = np.ma.masked_array(np.vstack([CLOUDS[0], np.full((1, 8), 1e3)]), mask=False)
    X.mask[-1] = True  # an outlier row, masked: ignoring the mask would measure it
    with pytest.raises(TypeError, match=r"X1 is a numpy masked array.*mask.*data\[~X1.mask.any\(axis=1\)\]"):
        socm_lib.socm(X, CLOUDS[1])
    with pytest.raises(TypeError, match=r"clouds\[0\] is a numpy masked array"):
        socm_lib.socm_pairs([X, CLOUDS[1]])


def test_sparse_meta_and_long_double_clouds_are_refused_with_what_to_pass():
    dense = torch.as_tensor(CLOUDS[0])
    with pytest.raises(TypeError, match=r"sparse tensor.*to_dense\(\)"):
        socm_lib.socm(dense.to_sparse(), CLOUDS[1])
    with pytest.raises(ValueError, match="'meta' device: it has a shape but no values"):
        socm_lib.socm(torch.empty((4, 8), device="meta"), CLOUDS[1])
    if np.finfo(np.longdouble).bits > 64:
        with pytest.raises(TypeError, match=r"long double.*astype\(np.float64\)"):
            socm_lib.socm(CLOUDS[0].astype(np.longdouble), CLOUDS[1])


# --------------------------------------------------------------------------- texts, truncation, revisions, dtype
@pytest.mark.parametrize("texts", [{"b text", "a text"}, frozenset({"a text"}), {"k": "a text"}], ids=repr)
def test_unordered_containers_of_texts_are_refused(encoder, texts):
    with pytest.raises(TypeError, match="no fixed order"):
        token_embeddings(encoder, texts)


def test_max_length_keeps_a_token_of_the_text(encoder):
    text = ["A rather long sentence about cats and dogs."]
    for bad in (1, 2):  # before: 1 returned the whole cloud under a "truncated to 1" warning, 2 the specials only
        with pytest.raises(ValueError, match=rf"max_length = {bad} is outside 3 <= max_length <= 512"):
            token_embeddings(encoder, text, max_length=bad)
    with pytest.warns(UserWarning, match="truncated"):
        X = token_embeddings(encoder, text, max_length=3)[0]
    full = token_embeddings(encoder, text)[0]
    assert X.shape == (3, 384) and full.shape[0] > 3


def test_revision_must_be_a_string_and_local_encoders_have_none():
    with pytest.raises(TypeError, match=r"revision must be .* string .*got 123 \(int\)"):
        socm_lib.load_encoder("all-minilm-l6", revision=123)
    with pytest.raises(ValueError, match="read from local files, which have no revisions"):
        socm_lib.load_encoder("all-minilm-l6", revision="main", device="cpu")


def test_float64_encoder_gives_float64_clouds():
    enc = socm_lib.load_encoder("untrained-minilm-l6", device="cpu", dtype="float64")
    X = token_embeddings(enc, ["A short text."])[0]
    assert X.dtype == np.float64  # before: float32, although float64 was asked for


# --------------------------------------------------------------------------- readers
def _write(tmp_path, name, content: bytes):
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_line_endings_and_byte_order_marks(tmp_path):
    assert data.read_lines(_write(tmp_path, "cr.txt", b"one\rtwo\rthree\r")) == ["one", "two", "three"]
    assert data.read_lines(_write(tmp_path, "crlf.txt", b"one\r\ntwo\r\n")) == ["one", "two"]
    joined = "\ufefffirst\n\ufeffsecond from a second file\n".encode()
    assert data.read_lines(_write(tmp_path, "bom.txt", joined)) == ["first", "second from a second file"]
    cut = _write(tmp_path, "cut.txt", b"one\rtwo")
    assert data.read_lines(cut, drop_unterminated_last=True) == ["one"]


def test_msmarco_line_without_tab_names_file_and_line(tmp_path):
    path = _write(tmp_path, "collection.tsv", b"0\tA passage.\n1 no tab here\n2\tAnother.\n")
    with pytest.raises(ValueError, match=r"collection.tsv, line 2: no tab"):
        data.read_msmarco_passages(path)
    ok = _write(tmp_path, "ok.tsv", b"0\tA passage.\r1\tAnother.\r")
    assert data.read_msmarco_passages(ok) == ["A passage.", "Another."]


STSB_ROW = "main-captions\tMSRvid\t2012test\t0001\t{score}\tA plane is taking off.\tAn air plane is taking off.\n"


def test_stsb_bad_rows_name_file_and_line(tmp_path):
    good = STSB_ROW.format(score="5.000")
    path = _write(tmp_path, "sts.csv", (good + STSB_ROW.format(score="n/a")).encode())
    with pytest.raises(ValueError, match=r"sts.csv, line 2: the score 'n/a' is not a number"):
        data.read_stsb(path)
    short = _write(tmp_path, "short.csv", (good + "a\tb\tc\n").encode())
    with pytest.raises(ValueError, match=r"short.csv, line 2: 3 tab-separated field"):
        data.read_stsb(short)
    assert data.read_stsb(_write(tmp_path, "fine.csv", (good * 2).encode()))["score"].tolist() == [5.0, 5.0]


SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"


def test_sick_bad_rows_name_file_and_line(tmp_path):
    good = "1\tA dog runs.\tA dog is running.\t4.5\tENTAILMENT\n"
    path = _write(tmp_path, "SICK.txt", (SICK_HEADER + good + "2\tA.\tB.\thigh\tNEUTRAL\n").encode())
    with pytest.raises(ValueError, match=r"SICK.txt, line 3: the relatedness score 'high' is not a number"):
        data.read_sick(path)
    ragged = _write(tmp_path, "ragged.txt", (SICK_HEADER + "2\tA.\tB.\n").encode())
    with pytest.raises(ValueError, match=r"ragged.txt, line 2: 3 tab-separated field\(s\), but the header has 5"):
        data.read_sick(ragged)
    df = data.read_sick(_write(tmp_path, "ok.txt", (SICK_HEADER + good).encode()))
    assert df.to_dict("records") == [{"pair_id": "1", "sentence_a": "A dog runs.", "sentence_b": "A dog is running.",
                                      "relatedness": 4.5, "entailment": "ENTAILMENT"}]


def test_all_pairs_checks_its_count():
    with pytest.raises(ValueError, match="n_texts = -1 is outside 0 <= n_texts"):
        socm_lib.all_pairs(-1)  # before: an empty array
    with pytest.raises(TypeError, match="n_texts must be an integer, got 1.5"):
        socm_lib.all_pairs(1.5)  # before: one pair
    assert socm_lib.all_pairs(1).shape == (0, 2)


def test_condensed_pairs_agree_with_all_pairs_at_row_boundaries():
    n = 70_001  # large enough for the floating-point row estimate to need its correction somewhere
    starts = np.arange(n - 1) * n - np.arange(n - 1) * np.arange(1, n) // 2
    positions = np.unique(np.concatenate([starts, starts - 1, starts + 1]).clip(0, n * (n - 1) // 2 - 1))
    got = block_plan.condensed_pairs(positions, n)
    i = np.searchsorted(starts, positions, side="right") - 1  # the slow, obvious row lookup
    np.testing.assert_array_equal(got, np.stack([i, positions - starts[i] + i + 1], axis=1))


# --------------------------------------------------------------------------- means that vanish, extreme clouds
def _centred(n=12, d=8):
    X = np.random.default_rng(5).normal(size=(n, d)) * 4 / np.sqrt(d)
    return X - X.mean(axis=0)  # a mean of round-off size, about 1e-16 of the tokens' norm


def test_a_mean_that_vanishes_beside_its_tokens_is_refused_with_the_reason():
    X = _centred()
    assert 0 < np.linalg.norm(X.mean(axis=0)) < 1e-14  # not exactly zero: before, SOCM came out near 1e31
    reason = "mean whose norm is .* of its tokens' RMS norm .*cancel out"
    with pytest.raises(ValueError, match=rf"X1 has a {reason}"):
        socm_lib.socm(X, CLOUDS[0][:, :8])
    with pytest.raises(ValueError, match=rf"clouds\[1\] has a {reason}"):
        socm_lib.socm_pairs([CLOUDS[0], X])
    with pytest.raises(ValueError, match=rf"clouds\[1\] has a {reason}"):
        socm_lib.paper_route([CLOUDS[0], X])
    with pytest.raises(ValueError, match=reason):
        socm_lib.concentration_ratio(X)
    small = X + 1e-4 * np.linalg.norm(X, axis=1).mean()  # a small mean, far above the threshold, is measured
    assert np.isfinite(socm_lib.socm(small, CLOUDS[0]).socm)
    assert np.isfinite(socm_lib.socm(X, CLOUDS[0], normalize=False).socm)  # without normalisation: no division


@pytest.mark.parametrize("scale", [1e-310, 1e300], ids=["subnormal", "huge"])
def test_extreme_finite_clouds_give_the_scale_free_answer(scale):
    clouds = [RNG.normal(size=(n, 8)) + 1.0 for n in (200, 9, 14)]
    want = socm_lib.socm_pairs(clouds)
    tol = 1e-9 if scale < 1 else 1e-12  # subnormals carry about 13 digits
    scaled = [c * scale for c in clouds]  # before: "SVD did not converge"
    got = socm_lib.socm_pairs(scaled)
    np.testing.assert_allclose(got.socm, want.socm, rtol=tol)
    s = socm_lib.socm_summary(scaled)
    assert s.mean_socm == pytest.approx(want.summary()["mean_socm"], rel=tol)
    one = socm_lib.socm(scaled[0], scaled[1])
    assert one.socm == pytest.approx(want[0].socm, rel=tol)
    c = socm_lib.concentration_ratio(scaled[0])  # before: ZeroDivisionError for subnormal clouds
    assert c == pytest.approx(socm_lib.concentration_ratio(clouds[0]), rel=tol)


def test_sums_that_overflow_are_formed_from_the_rescaled_cloud():
    big = np.full((200, 4), 1e307) * (1 + 0.1 * RNG.random((200, 4)))  # the column sums overflow float64
    with np.errstate(over="ignore"):
        assert not np.isfinite(big.sum(axis=0)).all()
    want = socm_lib.socm(big / 1e307, CLOUDS[0][:, :4])
    got = socm_lib.socm(big, CLOUDS[0][:, :4])
    assert got.socm == pytest.approx(want.socm, rel=1e-12)


def test_a_result_that_overflows_without_normalisation_is_refused_naming_the_cloud():
    clouds = [c[:, :8] for c in CLOUDS]
    huge = [c * 1e200 for c in clouds]  # before: inf with a RuntimeWarning
    with pytest.raises(ValueError, match="X1 is too large for normalize=False"):
        socm_lib.socm(huge[0], huge[1], normalize=False)
    with pytest.raises(ValueError, match=r"clouds\[0\] is too large for normalize=False"):
        socm_lib.socm_pairs(huge, normalize=False)
    with pytest.raises(ValueError, match=r"clouds\[0\] is too large for normalize=False"):
        socm_lib.socm_summary(huge, normalize=False)
    # finite factors whose pair overflows: named by the pair
    edge = [c * 1e153 for c in clouds]
    with pytest.raises(ValueError, match=r"The pair \(clouds\[\d\], clouds\[\d\]\) gives a non-finite SOCM"):
        socm_lib.socm_pairs(edge, normalize=False)


# --------------------------------------------------------------------------- results, names, memory
def test_pair_result_slices_give_pair_results():
    result = socm_lib.socm_pairs(CLOUDS)
    head = result[0:2]  # before: "only 0-dimensional arrays can be converted to Python scalars"
    assert isinstance(head, socm_lib.PairResult) and len(head) == 2
    np.testing.assert_array_equal(head.socm, result.socm[:2])
    np.testing.assert_array_equal(head.i, result.i[:2])
    picked = result[result.socm > np.median(result.socm)]
    assert len(picked) == 3 and (picked.socm > np.median(result.socm)).all()
    assert result[-1] == socm_lib.SOCMResult(result.d_mu[-1], result.d_sigma[-1], result.socm[-1])
    assert result[np.int64(1)].socm == result.socm[1]


def test_socm_cross_errors_name_socm_cross(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    with pytest.raises(MemoryError, match=r"^socm_cross of 4 pairs.*pairs=\(P, 2\) array\) to socm_cross"):
        socm_lib.socm_cross(CLOUDS[:2], CLOUDS[2:])
    monkeypatch.undo()
    with pytest.raises(TypeError, match=r"socm_cross got unknown option\(s\) \['normalise'\]"):
        socm_lib.socm_cross(CLOUDS[:2], CLOUDS[2:], normalise=True)
    centred = CLOUDS[3] - CLOUDS[3].mean(axis=0)
    with pytest.raises(ValueError, match=r"clouds_b\[1\] has a mean whose norm"):  # before: clouds[3]
        socm_lib.socm_cross(CLOUDS[:2], [CLOUDS[2], centred])


def test_paper_route_checks_memory_from_the_pair_count_before_forming_pairs(monkeypatch):
    def formed(*args):
        raise AssertionError("pairs were formed before the memory check")

    clouds = [np.ones((2, 2)) + np.eye(2) * k for k in range(1, 25_001)]
    monkeypatch.setattr(authors_route, "condensed_pairs", formed)
    monkeypatch.setattr(np, "triu_indices", formed)
    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)
    with pytest.raises(MemoryError, match=r"312,487,500 pairs would need about 11\.6 GiB"):
        socm_lib.paper_route(clouds)


def test_paper_route_walks_all_pairs_in_batches_as_listed_pairs():
    clouds = [c[:, :8] for c in CLOUDS] + [RNG.normal(size=(5, 8)) + 1]
    walked = socm_lib.paper_route(clouds, batch_size=3)
    listed = socm_lib.paper_route(clouds, socm_lib.all_pairs(len(clouds)), batch_size=3)
    for field in ("i", "j", "d_mu", "d_sigma", "socm"):
        np.testing.assert_array_equal(getattr(walked, field), getattr(listed, field))


# --------------------------------------------------------------------------- paths that are not models
def test_load_encoder_says_what_a_path_is_and_what_is_missing(tmp_path):
    with pytest.raises(socm_lib.ModelUnavailableError, match="/etc/hostname is a file, not a model folder"):
        socm_lib.load_encoder("/etc/hostname" if os.path.exists("/etc/hostname") else __file__)
    missing = tmp_path / "nowhere" / "model"
    with pytest.raises(socm_lib.ModelUnavailableError, match=f"There is no folder {missing}"):
        socm_lib.load_encoder(str(missing))
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(socm_lib.ModelUnavailableError,
                       match=r"is not a model folder: it has no config.json; no weights .*; no tokenizer files.*"
                             r"It holds: notes.txt"):
        socm_lib.load_encoder(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(socm_lib.ModelUnavailableError, match=r"it has no tokenizer files \(tokenizer.json"):
        socm_lib.load_encoder(str(tmp_path))


# --------------------------------------------------------------------------- the command line, before any model
@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the inputs were checked")

    monkeypatch.setattr(socm_lib.cli, "load_encoder", refuse)
    monkeypatch.setattr(encoders, "load_encoder", refuse)  # what gpu_check loads through


def _cli(capsys, *argv):
    code = socm_lib.cli.main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("lines,message", [
    ("Only one text here.\n", r"1 distinct text\(s\) found, but a pair needs two"),
    ("Twice.\nTwice.\n", r"repeated text\(s\) dropped(.|\n)*1 distinct text\(s\) found"),
])
def test_run_refuses_too_few_texts_before_the_model(tmp_path, capsys, no_model, lines, message):
    path = tmp_path / "texts.txt"
    path.write_text(lines)
    code, err = _cli(capsys, "run", "--texts", str(path))
    assert code == 2 and __import__("re").search(message, err), err


@pytest.mark.parametrize("argv,message", [
    (["--batch-size", "0"], "--batch-size = 0 is outside 1 <= --batch-size"),
    (["--layer", "99"], "--layer 99: layer 99 is out of range: this encoder has 6 layers"),
    (["--layer", "-8"], "--layer -8: layer -8 is out of range"),
    (["--sample", "1"], "--sample 1: a pair needs two texts"),
    (["--sample", "-3"], "--sample = -3 is outside 0 <= --sample"),
    (["--seed", "-1"], "--seed = -1 is outside 0 <= --seed"),
    (["--pairs", "labelled", "--texts", "corpus"], "--pairs labelled .* so --texts would be ignored"),
    (["--pairs", "labelled", "--sample", "50"], "--pairs labelled .* so --sample would be ignored"),
    (["--out", "/nonexistent/x.csv"], "--out /nonexistent/x.csv: the folder /nonexistent does not exist"),
    (["--device", "tpu"], "--device='tpu'"),
], ids=["batch-size", "layer", "negative-layer", "sample-1", "sample-negative", "seed", "labelled-texts", "labelled-sample",
        "out-folder", "device"])
def test_run_checks_every_option_before_the_model(capsys, no_model, argv, message):
    code, err = _cli(capsys, "run", *argv)
    assert code == 2 and __import__("re").search(message, err), err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_run_finds_an_unwritable_out_before_the_model(capsys, no_model):
    code, err = _cli(capsys, "run", "--sample", "20", "--out", "/dev/full")
    assert code == 2 and "--out /dev/full: cannot write there (No space left on device)" in err


def test_repeated_lines_are_dropped_and_said(tmp_path, capsys, no_model):
    path = tmp_path / "texts.txt"
    path.write_text("One.\nTwo.\nOne.\nThree.\nTwo.\n")
    with pytest.raises(AssertionError, match="a model was loaded"):  # the inputs were accepted
        socm_lib.cli.main(["run", "--texts", str(path), "--sample", "0"])
    assert "2 repeated text(s) dropped, 3 distinct kept" in capsys.readouterr().err


def test_a_failed_run_keeps_the_earlier_out_file(tmp_path, capsys, monkeypatch):
    def unavailable(*args, **kwargs):
        raise socm_lib.ModelUnavailableError("no model here")

    monkeypatch.setattr(socm_lib.cli, "load_encoder", unavailable)
    out = tmp_path / "pairs.csv"
    out.write_text("earlier results\n")
    code, err = _cli(capsys, "run", "--sample", "20", "--out", str(out))
    assert code == 2 and "no model here" in err
    assert out.read_text() == "earlier results\n" and sorted(p.name for p in tmp_path.iterdir()) == ["pairs.csv"]


@pytest.mark.parametrize("argv,message", [
    (["--n-texts", "5000"], "n_texts = 5000 is outside 2 <= n_texts <= 1080"),
    (["--n-texts", "1"], "n_texts = 1 is outside 2 <= n_texts"),
    (["--out", "/nonexistent/x.json"], "--out /nonexistent/x.json: the folder /nonexistent does not exist"),
], ids=["too-many-texts", "one-text", "out-folder"])
def test_gpu_check_checks_every_option_before_the_model(capsys, no_model, argv, message):
    code, err = _cli(capsys, "gpu-check", *argv)
    assert code == 2 and message in err, err


def test_gpu_check_report_is_written_only_when_complete(tmp_path, capsys, monkeypatch):
    def unavailable(*args, **kwargs):
        raise socm_lib.ModelUnavailableError("no model here")

    monkeypatch.setattr(encoders, "load_encoder", unavailable)
    out = tmp_path / "check.json"
    out.write_text('{"earlier": true}\n')
    code, _ = _cli(capsys, "gpu-check", "--n-texts", "4", "--out", str(out))
    assert code == 2 and out.read_text() == '{"earlier": true}\n'


def test_layer_count_reads_the_configuration_only():
    assert encoders.layer_count("all-minilm-l6") == 6
    assert encoders.layer_count("untrained-minilm-l6") == 6
    assert encoders.layer_count("multilingual-e5-small-4bit") == 12
    assert encoders.layer_count("/nonexistent/model") is None


def test_labelled_pair_kinds_are_a_list():
    with pytest.raises(TypeError, match=r"kinds is a single string; pass a list of kinds, e.g. \['negation'\]"):
        data.labelled_pairs("negation")  # before: read as the letters n, e, g, ...
    assert set(data.labelled_pairs(["negation"])["kind"]) == {"negation"}


# --------------------------------------------------------------------------- options with upper bounds
# General cause: an option checked only from below let a value past any machine through, to overflow an integer
# deep in the block plan, ask numpy for petabytes, or be reported as missing memory.
@pytest.mark.parametrize("call", [
    lambda: socm_lib.socm_summary(CLOUDS, block_elems=10**30, progress=False),  # before: OverflowError in the plan
    lambda: socm_lib.socm_pairs(CLOUDS, block_elems=10**30, progress=False),  # before: "would need 8.9e22 GiB"
    lambda: socm_lib.socm_cross(CLOUDS[:2], CLOUDS[2:], block_elems=2**40, progress=False),
], ids=["socm_summary", "socm_pairs", "socm_cross"])
def test_block_elems_past_any_machine_blames_block_elems(call):
    with pytest.raises(ValueError, match=r"block_elems = \d+ is outside 1 <= block_elems <= 68719476736\. It bounds "
                                         r"the cross-Gram entries one worker holds"):
        call()


def test_block_elems_at_its_bound_is_accepted():
    want = socm_lib.socm_pairs(CLOUDS, progress=False)
    got = socm_lib.socm_summary(CLOUDS, block_elems=socm_lib.memory.MAX_BLOCK_ELEMS, progress=False)
    assert got.mean_socm == pytest.approx(want.summary()["mean_socm"], rel=1e-12)


def test_summary_bins_are_bounded():
    with pytest.raises(ValueError, match=r"bins = 1125899906842624 is outside 1 <= bins <= 1048576\. A histogram"):
        socm_lib.socm_summary(CLOUDS, bins=2**50)  # before: numpy's MemoryError for 8 PiB


def test_paper_route_eps_is_bounded_and_batch_size_counts_only_real_pairs():
    with pytest.raises(ValueError, match=r"eps = 1e\+300 is outside 0.0 <= eps <= 1.0\. It is the regulariser"):
        socm_lib.paper_route(CLOUDS, eps=1e300)  # before: eigh failed to converge
    # a batch larger than the pairs holds only the pairs: before, the memory check blamed 10**30 pairs per batch
    big = socm_lib.paper_route(CLOUDS, batch_size=10**30)
    np.testing.assert_array_equal(big.socm, socm_lib.paper_route(CLOUDS).socm)


# --------------------------------------------------------------------------- inputs converted or refused at the door
@pytest.mark.parametrize("dtype", [">f8", ">f4", "<f8"])
def test_other_byte_order_is_converted(dtype):
    # before: torch's "byte order different from the native byte order" from socm, socm_pairs, socm_cross, paper_route
    B = [c.astype(dtype) for c in CLOUDS]
    native = [c.astype(dtype.replace(">", "=").replace("<", "=")) for c in CLOUDS]
    assert socm_lib.socm(B[0], B[1]) == socm_lib.socm(native[0], native[1])
    np.testing.assert_array_equal(socm_lib.socm_pairs(B).socm, socm_lib.socm_pairs(native).socm)
    np.testing.assert_array_equal(socm_lib.socm_cross(B[:2], B[2:]).socm,
                                  socm_lib.socm_cross(native[:2], native[2:]).socm)
    np.testing.assert_array_equal(socm_lib.paper_route(B).socm, socm_lib.paper_route(native).socm)


def test_quantized_and_nested_tensors_are_refused_with_what_to_pass():
    import warnings

    x = torch.as_tensor(CLOUDS[0], dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's notes that quantized and nested tensors are deprecated / prototype
        quantized = torch.quantize_per_tensor(x, 0.05, 0, torch.qint8)
        nested = torch.nested.nested_tensor([torch.as_tensor(c) for c in CLOUDS])
    with pytest.raises(TypeError, match=r"X1 is a quantized tensor \(torch.qint8\).*pass X1.dequantize\(\)"):
        socm_lib.socm(quantized, CLOUDS[1])  # before: a RuntimeError from deep inside torch
    assert socm_lib.socm(quantized.dequantize(), CLOUDS[1]).socm > 0
    with pytest.raises(TypeError, match=r"clouds is a nested tensor; pass its clouds as a list .* clouds.unbind\(\)"):
        socm_lib.socm_pairs(nested)  # before: "NestedTensorImpl doesn't support sizes. Please file an issue."
    with pytest.raises(TypeError, match=r"clouds\[1\] is a nested tensor.*clouds\[1\].unbind\(\)"):
        socm_lib.socm_pairs([CLOUDS[0], nested])
    assert len(socm_lib.socm_pairs(list(nested.unbind()))) == 6


def test_read_lines_takes_paths_and_refuses_other_types(tmp_path):
    path = _write(tmp_path, "t.txt", b"one\ntwo\n")
    assert data.read_lines(os.fsencode(path)) == data.read_lines(path) == data.read_lines(str(path)) == ["one", "two"]
    for bad in (None, 123):  # before: pathlib's "expected str, bytes or os.PathLike object"
        with pytest.raises(TypeError, match=rf"Text file: the path must be a str or a pathlib.Path, got {bad!r}"):
            data.read_lines(bad)


def test_a_symbolic_link_loop_is_named_as_one(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError, match=r"Text file .*a is a symbolic link loop") as info:
        data.read_lines(tmp_path / "a")  # before: "Text file not found at ..."
    assert not isinstance(info.value, FileNotFoundError)
    (tmp_path / "dangling").symlink_to(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError, match=r"dangling is a symbolic link to .*missing.txt, which does not exist"):
        data.read_sick(tmp_path / "dangling")
    with pytest.raises(FileNotFoundError, match=r"STS-B file not found at"):
        data.read_stsb(tmp_path / "nothing.csv")


INVISIBLE = ["\u200b", "\x00", "\x01\x02\x7f", "\ufeff\u200d", " \u2028 "]


@pytest.mark.parametrize("text", INVISIBLE + ["   ", ""], ids=ascii)
def test_texts_without_a_visible_character_are_refused_like_blank_ones(encoder, text):
    # before: "\u200b", "\x00" and "\x01\x02\x7f" were measured as clouds of special tokens only
    with pytest.raises(ValueError, match=r"texts\[0\] is empty or whitespace only \(no visible character"):
        token_embeddings(encoder, [text, "x"])
    assert checks.has_visible_character("a\u200b") and checks.has_visible_character("\ue000")  # private use: shown


@pytest.mark.parametrize("text", INVISIBLE[:-1], ids=ascii)  # the last is whitespace: a blank line, skipped
def test_read_lines_names_a_line_without_a_visible_character(tmp_path, text):
    path = _write(tmp_path, "t.txt", f"fine\n{text}x\n{text}\nmore\n".encode("utf-8"))
    with pytest.raises(ValueError, match=r"t.txt, line 3: no visible character"):
        data.read_lines(path)


def test_a_lone_surrogate_is_refused_not_repaired(encoder):
    # refused rather than repaired: any repair (U+FFFD, dropping it) would change the text that is measured
    with pytest.raises(ValueError, match=r"texts\[1\] holds a lone surrogate, U\+D800 at character 1: .*Repair"):
        token_embeddings(encoder, ["fine", "a\ud800b"])  # before: the tokenizer's TypeError
    with pytest.raises(ValueError, match=r"U\+DE00 at character 3"):
        checks.as_texts(["ok \ude00"])


def test_an_empty_layer_list_is_refused(encoder):
    with pytest.raises(ValueError, match=r"layer is an empty list: there is no hidden state to return; .*\(0\.\.6"):
        token_embeddings(encoder, ["A sentence."], layer=[])  # before: IndexError in extract.py


def test_labelled_pair_kinds_must_be_a_collection():
    with pytest.raises(TypeError, match=r"kinds must be None or a list of kinds such as \['negation'\], got 5"):
        data.labelled_pairs(kinds=5)  # before: "'int' object is not iterable"
    # a generator is read once (before: used up by the check, it selected no pair at all)
    from_generator = data.labelled_pairs(kinds=(k for k in ["negation"]))
    assert len(from_generator) == len(data.labelled_pairs(["negation"])) > 0


def test_encoder_names_are_exact_and_a_wrong_case_gets_a_hint():
    with pytest.raises(ValueError, match=r"Unknown encoder 'ALL-MINILM-L6'\. Registry names are lower case and "
                                         r"spelled exactly: did you mean 'all-minilm-l6'\?"):
        socm_lib.load_encoder("ALL-MINILM-L6")
    with pytest.raises(ValueError, match=r"Unknown encoder 'no-such-model'\. Use a registry name"):
        socm_lib.load_encoder("no-such-model")


# --------------------------------------------------------------------------- PairResult: indices and empty results
@pytest.mark.parametrize("index", ["socm", 1.0, True, np.True_, (0, 1), None, np.array([0.5]),
                                   np.ones((1, 6), dtype=bool)], ids=repr)
def test_pair_result_refuses_indices_it_cannot_mean(index):
    result = socm_lib.socm_pairs(CLOUDS, progress=False)
    # before: "socm" and 1.0 gave numpy's IndexError; True broadcast every array into shape (1, 6)
    with pytest.raises(TypeError, match=r"index a PairResult by an integer \(one pair\), a slice, a boolean mask"):
        result[index]


def test_pair_result_indices_that_work():
    result = socm_lib.socm_pairs(CLOUDS, progress=False)
    assert result[np.array(2)] == result[2]
    assert len(result[[]]) == 0 and len(result[[0, 5]]) == 2 and len(result[list(result.socm > 0)]) == 6
    with pytest.raises(IndexError, match="the boolean mask has 2 entries, but the PairResult holds 6 pairs"):
        result[[True, False]]


def test_summary_of_no_pairs_says_so():
    result = socm_lib.socm_pairs(CLOUDS, progress=False)
    # before: every figure NaN, with numpy's "Mean of empty slice" warnings
    with pytest.raises(ValueError, match=r"This PairResult holds no pairs \(a selection that kept none\?\)"):
        result[result.socm > 99].summary()


# --------------------------------------------------------------------------- readers keep their promises
def test_sick_header_with_a_repeated_column_is_refused(tmp_path):
    header = SICK_HEADER.replace("\tentailment_judgment", "\tpair_ID")
    path = _write(tmp_path, "SICK.txt", (header + "1\tA dog runs.\tA dog is running.\t4.5\t7\n").encode())
    with pytest.raises(ValueError, match=r"SICK.txt: its header names the column\(s\) \['pair_ID'\] more than once"):
        data.read_sick(path)  # before: the last column's value, and a pandas warning


@pytest.mark.parametrize("score", ["-7", "5.2", "-0.001"])
def test_stsb_scores_outside_0_5_are_refused(tmp_path, score):
    path = _write(tmp_path, "sts.csv", (STSB_ROW.format(score="0.0") + STSB_ROW.format(score=score)).encode())
    with pytest.raises(ValueError, match=rf"sts.csv, line 2: the score '{score}' is outside \[0, 5\]"):
        data.read_stsb(path)  # before: accepted, although the docstring says [0, 5]
