"""Run a program alone on the machine, as a judge's sandbox runs a submission (IOI's ``isolate``: a box per run, with
uids of its own, a group that bounds the whole box, a disk quota, every process killed at the end; Docker's
default seccomp profile), without a container daemon: bubblewrap (Debian's package ``bubblewrap``, the ``bwrap``
command) gives it namespaces of its own, scripts/sandbox_init.py its limits, identity and system call filter.

What the program and everything it starts get (see :func:`run`; :func:`bounds` says it for a given machine):

* a box of its own: where the grader is root, two uids (and a gid) taken for this run alone from a pool that every
  grader process of the machine shares, under a lock (:data:`SANDBOX_UID` on), the program's uid apart from the
  uid of the program's first process (the runner), which it can then neither signal nor trace; a cgroup per
  run (scripts/sandbox_cgroup.py) that bounds the memory (shared and file-backed included), the processes and the
  cores of the whole run; and every process of those uids killed when the run ends, and again before the box is
  used next, however the grader ended;
* its own PID namespace, whose first process is bubblewrap's, running as the caller and dying with it
  (``--die-with-parent``): when the run's program ends, or the grader is killed (SIGKILL, SIGHUP, Ctrl-C), the
  kernel kills every process left in the namespace, detached, stopped or traced;
* its own network namespace (a loopback of its own, no socket of the machine reachable), IPC, UTS and cgroup
  namespaces, a private ``/dev`` (no terminal of the machine), ``/proc``, and a new session;
* a file system of its own: the system's programs and libraries (``/usr``), Python's installation and the virtual
  environment, read-only; a few files of ``/etc`` the dynamic loader needs; the caller's read-only and hidden
  paths. What it may write (``/tmp``, ``/dev/shm`` and the caller's writable folders) is in memory (tmpfs), gone with
  the run, nothing on the caller's disk and nothing left to clean up: one file system bounded in bytes and in files
  where the grader is root, one per folder bounded in bytes otherwise;
* an environment built from nothing but the caller's variables;
* a system call filter at least as strict as Docker's default profile (scripts/syscall_filter.py), a new session
  keyring, no capability;
* limits on each process (``setrlimit``): CPU seconds, writable memory, processes and threads of its uid, the size
  of one file.

Where the grader is not root (a user namespace gives the program uid 65534, which is the grader's own uid outside)
or the machine lends no cgroup (a container), the bounds that need them are replaced by weaker ones, and
:func:`bounds` says which. The caller passes the program's input and output as file descriptors and reads the
output after the run, as untrusted input. :func:`unavailable` says, in words, what is missing on a machine where
no sandbox can be had.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import sandbox_cgroup
import syscall_filter

NOBODY = 65534
#: The first uid (and gid) of the boxes of a root grader: systemd's list of uid ranges (systemd.io/UIDS-GIDS) leaves
#: 1879048192-2147483647 unused, so no account or container of the machine has processes under these uids.
SANDBOX_UID = 1_900_000_000
POOL = 1000  # boxes, two uids each
#: Where a root grader keeps the pool's locks and the empty folder each box's file system is mounted on.
BOXES = Path("/run/socm-grade")
#: The files of /etc the dynamic loader and time functions read; nothing else of /etc is mounted.
ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
INIT = Path(__file__).resolve().parent / "sandbox_init.py"
INIT_FILES = (INIT, Path(syscall_filter.__file__).resolve())
GRADER_DIR = "/grader"  # where the init (and the caller's programs) are, read-only, in the sandbox
TOOLS_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"  # where bwrap, unshare and mount are looked for
PYTHON = os.path.normpath(os.path.abspath(sys.executable))  # this Python, as the sandbox sees it too
#: Mounts the run's file system in a mount namespace of its own (see :func:`_prepare`), then becomes bwrap.
PREPARE = r'''set -e
dir=$1 options=$2 owner=$3; shift 3
while [ "$1" != -- ]; do echo $$ > "$1"; shift; done; shift
mount -t tmpfs -o "$options" socm-run "$dir"
while [ "$1" != -- ]; do mkdir -p "$dir$1"; chown "$owner" "$dir$1"; shift; done; shift
exec "$@"'''


@dataclass(frozen=True)
class Limits:
    """What one run may use: ``memory_mb`` for the whole run (a cgroup; and each process's writable memory,
    ``RLIMIT_DATA``), ``processes`` and threads, ``cores`` at once, ``cpu_seconds`` per process (the kernel sends
    SIGXCPU there, SIGKILL five seconds later), ``file_size_mb`` per file, and ``disk_mb`` and ``files`` for all it
    writes (its in-memory file system)."""

    memory_mb: int = 8192
    processes: int = 256
    cores: int = 1
    cpu_seconds: int = 3600
    file_size_mb: int = 1024
    disk_mb: int = 1024
    files: int = 10_000

    def __post_init__(self):
        for name in ("memory_mb", "processes", "cores", "cpu_seconds", "file_size_mb", "disk_mb", "files"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive whole number; got {value!r}.")


@dataclass
class Layout:
    """What a run sees: ``writable`` folders (in the sandbox; all on its one in-memory file system, as ``/tmp`` and
    ``/dev/shm`` are); ``read_only`` pairs (path here, path in the sandbox); ``hidden_files`` and
    ``hidden_folders``: paths in the sandbox shown empty (``/dev/null``, an empty tmpfs); ``env``, the whole
    environment; ``cwd``, its working folder."""

    writable: list[str] = field(default_factory=list)
    read_only: list[tuple[Path, str]] = field(default_factory=list)
    hidden_files: list[str] = field(default_factory=list)
    hidden_folders: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "/"


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its exit status (negative: the signal that killed it), whether the time limit stopped it,
    its wall and CPU seconds (of all its processes), and what the kernel counted for it where a cgroup held it
    (``counted``: see :meth:`sandbox_cgroup.RunGroup.stats`; empty otherwise); ``bounds``, which bounds held and
    how (:func:`bounds`); ``uid``, the program's uid on the machine."""

    status: int
    timed_out: bool
    seconds: float
    cpu_seconds: float
    counted: dict
    bounds: dict
    uid: int


