"""A class against the grader (scripts/grade.py, scripts/sandbox.py): each submission runs alone, and a batch that
no submission can stop.

One hostile batch of lab 1, graded two at once (``--jobs 2``), holds: a submission that reads the machine's listening
ports and subscribes to every kernel's output (which a solved classmate, graded beside it, prints its answers to);
one that connects to a TCP listener, a named and an abstract Unix socket and sends to a UDP socket, all opened
here; one that looks for a secret of the grader's environment, its own uid, ``/etc/shadow`` and the terminals;
notebooks that cannot be read (not JSON, a link to ``/etc/shadow``); a results file turned into a link; an output of
30 MB; the limits of memory, file size and processes reached; honest answers in odd forms; two ``nb01.ipynb`` in
different folders. Then a detached process that relays a classmate's answers through ``/dev/shm`` to a friend graded
later, and the time limits. Every run is a real attack: the old grader (Landlock, one kernel on 127.0.0.1 after
another) let each of them through."""

from __future__ import annotations

import json
import os
import shutil
import socket
import uuid
from pathlib import Path

import pytest

from grading_kit import grade, key, notebook, sandboxed, solved, tiny
from socm_lib import course

CHECK_1 = 'from socm_lib.course import check\ncheck("nb01.1", answer)'
CHECK_2 = 'check("nb01.2", answer)'
RUN = uuid.uuid4().hex[:12]
MARKER = f"socm-grading-test-{RUN}"  # on the command line of every process a submission starts
SECRET_NAME, SECRET = "SOCM_GRADER_SECRET", f"secret-{RUN}"

#: Reads the listening TCP ports the process can see (``/proc/net/tcp``), but its own, subscribes to each (a
#: kernel's iopub channel needs no key) and collects the answer lines printed there.
SNIFF = r'''
import os, re, time
import zmq

def listening():
    own = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            own.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and fields[9] not in own:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports

def sniff(wait_for_ports, listen, relay=None):
    found, seen, start = {}, set(), time.time()
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.LINGER, 0)
    while len(found) < 2 and time.time() - start < listen:
        for port in listening() - seen:
            sub.connect(f"tcp://127.0.0.1:{port}")
            seen.add(port)
        if not seen and time.time() - start > wait_for_ports:
            break
        if sub.poll(100):
            for frame in sub.recv_multipart():
                for task, value in re.findall(rb"SOCM-ANSWER (nb01\.[12]) (-?[0-9][0-9.eE+-]*)", frame):
                    found[task.decode()] = float(value)
                    if relay:
                        with open(relay, "a") as out:
                            out.write(f"{task.decode()} {float(value)!r}\n")
    return found
'''
RELAY = f"/dev/shm/socm-relay-{RUN}"


