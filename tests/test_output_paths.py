"""No input destroys a file: an output path is checked against every input path (through links, hard links and other
spellings of the same file), refused when empty, written through a symbolic link to its target (the link kept), and
a file it replaces keeps its mode."""

from __future__ import annotations

import os
import stat

import pytest

import socm_lib.cli
from socm_lib import checks
from test_refusals import _cli, no_model  # noqa: F401  (no_model is a fixture: no model may load before a refusal)

TEXTS = "One cat sat.\nTwo dogs ran home.\nThree birds flew far away.\n"
SICK = ("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        "1\tA dog runs.\tA dog is running.\t4.5\tENTAILMENT\n")


@pytest.fixture
def texts(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text(TEXTS)
    return path


def _same_file_spellings(tmp_path, path) -> dict[str, str]:
    """Other names of ``path``: itself, a symbolic link to it, a relative spelling through '..', a hard link."""
    (tmp_path / "link.txt").symlink_to(path)
    os.link(path, tmp_path / "hard.txt")
    (tmp_path / "sub").mkdir()
    return {"itself": str(path), "symlink": str(tmp_path / "link.txt"),
            "spelling": str(tmp_path / "sub" / ".." / path.name), "hard link": str(tmp_path / "hard.txt")}


@pytest.mark.parametrize("spelling", ["itself", "symlink", "spelling", "hard link"])
@pytest.mark.parametrize("prefix,content", [("", TEXTS), ("sick:", SICK)], ids=["lines", "sick"])
def test_out_naming_the_texts_file_is_refused_before_anything(tmp_path, capsys, no_model, spelling, prefix, content):
    # before: python -m socm_lib run --texts same.txt --out same.txt ... exited 0 and replaced the texts by the CSV
    texts = tmp_path / "texts.txt"
    texts.write_text(content)
    out = _same_file_spellings(tmp_path, texts)[spelling]
    before = sorted(os.listdir(tmp_path))
    code, err = _cli(capsys, "run", "--texts", f"{prefix}{texts}", "--out", out, "--sample", "0",
                     "--encoder", "untrained-minilm-l6")
    assert code == 2 and f"--out {out} is the same file as --texts {texts}, which this run reads" in err, err
    assert texts.read_text() == content and sorted(os.listdir(tmp_path)) == before


def test_out_inside_a_local_encoder_folder_is_refused(tmp_path, capsys, no_model):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}\n")
    for command in (["run", "--sample", "5"], ["gpu-check", "--n-texts", "4"]):
        code, err = _cli(capsys, *command, "--encoder", str(folder), "--out", str(folder / "config.json"))
        assert code == 2 and f"is a file inside --encoder {folder}" in err, err
    assert (folder / "config.json").read_text() == "{}\n"


def test_an_empty_out_is_refused(capsys, no_model):
    code, err = _cli(capsys, "run", "--sample", "5", "--out", "")
    assert code == 2 and "error: --out is an empty path; pass a file path." in err  # before: ran, wrote nothing


def test_a_symbolic_link_loop_as_out_is_refused(tmp_path, capsys, no_model):
    (tmp_path / "a.csv").symlink_to(tmp_path / "b.csv")
    (tmp_path / "b.csv").symlink_to(tmp_path / "a.csv")
    code, err = _cli(capsys, "run", "--sample", "5", "--out", str(tmp_path / "a.csv"))
    assert code == 2 and "a.csv is a symbolic link loop" in err


def test_output_file_writes_through_a_link_and_keeps_the_mode(tmp_path):
    target, link = tmp_path / "target.csv", tmp_path / "link.csv"
    target.write_text("earlier\n")
    target.chmod(0o600)
    link.symlink_to(target)
    with checks.output_file(link, "--out") as handle:
        handle.write("new\n")
        assert target.read_text() == "earlier\n"  # replaced only when the block ends
    # before: the link was replaced by a regular file (0644) and the target left stale
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "target.csv"]


def test_a_new_output_file_takes_the_mode_open_gives_it(tmp_path):
    umask = os.umask(0o027)
    try:
        with checks.output_file(tmp_path / "new.csv") as handle:
            handle.write("x\n")
        with open(tmp_path / "plain.csv", "w") as handle:
            handle.write("x\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == stat.S_IMODE((tmp_path / "plain.csv").stat().st_mode)


def test_run_writes_a_private_csv_through_a_link(tmp_path, texts, capsys):
    target, link = tmp_path / "private.csv", tmp_path / "results.csv"
    target.write_text("earlier\n")
    target.chmod(0o600)
    link.symlink_to(target)
    code = socm_lib.cli.main(["run", "--texts", str(texts), "--sample", "0", "--encoder", "untrained-minilm-l6",
                              "--device", "cpu", "--out", str(link)])
    assert code == 0 and "wrote 3 rows" in capsys.readouterr().out
    assert link.is_symlink() and target.read_text().startswith("i,j,d_mu,d_sigma,socm,text_i,text_j\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and texts.read_text() == TEXTS


def test_a_link_to_a_pipe_is_written_directly():
    import subprocess
    import sys

    code = "from socm_lib.checks import output_file\nwith output_file('/dev/stdout') as f:\n    f.write('through\\n')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "through\n"  # /dev/stdout is a link to this process's pipe: opened as it is, not resolved