def _as_root() -> bool:
    return os.geteuid() == 0


@dataclass
class Box:
    """A root grader's box: number ``number`` of the pool, its uids and gid, the lock that makes it this process's
    alone (held open as ``lock``), the empty folder its file system is mounted on, and its cgroup if any."""

    number: int
    lock: int
    group: sandbox_cgroup.RunGroup | None = None

    @property
    def runner_uid(self) -> int:
        return SANDBOX_UID + 2 * self.number

    @property
    def uid(self) -> int:  # the program's, and the gid of both
        return SANDBOX_UID + 2 * self.number + 1

    @property
    def folder(self) -> Path:
        return BOXES / f"box-{self.number}"

    def note(self) -> None:
        """Record in the lock file the cgroups of the box, so that whoever takes it next removes them should this
        grader die before it does."""
        folders = [str(f) for f in self.group.folders.values()] if self.group else []
        os.ftruncate(self.lock, 0)
        os.pwrite(self.lock, json.dumps({"cgroups": folders}).encode(), 0)


def _boxes_folder() -> Path:
    """:data:`BOXES`, made if need be: a folder of root's that only root can enter, not a link."""
    BOXES.parent.mkdir(parents=True, exist_ok=True)
    try:
        BOXES.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(BOXES)
    if not (os.path.isdir(BOXES) and not os.path.islink(BOXES) and info.st_uid == 0 and info.st_mode & 0o077 == 0):
        raise RuntimeError(f"{BOXES} is not a folder of root's closed to others; remove it.")
    return BOXES


