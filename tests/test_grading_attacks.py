"""Submissions that try to break out of their run (issue 39), each graded for real, and what contains it: the runner
out of the kernel's reach, no process left when the grader is killed, a uid no other run has, no keyring, one
budget of memory, cores, bytes and files for the whole run, nothing of a student's raw on the terminal or in a
record, file names that are never options and records that never collide, the answer graded where it was checked.

Every submission is lean (scripts/grade.py grades it in seconds: answers written out or computed with numpy, no
model, no import of the library) and graded against the key computed by the library (no built book). Each attack
here worked against the grader before: the test fails where the bound it checks does not hold."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import signal
import stat
import subprocess
import sys
import time
import unicodedata
import uuid
from pathlib import Path

import pytest

from grading_kit import expected, grade, lean, lean_key, notebook, sandboxed, solved_cells, write_key

import grade_files  # noqa: E402  (scripts/, put on the path by grading_kit)
import pyseccomp
import safe_text
import sandbox

RUN = uuid.uuid4().hex[:12]
MARKER = f"socm-attack-{RUN}"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="boxes of their own uids need a root grader")
SMALL = sandbox.Limits(memory_mb=768, disk_mb=64, files=3000, cpu_seconds=120)


def _call(name: str) -> int:
    """The number of system call ``name`` here, for submissions that call it through ctypes."""
    return pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)


def _line(record: dict, task_id: str) -> str:
    return next(t["line"] for t in record["tasks"] if t["task"] == task_id)


def _errors(record: dict) -> str:
    return " | ".join(record["errors"])


def _grader(args: list) -> multiprocessing.Process:
    """A grader process of its own, running ``grade.py args``: forked from this one, so that it need not import the
    library again (scripts/grade.py's ``main``, as the command line runs it)."""
    process = multiprocessing.get_context("fork").Process(target=grade.main, args=([str(a) for a in args],))
    process.start()
    return process


#: Tries to stop, kill, trace and read the runner (the kernel's parent), then reports what it got.
FREEZE = f'''import ctypes, os, signal
runner, tried = os.getppid(), {{}}
for name, number in (("stop", signal.SIGSTOP), ("kill", signal.SIGKILL)):
    try:
        os.kill(runner, number)
        tried[name] = "sent"
    except OSError as error:
        tried[name] = type(error).__name__
libc = ctypes.CDLL(None, use_errno=True)
attached = libc.syscall({_call("ptrace")}, 16, runner, 0, 0)  # PTRACE_ATTACH
tried["ptrace"] = os.strerror(ctypes.get_errno()) if attached < 0 else "attached"
for part in ("mem", "fd", "environ"):
    try:
        os.listdir(f"/proc/{{runner}}/fd") if part == "fd" else open(f"/proc/{{runner}}/{{part}}", "rb").read(1)
        tried[part] = "read"
    except OSError as error:
        tried[part] = type(error).__name__
raise RuntimeError(" ".join(f"{{k}}={{v}}" for k, v in sorted(tried.items())))'''


def test_the_runner_is_out_of_the_kernel_s_reach(tmp_path):
    submission = notebook(tmp_path / "subs" / "freeze.ipynb", FREEZE, *solved_cells())
    record = grade.grade(lean_key(), submission, timeout=120, limits=SMALL)
    assert record["score"] == 10 and record["stopped"] is None, record
    denied = ("environ=PermissionError fd=PermissionError kill=PermissionError mem=PermissionError "
              "ptrace=Operation not permitted stop=PermissionError")
    assert record["errors"] == [f"cell 1: RuntimeError: {denied}"], record["errors"]


@root_only
def test_a_grader_killed_mid_run_leaves_no_process_of_the_run(tmp_path):
    """The run tries to freeze its runner and leaves detached processes; the grader is then SIGKILLed: the kernel
    ends the run (its PID namespace dies with the grader), and the next grader takes the box clean."""
    sleepers = (f"import subprocess, sys\nfor _ in range(5):\n    subprocess.Popen([sys.executable, '-c', "
                f"'import time; time.sleep(300)', {MARKER!r}], start_new_session=True)")
    submission = lean(tmp_path / "subs" / "stays.ipynb", "import os, signal\ntry:\n    os.kill(os.getppid(), "
                      "signal.SIGSTOP)\nexcept OSError:\n    pass", sleepers, "import time\ntime.sleep(300)",
                      "answer = None")
    process = _grader(["--key", write_key(tmp_path / "key.json"), "--out", tmp_path / "graded", submission])
    deadline = time.monotonic() + 120
    while len([p for p in sandboxed(MARKER) if MARKER in p]) < 5:
        assert time.monotonic() < deadline and process.is_alive(), process.exitcode
        time.sleep(0.2)
    left_cgroups = list(Path("/sys/fs/cgroup/memory").rglob("socm-grade-box*"))
    process.kill()
    process.join()
    deadline = time.monotonic() + 20
    while sandboxed(MARKER) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sandboxed(MARKER) == []
    # the next run takes the first free box, the killed grader's, and removes what that grader left of it
    record = grade.grade(lean_key(), notebook(tmp_path / "subs" / "next.ipynb", *solved_cells()), timeout=120,
                         limits=SMALL)
    assert record["score"] == 10, record
    assert left_cgroups and not any(path.exists() for path in left_cgroups), left_cgroups


@root_only
def test_two_graders_at_once_never_share_a_uid_and_a_process_flood_stays_in_its_run(tmp_path):
    flood = ("import subprocess\nstarted = []\ntry:\n    for _ in range(400):\n"
             "        started.append(subprocess.Popen(['sleep', '5']))\n"
             "except OSError as error:\n    raise RuntimeError(f'{len(started)} started: {error}')")
    hog = lean(tmp_path / "one" / "hog.ipynb", flood, "import time\ntime.sleep(4)", "answer = None")
    classmate = notebook(tmp_path / "two" / "classmate.ipynb", "import time\ntime.sleep(4)", *solved_cells())
    key = write_key(tmp_path / "key.json")
    processes = [_grader(["--key", key, "--out", tmp_path / f"graded-{k}", "--processes", "64", submission])
                 for k, submission in enumerate((hog, classmate))]
    seen_together = set()
    while any(p.is_alive() for p in processes):
        uids = {_effective_uid(pid) for pid in os.listdir("/proc") if pid.isdigit()} & set(
            range(sandbox.SANDBOX_UID + 1, sandbox.SANDBOX_UID + 2 * sandbox.POOL, 2))  # the runs' program uids
        if len(uids) > 1:
            seen_together |= {frozenset(uids)}
        time.sleep(0.1)
    for process in processes:
        process.join()
        assert process.exitcode == 0
    hogged = json.loads((tmp_path / "graded-0" / "hog.json").read_text())
    graded = json.loads((tmp_path / "graded-1" / "classmate.json").read_text())
    assert hogged["uid"] != graded["uid"] and seen_together, (hogged["uid"], graded["uid"], seen_together)
    assert graded["score"] == 10, graded
    assert "started" in _errors(hogged) and "(the limit of 64 processes and threads was reached?)" in _errors(hogged)
    assert hogged["counted"]["forks_refused"] > 0, hogged["counted"]


def _effective_uid(pid: str) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/status").read_text().split("\nUid:")[1].split()[1])
    except (OSError, IndexError):
        return None


def _add_key(description: bytes, payload: bytes) -> int:
    """A key in this process's session keyring (the grader's), as an instructor's login session holds tokens."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(_call("add_key"), b"user", description, payload, len(payload), ctypes.c_long(-3))


KEYRING = f'''import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def call(number, *args):
    return "ok" if libc.syscall(number, *args) >= 0 else ctypes.get_errno()
found = {{"add_key": call({_call("add_key")}, b"user", b"planted", b"answers", 7, ctypes.c_long(-4)),
         "request_key": call({_call("request_key")}, b"user", b"socm-{RUN}", None, ctypes.c_long(0)),
         "keyctl": call({_call("keyctl")}, 0, ctypes.c_long(-3), 0),
         "unshare": call({_call("unshare")}, 0x10000000), "setns": call({_call("setns")}, 0, 0),
         "mount": call({_call("mount")}, b"none", b"/tmp", b"tmpfs", 0, None),
         "bpf": call({_call("bpf")}, 0, None, 0), "userfaultfd": call({_call("userfaultfd")}, 0),
         "unshare-Urm": os.system("unshare -Urm true 2>/dev/null")}}
raise RuntimeError(" ".join(f"{{k}}={{v}}" for k, v in sorted(found.items())))'''


def test_no_keyring_namespace_or_mount_is_reachable_from_a_run(tmp_path):
    secret = f"token-{RUN}".encode()
    assert _add_key(f"socm-{RUN}".encode(), secret) > 0  # the grader's session holds a key
    record = grade.grade(lean_key(), lean(tmp_path / "subs" / "keys.ipynb", KEYRING, "answer = None"),
                         timeout=120, limits=SMALL)
    said = record["errors"][0]
    refused = {call: errno.EPERM for call in ("add_key", "bpf", "keyctl", "mount", "request_key", "setns", "unshare",
                                              "userfaultfd")}
    refused["unshare-Urm"] = 256  # the command's exit status
    assert said == "cell 1: RuntimeError: " + " ".join(f"{k}={v}" for k, v in sorted(refused.items()))
    assert secret.decode() not in json.dumps(record)


MEMORY = '''import subprocess, sys
shared = ("import mmap\\nm = mmap.mmap(-1, 2048 * 2**20, flags=mmap.MAP_SHARED)\\n"
          "for k in range(0, len(m), 4096):\\n    m[k] = 1")
private = "import time\\nx = bytearray(300 * 2**20)\\nfor k in range(0, len(x), 4096):\\n    x[k] = 1\\ntime.sleep(4)"
codes = {"shared": subprocess.run([sys.executable, "-c", shared]).returncode}
four = [subprocess.Popen([sys.executable, "-c", private]) for _ in range(4)]
codes["four"] = sorted(p.wait() for p in four)
raise RuntimeError(repr(codes))'''
SPIN = '''import resource, subprocess, sys, time
spin = "import time\\nend = time.time() + 4\\nwhile time.time() < end:\\n    pass"
start, before = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
for p in [subprocess.Popen([sys.executable, "-c", spin], start_new_session=True) for _ in range(8)]:
    p.wait()
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
raise RuntimeError(f"cpu={cpu:.2f} wall={time.time() - start:.2f}")'''
FLOOD = '''import errno, os
made = 0
try:
    while made < 100_000:
        open(f"/tmp/f{made}", "w").close()
        made += 1
except OSError as error:
    files = errno.errorcode[error.errno]
for k in range(made):
    os.unlink(f"/tmp/f{k}")
written = 0
try:
    with open("/kit/notebooks/big", "wb") as out:
        while written < 8 * 2**30:
            out.write(b"x" * 2**20)
            written += 2**20
except OSError as error:
    space = errno.errorcode[error.errno]
os.unlink("/kit/notebooks/big")
os.mkdir("/tmp/deep")
os.chdir("/tmp/deep")
for _ in range(1500):
    os.mkdir("d")
    os.chdir("d")
os.chdir("/kit/notebooks")
raise RuntimeError(f"files={made} {files} megabytes={written // 2**20} {space}")'''


@root_only
def test_memory_cores_bytes_and_files_are_bounded_per_run_and_classmates_score_right(tmp_path):
    if grade.sandbox.sandbox_cgroup.unavailable():
        pytest.skip(f"no cgroup here: {grade.sandbox.sandbox_cgroup.unavailable()}")
    subs = tmp_path / "subs"
    paths = [lean(subs / "memory.ipynb", MEMORY, "answer = None"), lean(subs / "spin.ipynb", SPIN, "answer = None"),
             lean(subs / "flood.ipynb", FLOOD, "answer = None"), notebook(subs / "classmate.ipynb", *solved_cells())]
    records = grade.grade_all(lean_key(), paths, tmp_path / "graded", jobs=2, timeout=120, limits=SMALL)
    memory, spin, flood, classmate = records
    assert classmate["score"] == 10, classmate
    # memory: a 2 GB shared mapping and four processes of 300 MB, under a budget of 768 MB for the whole run
    codes = eval(memory["errors"][0].split("RuntimeError: ")[1])
    assert codes["shared"] == -signal.SIGKILL and -signal.SIGKILL in codes["four"], codes
    assert memory["counted"]["oom_kills"] >= 2 and memory["counted"]["memory_peak_mb"] <= 768, memory["counted"]
    # cores: eight busy processes, each in a session of its own, get one core between them, and count in the run
    said = spin["errors"][0]
    cpu, wall = (float(said.split(f"{name}=")[1].split()[0]) for name in ("cpu", "wall"))
    assert cpu <= wall * SMALL.cores + 0.3 and spin["counted"]["cpu_seconds"] >= cpu, (said, spin["counted"])
    # bytes and files: the run's file system is full at its bounds; a 1,500-deep tree needs no cleaning
    said = flood["errors"][0]
    assert said.startswith("cell 1: RuntimeError: files=") and flood["stopped"] is None, flood
    files, megabytes = int(said.split("files=")[1].split()[0]), int(said.split("megabytes=")[1].split()[0])
    assert 2900 < files < 3000 and 60 <= megabytes <= 64 and said.count("ENOSPC") == 2, said
    for record in records:
        box = sandbox.BOXES / f"box-{(record['uid'] - sandbox.SANDBOX_UID) // 2}"
        assert os.listdir(box) == [] and not os.path.ismount(box)


@pytest.mark.parametrize("root", [True, False], ids=["root", "user namespace"])
def test_without_a_cgroup_or_root_the_record_claims_no_bound_that_does_not_hold(tmp_path, monkeypatch, root):
    """As root without cgroups (a container), and as a grader that is not root (a user namespace; here root plays it,
    with a process limit above the processes root has on this machine, since the limit counts the grader's uid)."""
    monkeypatch.setattr(grade.sandbox.sandbox_cgroup, "unavailable", lambda: "a stand-in for a container")
    monkeypatch.setattr(grade.sandbox, "_as_root", lambda: root)
    limits = sandbox.Limits(**{**SMALL.__dict__, "processes": 8192})
    record = grade.grade(lean_key(), notebook(tmp_path / "subs" / "solved.ipynb", *solved_cells()), timeout=120,
                         limits=limits)
    assert record["score"] == 10 and record["counted"] == {}, record
    isolation = record["isolation"]
    assert "whole run" not in isolation["memory"] + isolation["processes"] + isolation["cpu"], isolation
    assert "per process (RLIMIT_DATA) only" in isolation["memory"], isolation
    assert "a stand-in for a container" in isolation["memory"]
    assert "no share between runs is enforced" in isolation["cpu"]
    if root:
        assert "two uids of its own" in isolation["identity"] and "3,000 files" in isolation["disk"]
    else:
        assert "files are not counted" in isolation["disk"] and "grader's own uid" in isolation["identity"]


def _is_safe(text: str) -> bool:
    return not any(unicodedata.category(c) in safe_text.UNSAFE and c != "\n" for c in text) and "<" not in text


def test_nothing_a_student_writes_reaches_the_terminal_or_a_record_raw(tmp_path, capfd):
    subs = tmp_path / "subs"
    forged = ("\x1b]0;pwned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2K\ralice.ipynb: 10/10\n  nb01.1: right.\n"
              "<script>x</script>")
    paths = [
        lean(subs / "errors.ipynb", f"raise RuntimeError({forged!r})", f"raise type({forged!r}, (Exception,), {{}})()",
             "answer = type('<b>\\x1b[31m', (), {})()"),
        lean(subs / "flood.ipynb", "import json\n_socm_report = lambda task, name, space: "
             "print('SOCM-ANSWER ' + task + ' ' + json.dumps('y' * 3_000_000))", "raise ValueError('z' * 45_000_000)",
             "answer = 1.0"),
        lean(subs / f"evil\x1b[1A\x1b[2K\nalice.ipynb: 10{chr(0x202e)}.ipynb", "answer = None"),
    ]
    grade.main(["--key", str(write_key(tmp_path / "key.json")), "--out", str(tmp_path / "graded"), "--jobs", "2",
                "--timeout", "120", "--memory", "768", "--", *map(str, paths)])
    out = capfd.readouterr().out
    assert _is_safe(out) and "\x1b" not in out and "\r" not in out, out
    assert max(len(line) for line in out.splitlines()) < 3 * safe_text.MAX_TEXT
    assert not [line for line in out.splitlines() if line.startswith("alice")], out
    records = sorted((tmp_path / "graded").iterdir())
    assert len(records) == 3 and all(r.stat().st_size < 64_000 for r in records)

    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for k, v in value.items():
                yield k
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)

    for path in records:
        for text in strings(json.loads(path.read_text(encoding="utf-8"))):
            assert _is_safe(text) and len(text) <= safe_text.MAX_TEXT, (path.name, text[:200])
    errors = json.loads((tmp_path / "graded" / "errors.json").read_text())
    assert errors["errors"][0].startswith("cell 1: RuntimeError: \\x1b]0;pwned\\x07"), errors["errors"]
    assert "&lt;script&gt;" in errors["errors"][0] and _line(errors, "nb01.1").startswith(
        "nb01.1: malformed. Your answer could not be read: an object of type &lt;b&gt;\\x1b[31m")
    flood = json.loads((tmp_path / "graded" / "flood.json").read_text())
    assert "a string of 3,000,000 characters" in _line(flood, "nb01.1"), flood


def test_file_names_are_never_options_and_records_never_collide(tmp_path, monkeypatch):
    subs, out = tmp_path / "subs", tmp_path / "graded"
    solved = notebook(subs / "alice.ipynb", *solved_cells())
    (subs / "alice").write_bytes(solved.read_bytes())
    notebook(subs / "-x.ipynb", *solved_cells())
    forged = lean_key()
    for entry in forged["tasks"].values():
        entry["expected"] = 12345.0  # the forged key's answers are Mallory's
    (subs / "--key=zz-key.ipynb").write_text(json.dumps(forged))
    notebook(subs / "bob" / "notebooks" / "nb01.ipynb", *solved_cells())
    (subs / "mallory").mkdir()
    (subs / "mallory" / "notebooks").symlink_to("../bob/notebooks")
    odd = [os.fsencode(subs) + b"/caf\xe9.ipynb", os.fsencode(subs) + b"/" + b"n" * 246 + b".ipynb",
           os.fsencode(subs) + b"/" + b"m" * 255]
    for name in odd:  # not notebooks: only their names are tried here, and a record needs no run
        Path(os.fsdecode(name)).write_bytes(b"{not a notebook")
    big = subs / "big.ipynb"
    with open(big, "wb") as file:
        file.truncate(grade.MAX_SUBMISSION + 1)
    # what `grade.py --key K --out O *.ipynb alice bob/... mallory/... <odd names>` passes, run in the submissions
    names = sorted(p.name for p in subs.iterdir() if p.name.endswith(".ipynb"))
    monkeypatch.chdir(subs)
    grade.main(["--key", str(write_key(tmp_path / "key.json")), "--out", str(out), "--jobs", "2", "--timeout", "120",
                "--memory", "768", *names, "alice", "bob/notebooks/nb01.ipynb", "mallory/notebooks/nb01.ipynb",
                os.fsdecode(odd[2][len(os.fsencode(subs)) + 1:])])
    read = {p.relative_to(out): json.loads(p.read_text()) for p in out.rglob("*.json")}
    score = {str(name): record["score"] for name, record in read.items()}
    assert score["alice.json"] == score["alice~2.json"] == score["-x.json"] == 10, score
    assert score["bob/notebooks/nb01.json"] == 10 and score["mallory/notebooks/nb01.json"] == 0, score
    assert "a folder on its path is a link" in read[Path("mallory/notebooks/nb01.json")]["stopped"]
    assert "not a notebook" in read[Path("--key=zz-key.json")]["stopped"], read[Path("--key=zz-key.json")]
    assert "larger than 20 MB" in read[Path("big.json")]["stopped"], read[Path("big.json")]
    written = {os.fsencode(p.name) for p in out.iterdir()}
    assert b"caf\xe9.json" in written and b"n" * 246 + b".json" in written, written
    assert any(name.startswith(b"m" * 200) and len(name) <= 255 for name in written), written
    assert read[Path(os.fsdecode(b"caf\xe9.json"))]["submission"].endswith("caf\\xe9.ipynb")
    odd_records = [record for name, record in read.items() if name.name.startswith(("caf", "nnnn", "mmmm"))]
    assert len(odd_records) == 3 and all("not JSON" in record["stopped"] for record in odd_records), odd_records
    assert len(read) == len(names) + 4  # every submission, one record each


def test_records_are_never_written_inside_the_submissions_or_through_a_link(tmp_path, capsys):
    subs = tmp_path / "subs"
    submissions = [str(notebook(subs / name / "nb01.ipynb", *solved_cells())) for name in ("alice", "bob")]
    with pytest.raises(SystemExit) as refused:
        grade.main(["--key", str(write_key(tmp_path / "key.json")), "--out", str(subs / "graded"), *submissions])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and "one inside the other" in err and not (subs / "graded").exists(), err
    victim = tmp_path / "victim.txt"
    victim.write_text("the instructor's")
    out = tmp_path / "graded"
    out.mkdir()
    (out / "alice.json").symlink_to(victim)
    (out / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    grade_files.write_record(out, Path("alice.json"), "{}\n")
    assert victim.read_text() == "the instructor's" and stat.S_ISREG(os.lstat(out / "alice.json").st_mode)
    with pytest.raises(OSError):
        grade_files.write_record(out, Path("elsewhere") / "victim.txt", "{}\n")
    assert victim.read_text() == "the instructor's"


def test_the_answer_graded_is_the_one_checked_and_any_signal_gets_a_verdict(tmp_path):
    subs = tmp_path / "subs"
    same_cell = notebook(subs / "same-cell.ipynb", "answer = 0.0",
                         f"answer = {expected('nb01.1')!r}; check('nb01.1', answer)",
                         "x = 2  # check('nb01.2', answer)", f"answer = {expected('nb01.2')!r} * x / 2",
                         "for _ in range(0):\n    check('nb01.2', answer)", "check('nb01.2', answer)")
    signalled = notebook(subs / "signal.ipynb", f"answer = {expected('nb01.1')!r}", "check('nb01.1', answer)",
                         "import os, signal\nos.kill(os.getpid(), signal.SIGRTMIN + 6)", "check('nb01.2', answer)")
    close = notebook(subs / "close.ipynb", "answer = 12345.0", "check('nb01.1', answer)",
                     f"answer = {expected('nb01.2') * 1.004!r}", "check('nb01.2', answer)")
    records = grade.grade_all(lean_key(), [same_cell, signalled], tmp_path / "graded", jobs=2, timeout=120,
                              limits=SMALL)
    same, killed = records
    assert same["score"] == 10 and same["errors"] == [], same
    assert same["notes"] == [f"cell {n}: a check of nb01.2 was not graded there: it is not a statement of its own at "
                             "the top level of the cell (it is in a comment, a string, a loop, a function or a "
                             "condition)." for n in (3, 5)], same["notes"]
    assert killed["stopped"] == "the kernel died in cell 3 (signal SIGRTMIN+6; memory limit of 768 MB?)", killed
    assert killed["score"] == 5
    verdict = grade.grade(lean_key(), close, timeout=120, limits=SMALL, feedback="verdict")
    assert [(t["status"], t["line"]) for t in verdict["tasks"]] == [("wrong", "nb01.1: wrong."),
                                                                    ("wrong", "nb01.2: wrong.")], verdict


def test_default_limits_come_from_the_lab_s_measured_time_and_jobs_must_fit_the_memory():
    measured = json.loads(grade.MEASURED.read_text())["labs"]
    for lab, runs in measured.items():
        slowest = max(runs[k]["seconds"]["max"] for k in ("unanswered", "solved", "at_once") if k in runs)
        timeout, memory, how = grade.lab_defaults(lab)
        least = slowest * grade.TIME_MARGIN + grade.TIME_EXTRA  # rounded up to the next step
        assert least <= timeout < least + grade.TIME_STEP and timeout % grade.TIME_STEP == 0, lab
        assert timeout < 3600 and memory >= grade.MIN_MEMORY_MB and "grading.json" in how["time"] + how["memory"]
    assert grade.lab_defaults("nb99")[:2] == (3600, 8192)
    with pytest.raises(ValueError, match=r"--jobs 100000: .* give fewer --jobs"):
        grade.check_jobs(100_000, sandbox.Limits(memory_mb=2048))
    grade.check_jobs(1, sandbox.Limits(memory_mb=256))


def test_safe_text_escapes_controls_cuts_and_keeps_plain_text():
    assert safe_text.safe("nb01.1: right.") == "nb01.1: right."
    assert safe_text.safe("a\x1b[2Jb\nc\u202ed<i>&") == "a\\x1b[2Jb\\nc\\u202ed&lt;i&gt;&amp;"
    assert safe_text.safe(os.fsdecode(b"caf\xe9")) == "caf\\xe9"
    cut = safe_text.safe("\x07" * 10_000, 50)
    assert len(cut) <= 50 and cut.endswith("…") and cut.startswith("\\x07")
    assert safe_text.safe("x" * 50, 50) == "x" * 50


def test_the_filter_refuses_what_docker_s_profile_lets_through_and_allows_the_rest():
    import syscall_filter

    assert not set(syscall_filter.REFUSED) & set(syscall_filter.ALLOWED)
    probe = ("import ctypes, os, sys\nsys.path.insert(0, sys.argv[1])\nimport syscall_filter\nsyscall_filter.load()\n"
             "libc = ctypes.CDLL(None, use_errno=True)\n"
             f"traced = libc.syscall({_call('ptrace')}, 0, 0, 0, 0), ctypes.get_errno()\n"
             "child = os.fork()\nif child == 0:\n    os._exit(7)\n"
             "print(*traced, os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))")
    done = subprocess.run([sys.executable, "-c", probe, str(Path(syscall_filter.__file__).parent)],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["-1", "1", "7"], done