class Listeners:
    """A TCP listener on 127.0.0.1, a UDP socket, a named and an abstract Unix socket, opened here; afterwards,
    which of them anyone reached."""

    def __init__(self, folder: Path):
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.path = str(folder / "grader.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.path)
        os.chmod(self.path, 0o777)  # any user may connect, if it can reach the path
        self.name = f"socm-grader-{RUN}"
        self.abstract = socket.socket(socket.AF_UNIX)
        self.abstract.bind("\0" + self.name)
        for listener in (self.tcp, self.unix, self.abstract):
            listener.listen()
        for s in (self.tcp, self.udp, self.unix, self.abstract):
            s.setblocking(False)

    def probe(self) -> str:
        return f'''import socket
reached = []
for name, family, kind, address in [
        ("tcp", socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {self.tcp.getsockname()[1]})),
        ("unix", socket.AF_UNIX, socket.SOCK_STREAM, {self.path!r}),
        ("abstract", socket.AF_UNIX, socket.SOCK_STREAM, "\\0" + {self.name!r})]:
    s = socket.socket(family, kind)
    s.settimeout(5)
    try:
        s.connect(address)
        s.sendall(b"from a submission")
        reached.append(name)
    except OSError:
        pass
    s.close()
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.sendto(b"from a submission", ("127.0.0.1", {self.udp.getsockname()[1]}))
raise RuntimeError("reached: " + (" ".join(reached) or "nothing"))'''

    def reached(self) -> list[str]:
        names = []
        for name, listener in (("tcp", self.tcp), ("unix", self.unix), ("abstract", self.abstract)):
            try:
                listener.accept()[0].close()
                names.append(name)
            except BlockingIOError:
                pass
        try:
            self.udp.recvfrom(100)
            names.append("udp")
        except BlockingIOError:
            pass
        return names


IDENTITY = f'''import glob, os
elsewhere = 0
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        elsewhere += {SECRET!r}.encode() in open(path, "rb").read()
    except OSError:
        pass
try:
    open("/etc/shadow").read()
    shadow = "readable"
except OSError:
    shadow = "unreadable"
terminals = 0
for path in glob.glob("/dev/pts/[0-9]*"):
    try:
        open(path, "w").write("alice.ipynb: 10/10\\n")
        terminals += 1
    except OSError:
        pass
secret = os.environ.get({SECRET_NAME!r}, "absent")
raise RuntimeError(f"uid={{os.getuid()}} gid={{os.getgid()}} groups={{os.getgroups()}} shadow={{shadow}} "
                   f"secret={{secret}} elsewhere={{elsewhere}} terminals={{terminals}}")'''

LIMITS = ["x = bytearray(64 * 2**30)",
          "open('big.bin', 'wb').write(b'0' * (65 * 2**20))",
          f"import subprocess\nsleepers = [subprocess.Popen(['sleep', '60', {MARKER!r}]) for _ in range(400)]"]


def _expected(task_id: str) -> float:
    return float(course._expected(task_id))


@pytest.fixture(scope="module")
def hostile(built_assignments, tmp_path_factory):
    """The hostile batch, graded with two jobs; its records by submission, the listeners, and what was left."""
    folder, out = tmp_path_factory.mktemp("class"), tmp_path_factory.mktemp("graded")
    listeners = Listeners(folder)
    e1, e2 = _expected("nb01.1"), _expected("nb01.2")
    broken = folder / "broken" / "nb01.ipynb"
    broken.parent.mkdir()
    broken.write_text("{this is not a notebook")
    linked = folder / "linked" / "nb01.ipynb"
    linked.parent.mkdir()
    linked.symlink_to("/etc/shadow")
    unsolved = folder / "bob" / "nb01.ipynb"
    unsolved.parent.mkdir()
    shutil.copyfile(built_assignments / "nb01" / "student" / "nb01.ipynb", unsolved)
    submissions = {
        "sniffer": notebook(folder / "sniffer" / "nb01.ipynb", SNIFF, "found = sniff(wait_for_ports=30, listen=60)",
                            "answer = found.get('nb01.1')", CHECK_1, "answer = found.get('nb01.2')", CHECK_2),
        "alice": solved(built_assignments, "nb01", folder / "alice" / "nb01.ipynb"),
        "bob": unsolved,
        "sockets": tiny(folder / "probes" / "sockets.ipynb", listeners.probe(), "answer = None"),
        "identity": tiny(folder / "probes" / "identity.ipynb", IDENTITY, "answer = None"),
        "limits": tiny(folder / "probes" / "limits.ipynb", *LIMITS, "answer = None"),
        "forms": notebook(folder / "probes" / "forms.ipynb", f"import pandas as pd\nanswer = pd.Series([{e1!r}])",
                          CHECK_1, f"import numpy as np\nanswer = np.longdouble({e2!r})", CHECK_2),
        "unreadable answers": notebook(folder / "probes" / "unreadable.ipynb",
                                       "class Exits(list):\n    def __iter__(self):\n        raise SystemExit\n"
                                       "answer = Exits([0.1464])", CHECK_1, "answer = 10**5000", CHECK_2),
        "output": tiny(folder / "probes" / "output.ipynb", "for _ in range(30):\n    print('x' * 1_000_000)",
                       "answer = 0.1464"),
        "old link trick": tiny(folder / "tricks" / "pagemap.ipynb", "answer = 0.1464",
                               "import os\nos.symlink('/proc/self/pagemap', 'executed.ipynb')"),
        "results link": tiny(folder / "tricks" / "results.ipynb", "answer = 0.1464",
                             "import os\nos.symlink('/proc/self/pagemap', '/kit/result.json.link')\n"
                             "os.replace('/kit/result.json.link', '/kit/result.json')\nos.chmod('/kit', 0o500)"),
        "broken": broken,
        "linked": linked,
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SECRET_NAME, SECRET)
        records = grade.grade_all(key(built_assignments, "nb01"), list(submissions.values()), out,
                                  jobs=2, limits=grade.sandbox.Limits(memory_mb=2048, file_size_mb=64))
    return {"records": dict(zip(submissions, records)), "listeners": listeners, "left": sandboxed(MARKER),
            "out": out, "folder": folder, "submissions": submissions}


def _line(record: dict, task_id: str) -> str:
    return next(t["line"] for t in record["tasks"] if t["task"] == task_id)


def test_a_port_sniffer_graded_beside_a_solved_classmate_copies_nothing(hostile):
    records = hostile["records"]
    assert records["alice"]["score"] == records["alice"]["max_score"] == 10, records["alice"]
    assert records["sniffer"]["score"] == 0, records["sniffer"]
    assert [t["status"] for t in records["sniffer"]["tasks"]] == ["unanswered", "unanswered"]


def test_no_socket_of_the_machine_is_reachable(hostile):
    assert hostile["listeners"].reached() == []
    assert hostile["records"]["sockets"]["errors"] == ["cell 1: RuntimeError: reached: nothing"]


def test_the_grader_s_environment_user_files_and_terminals_stay_out_of_reach(hostile):
    (error,) = hostile["records"]["identity"]["errors"]
    assert "secret=absent elsewhere=0 terminals=0" in error and "shadow=unreadable" in error, error
    uid, gid = (int(error.split(f"{name}=")[1].split()[0]) for name in ("uid", "gid"))
    groups = json.loads(error.split("groups=")[1].split("]")[0] + "]")
    assert uid != 0 and gid != 0 and 0 not in groups, error
    for path in hostile["out"].rglob("*.json"):  # not in any record
        assert SECRET not in path.read_text() and "root:" not in path.read_text(), path


def test_no_process_of_a_graded_submission_outlives_its_run(hostile):
    assert hostile["left"] == []
    assert not Path(RELAY).exists()


def test_every_submission_of_a_hostile_batch_gets_its_own_record(hostile):
    out, records = hostile["out"], hostile["records"]
    for name, submission in hostile["submissions"].items():
        assert records[name]["submission"] == str(submission)
        relative = submission.parent.relative_to(hostile["folder"]) / (submission.name.removesuffix(".ipynb") + ".json")
        assert json.loads((out / relative).read_text()) == records[name], name
    assert records["bob"]["score"] == 0 and {t["status"] for t in records["bob"]["tasks"]} == {"unanswered"}
    for name, why in (("broken", "is not JSON (JSONDecodeError)"), ("linked", "is a link")):
        record = records[name]
        assert record["score"] == 0 and f"the notebook could not be read: it {why}" in record["stopped"], record
        assert all(t["line"] == f"{t['task']}: not graded: {record['stopped']}." for t in record["tasks"])
    for name in ("output", "old link trick", "results link"):  # a large output and the old tricks change nothing
        assert records[name]["stopped"] is None and _line(records[name], "nb01.1") == "nb01.1: right.", records[name]


def test_limits_say_which_was_reached(hostile):
    errors = hostile["records"]["limits"]["errors"]
    assert [e.split(":")[0] for e in errors] == ["cell 1", "cell 2", "cell 3"], errors
    assert errors[0].startswith("cell 1: MemoryError"), errors
    assert errors[0].endswith("(the memory limit of 2048 MB was reached)"), errors
    assert "File too large" in errors[1] and errors[1].endswith("(the file size limit of 64 MB was reached)")
    assert errors[2].endswith("(the limit of 256 processes and threads was reached?)"), errors[2]


def test_practice_and_grading_accept_the_same_answers(hostile):
    records = hostile["records"]
    assert records["forms"]["score"] == 10, records["forms"]
    unreadable = records["unreadable answers"]
    assert [t["status"] for t in unreadable["tasks"]] == ["malformed", "malformed"], unreadable
    assert _line(unreadable, "nb01.1") == ("nb01.1: malformed. Your answer could not be read: SystemExit raised while "
                                           "reading it. Expected one finite real number (a float, a numpy scalar or a "
                                           "one-element tensor).")
    assert _line(unreadable, "nb01.2") == course.verdict("nb01.2", 10**5000).line()


def test_a_detached_relay_through_dev_shm_copies_nothing_for_a_friend_graded_later(built_assignments, tmp_path):
    e1, e2 = _expected("nb01.1"), _expected("nb01.2")
    daemon = SNIFF + f"sniff(wait_for_ports=600, listen=600, relay={RELAY!r})"
    relay = tiny(tmp_path / "subs" / "relay" / "nb01.ipynb",
                 f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {daemon!r}, {MARKER!r}], "
                 "start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, "
                 "stderr=subprocess.DEVNULL)", "answer = None")
    classmate = notebook(tmp_path / "subs" / "classmate" / "nb01.ipynb", "import time\ntime.sleep(3)", f"answer = {e1!r}",
                         CHECK_1, f"answer = {e2!r}", CHECK_2)
    friend = notebook(tmp_path / "subs" / "friend" / "nb01.ipynb",
                      f"import os\nrelay = dict(line.split() for line in open({RELAY!r})) if os.path.exists({RELAY!r}) "
                      "else {}", "answer = float(relay['nb01.1']) if 'nb01.1' in relay else None", CHECK_1,
                      "answer = float(relay['nb01.2']) if 'nb01.2' in relay else None", CHECK_2)
    records = grade.grade_all(key(built_assignments, "nb01"), [relay, classmate, friend], tmp_path / "graded", jobs=1)
    assert sandboxed(MARKER) == [] and not Path(RELAY).exists()
    assert [r["score"] for r in records] == [0, 10, 0], records
    assert records[0]["seconds"] < 300, "the grader waited for the detached process"  # it listens 600 s