def _take_box() -> Box:
    """The first box of the pool no grader process of the machine holds, locked, emptied of what a grader that died
    holding it left (processes, cgroups)."""
    folder = _boxes_folder()
    for number in range(POOL):
        fd = os.open(folder / f"box-{number}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        box = Box(number, fd)
        box.folder.mkdir(mode=0o700, exist_ok=True)
        _kill_uids({box.runner_uid, box.uid})
        try:
            left = json.loads(os.pread(fd, 65536, 0) or b"{}").get("cgroups", [])
        except ValueError:
            left = []
        for path in left:
            sandbox_cgroup.remove_folder(Path(path))
        return box
    raise RuntimeError(f"All {POOL} sandbox boxes of this machine are in use; wait for a grader to finish.")


def _release_box(box: Box) -> None:
    _kill_uids({box.runner_uid, box.uid})
    if box.group:
        box.group.remove()
    box.group = None
    box.note()
    os.close(box.lock)  # the lock goes with it


def _kill_uids(uids: set[int], rounds: int = 100) -> None:
    """SIGKILL every process of the machine whose real, effective or saved uid is in ``uids``, until none is left
    (stopped and traced processes die too; one forked meanwhile is found in the next round)."""
    for _ in range(rounds):
        found = False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                ids = {int(x) for x in status.split("\nUid:", 1)[1].split()[:3]}
                if ids & uids:
                    fd = os.pidfd_open(int(pid))
                    try:
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
                        found = True
                    finally:
                        os.close(fd)
            except (OSError, IndexError, ValueError):
                continue
        if not found:
            return
        time.sleep(0.01)


@contextmanager
def _box(limits: Limits):
    """A box for one run (root) or None (not root), with its cgroup where the machine lends one."""
    if not _as_root():
        yield None
        return
    box = _take_box()
    try:
        if sandbox_cgroup.unavailable() is None:
            box.group = sandbox_cgroup.RunGroup.create(f"socm-grade-box{box.number}", limits.memory_mb,
                                                       limits.processes, limits.cores)
        box.note()
        yield box
    finally:
        _release_box(box)


def _system() -> list[tuple[str, str]]:
    """The system's programs and libraries and Python's installation, read-only: ``(path, path)`` pairs; the
    top-level links of a merged-/usr system (``/bin -> usr/bin``) as ``("link:" + target, path)`` entries."""
    mounts = [("/usr", "/usr")]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            mounts.append(("link:" + os.readlink(top), top))
        elif os.path.isdir(top):
            mounts.append((top, top))
    mounts += [(p, p) for p in ETC if os.path.exists(p)]
    installed = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, installed}
    for prefix in sorted(python):
        if not any(prefix == m or prefix.startswith(m.rstrip("/") + "/") for _, m in mounts):
            mounts.append((prefix, prefix))
    return mounts


def _parents(path: str, made: set[str], covered: list[str]) -> list[str]:
    """``--dir`` options (mode 0755) for the folders above ``path`` that bwrap would otherwise create itself (bwrap
    0.8 creates them 0700, closed to the sandbox's user), except those inside a read-only mount."""
    options, parts = [], Path(path).parts[1:-1]
    for k in range(1, len(parts) + 1):
        folder = "/" + "/".join(parts[:k])
        if folder in made or any(folder == c or folder.startswith(c + "/") for c in covered):
            continue
        made.add(folder)
        options += ["--perms", "0755", "--dir", folder]
    return options


def _writable(layout: Layout) -> tuple[list[str], list[str]]:
    """The writable folders: those at the top (each a mount) and all of them, parents first."""
    every = sorted(set(layout.writable) | {"/tmp", "/dev/shm"}, key=lambda p: (p.count("/"), p))
    top = [p for p in every if not any(p.startswith(q.rstrip("/") + "/") for q in every if q != p)]
    return top, every


def _init(limits: Limits, box: Box | None) -> list[str]:
    mb = 2**20
    cmd = [PYTHON, "-E", "-s", f"{GRADER_DIR}/{INIT.name}",
           f"--limits={limits.cpu_seconds},{limits.memory_mb * mb},{limits.processes},{limits.file_size_mb * mb}"]
    if box is not None:
        cmd.append(f"--ids={box.runner_uid},{box.uid},{box.uid}")
    return cmd + ["--"]


def command(layout: Layout, limits: Limits, argv: list[str], box: Box | None) -> list[str]:
    """The command line that runs ``argv`` in the sandbox described in the module's docstring, in ``box`` (a root
    grader's) or as the caller in a user namespace (``box`` None)."""
    cmd = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--hostname", "sandbox", "--die-with-parent", "--new-session", "--clearenv"]
    if box is not None:  # privileged bwrap, no user namespace; the init drops to the box's uids
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        cmd += ["--unshare-user", "--disable-userns", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    top, every = _writable(layout)
    # the private /proc, /dev and writable folders first: a venv or a checkout that lives under /tmp here is mounted
    # into the fresh /tmp below, not hidden by it
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    for folder in top:
        if box is not None:
            cmd += ["--bind", f"{box.folder}{folder}", folder]
        else:
            cmd += ["--size", str(limits.disk_mb * 2**20), "--tmpfs", folder]
    if box is None:
        for folder in every:
            if folder not in top:
                cmd += ["--perms", "0755", "--dir", folder]
    made, read_only = {"/proc", "/dev", *every}, []
    system = _system() + [(str(p), f"{GRADER_DIR}/{p.name}") for p in INIT_FILES]
    for source, dest in system + [(str(s), d) for s, d in layout.read_only]:
        if source.startswith("link:"):
            cmd += ["--symlink", source[5:], dest]
        else:
            cmd += _parents(dest, made, read_only) + ["--ro-bind", source, dest]
            read_only.append(dest)
    for dest in layout.hidden_files:
        cmd += ["--ro-bind", "/dev/null", dest]
    for dest in layout.hidden_folders:
        cmd += ["--tmpfs", dest]
    for name, value in layout.env.items():
        cmd += ["--setenv", name, value]
    cmd += ["--chdir", layout.cwd, "--", *_init(limits, box), *argv]
    if box is None:
        return cmd
    options = (f"size={limits.disk_mb}m,nr_inodes={limits.files},mode=0755,uid={box.uid},gid={box.uid},"
               "nosuid,nodev")
    groups = box.group.procs() if box.group else []
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", PREPARE, "sandbox",
            str(box.folder), options, f"{box.uid}:{box.uid}", *groups, "--", *every, "--", *cmd]