def test_time_limits_say_where_they_were_reached(built_assignments, tmp_path):
    stored = key(built_assignments, "nb01")
    sleeps = notebook(tmp_path / "sleeps.ipynb", "answer = 0.1464", CHECK_1, "import time\ntime.sleep(3600)", CHECK_2)
    spins = notebook(tmp_path / "spins.ipynb", "answer = 0.1464", CHECK_1, "while True:\n    pass", CHECK_2)
    slept = grade.grade(stored, sleeps, cell_timeout=10)
    spun = grade.grade(stored, spins, limits=grade.sandbox.Limits(cpu_seconds=5))
    for record, why in ((slept, "the time limit of 10 s per cell was reached in cell 3"),
                        (spun, "the CPU time limit of 5 s per process was reached in cell 3")):
        assert record["stopped"] == why, record
        assert [t["line"] for t in record["tasks"]] == ["nb01.1: right.", f"nb01.2: not graded: {why}."]
        assert record["score"] == 5


def test_a_python_installed_under_tmp_is_seen_inside_the_fresh_tmp(tmp_path, monkeypatch):
    """A checkout (and its venv) under /tmp, as a clone for CI often is: the sandbox's private /tmp must not hide
    it, so the read-only mounts of the system and of Python come after the fresh /tmp."""
    import sandbox

    prefix = tmp_path / "venv"
    prefix.mkdir(mode=0o755)
    (prefix / "marker").write_text("here")
    (prefix / "marker").chmod(0o644)
    system = sandbox._system()
    monkeypatch.setattr(sandbox, "_system", lambda: [*system, (str(prefix), str(prefix))])
    run = sandbox.run(sandbox.Layout(), sandbox.Limits(), ["/bin/sh", "-c", f"test -f {prefix / 'marker'}"], timeout=60)
    assert run.status == 0