_running: dict[int, int] = {}  # pidfd of each running sandbox's first process, by the bwrap's pid
_running_lock = threading.Lock()


def stop_all() -> None:
    """Kill every sandbox this process runs (each one's namespace ends with its first process)."""
    with _running_lock:
        for pidfd in _running.values():
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass


def run(layout: Layout, limits: Limits, argv: list[str], timeout: float, pass_fds: tuple[int, ...] = ()) -> Outcome:
    """Run ``argv`` in a sandbox (:func:`command`) with ``pass_fds`` open in it; past ``timeout`` seconds kill it
    whole. Returns how it ended, once no process of it is left."""
    with _box(limits) as box:
        cmd = command(layout, limits, argv, box)
        start = time.perf_counter()
        info_read, info_write = os.pipe()
        at = cmd.index("bwrap")
        process = subprocess.Popen([*cmd[:at + 1], "--info-fd", str(info_write), *cmd[at + 1:]],
                                   pass_fds=[info_write, *pass_fds], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={"PATH": TOOLS_PATH}, umask=0o022)
        os.close(info_write)
        pidfd = _first_process(info_read, timeout)
        if pidfd is not None:
            with _running_lock:
                _running[process.pid] = pidfd
        timed_out = False
        try:
            while True:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    break
                if not timed_out and time.perf_counter() - start > timeout:
                    timed_out = True
                    if pidfd is not None:
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)  # the namespace ends with it
                    else:
                        process.kill()
                time.sleep(0.05)
        finally:
            if pidfd is not None:
                with _running_lock:
                    del _running[process.pid]
                os.close(pidfd)
        seconds = time.perf_counter() - start
        counted = box.group.stats() if box and box.group else {}
        process.returncode = os.waitstatus_to_exitcode(status)
        cpu = counted.get("cpu_seconds")
        return Outcome(process.returncode, timed_out, seconds,
                       cpu if cpu is not None else usage.ru_utime + usage.ru_stime, counted,
                       bounds(limits, cgroup=bool(box and box.group), root=box is not None),
                       box.uid if box else os.geteuid())


def _first_process(info: int, timeout: float) -> int | None:
    """A pidfd of the sandbox's first process, from what bwrap writes to ``--info-fd`` once the sandbox is set up
    (None if it wrote nothing: it failed, and has ended)."""
    text = b""
    try:
        while len(text) < 65536 and select.select([info], [], [], timeout)[0]:
            chunk = os.read(info, 4096)
            if not chunk:
                break
            text += chunk
    finally:
        os.close(info)
    try:
        return os.pidfd_open(int(json.loads(text)["child-pid"]))
    except (ValueError, KeyError, TypeError, OSError):
        return None


def memory_per_run_mb(limits: Limits) -> int:
    """The most memory one run may take on this machine: its budget, plus its in-memory files where no cgroup counts
    them in its memory (one file system where the grader is root, three otherwise)."""
    root = _as_root()
    if root and sandbox_cgroup.unavailable() is None:
        return limits.memory_mb
    return limits.memory_mb + (1 if root else 3) * limits.disk_mb


def bounds(limits: Limits, cgroup: bool | None = None, root: bool | None = None) -> dict[str, str]:
    """Which bound holds on each resource of a run, and how, on this machine (``cgroup`` and ``root``: as a run had
    them; by default as a run would have them now). A sentence per resource; nothing is claimed that does not hold."""
    root = _as_root() if root is None else root
    if cgroup is None:
        cgroup = root and sandbox_cgroup.unavailable() is None
    why = "" if cgroup else f" (no cgroup: {sandbox_cgroup.unavailable() or 'none was made for this run'})"
    per_process = f"{limits.memory_mb} MB of private writable memory per process (RLIMIT_DATA)"
    said = {}
    if cgroup:
        said["memory"] = (f"{limits.memory_mb} MB for the whole run, all of its processes together, shared and "
                          "file-backed memory and its in-memory files included (cgroup v1 memory controller; the "
                          f"kernel's out-of-memory killer acts within the run); and {per_process}")
        said["processes"] = f"{limits.processes} processes and threads for the whole run (cgroup v1 pids controller)"
        said["cpu"] = (f"{limits.cores} core(s) at most for the whole run, however many processes or sessions it makes "
                       f"(cgroup v1 cpu quota), and {limits.cpu_seconds} CPU seconds per process (RLIMIT_CPU)")
    else:
        said["memory"] = (f"{per_process} only: shared mappings and in-memory files are not counted and processes "
                          f"are not summed{why}")
        owner = "the run's own uid" if root else "the grader's own uid, which a user namespace maps the run onto"
        said["processes"] = f"{limits.processes} processes and threads of {owner} (RLIMIT_NPROC){why}"
        said["cpu"] = (f"{limits.cpu_seconds} CPU seconds per process (RLIMIT_CPU); no share between runs is "
                       f"enforced: a run of many processes takes more of the cores{why}")
    if root:
        said["disk"] = (f"{limits.disk_mb} MB and {limits.files:,} files and folders for everything it writes "
                        "(/tmp, /dev/shm and its folders: one tmpfs in memory, gone with the run; nothing on the "
                        f"grader's disk); {limits.file_size_mb} MB per file (RLIMIT_FSIZE)")
        said["identity"] = ("two uids of its own, taken for this run alone from a pool of the machine under a lock "
                            f"(from {SANDBOX_UID}): the submission's, and its runner's, which the submission can "
                            "neither signal nor trace; no supplementary group, no capability; every process of both "
                            "uids killed when the run ends")
    else:
        said["disk"] = (f"{limits.disk_mb} MB in each of /tmp, /dev/shm and its folders (tmpfs in memory, gone with "
                        "the run; nothing on the grader's disk); files are not counted (only root can set that "
                        f"bound); {limits.file_size_mb} MB per file (RLIMIT_FSIZE)")
        said["identity"] = ("uid 65534 in a user namespace, which is the grader's own uid outside: the submission "
                            "and its runner share it (only a root grader can give them uids of their own)")
    said["end"] = ("its own PID namespace, whose first process dies with the grader: every process of the run ends "
                   "with it, however the grader ends")
    said["system calls"] = syscall_filter.description() + "; a new, empty session keyring"
    said["network"] = "a network namespace of its own: its own loopback, no socket of the machine reachable"
    return said


def unavailable() -> str | None:
    """What keeps this machine from isolating a run, in words (None when nothing does): a missing program or
    library, or a kernel that refuses bubblewrap's namespaces."""
    tools = {"bwrap": "bubblewrap", "unshare": "util-linux", "mount": "mount"}
    missing = [f"`{tool}` (Debian/Ubuntu package {package})" for tool, package in tools.items()
               if not shutil.which(tool)]
    if missing:
        return "Grading isolates each submission with bubblewrap, and this machine lacks " + ", ".join(missing) + "."
    refusal = syscall_filter.missing()
    if refusal:
        return refusal
    try:
        with _box(Limits()) as box:
            probe = command(Layout(), Limits(), ["/bin/true"], box)
            result = subprocess.run(probe, capture_output=True, text=True, timeout=120, env={"PATH": TOOLS_PATH})
    except (OSError, RuntimeError, subprocess.SubprocessError) as error:
        return f"Grading could not prepare a sandbox here ({type(error).__name__}: {str(error)[:300]})."
    if result.returncode != 0:
        said = (result.stderr.strip().splitlines() or ["no message"])[-1][:300]
        return (f"Grading isolates each submission with bubblewrap, which could not create its sandbox here ({said}). "
                "Unprivileged user namespaces may be disabled (sysctls user.max_user_namespaces, "
                "kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns), or, in a "
                "container, mounts refused; run the grader as root on the machine itself, or allow them.")
    return None
