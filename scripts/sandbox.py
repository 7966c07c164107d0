"""Run a program alone on the machine, as a container would run it, without a container daemon: bubblewrap
(Debian's package ``bubblewrap``, the ``bwrap`` command) gives it namespaces of its own, and util-linux's
``setpriv`` and ``prlimit`` an unprivileged user and limits.

What the program and everything it starts get (see :func:`command`):

* its own network namespace, with a loopback of its own and no other interface: no socket of the machine is
  reachable, TCP or UDP on any address, named Unix sockets (none is mounted) or abstract ones;
* its own PID namespace, of which the program is process 1 (``--as-pid-1``): when it ends, the kernel kills every
  process left in the namespace, detached or not, before ``bwrap`` returns. Should the caller die, ``bwrap`` dies
  with it (``--die-with-parent``), and so does the program, by the same signal when it runs under the caller's
  own uid; under another uid (a root caller's, below) that signal is not allowed, so the program's standard input
  is a pipe whose writing end only the caller holds, and the program ends when it reads its end;
* its own IPC, UTS and (where the kernel allows) cgroup namespaces, a private ``/dev`` (no terminal of the
  machine), ``/dev/shm``, ``/tmp`` and ``/proc``, and a new session (``--new-session``): no controlling terminal;
* a file system of its own: the system's programs and libraries (``/usr``), Python's installation and the virtual
  environment, read-only; a few files of ``/etc`` the dynamic loader needs; the caller's read-only and hidden paths;
  one folder of the caller's, writable. Nothing else of the machine (homes, ``/run``, ``/var``, ``/etc/shadow``);
* an environment built from nothing (``--clearenv``) but the caller's variables;
* an unprivileged user and group: uid and gid 65534 (``nobody``) in a user namespace of its own when the caller
  is not root; when the caller is root (as in Docker and CI), where a user namespace would map the sandbox onto
  root itself, ``bwrap`` runs privileged without one and ``setpriv`` drops to uid and gid
  :data:`SANDBOX_UID` plus the run's slot, with no supplementary group, no capability and no way to gain one:
  one uid per run at once, so that each run's process limit counts its own processes only;
* limits (``prlimit``) on CPU time per process, writable memory per process (``RLIMIT_DATA``, not the address space:
  the explorer's chart renderer, V8 in vl-convert, reserves gigabytes of addresses it never uses and dies under
  ``RLIMIT_AS``), processes and threads, and the size of one file,
  and a size for ``/tmp`` and ``/dev/shm``: a run that reaches one fails there, and the caller can say which.

The caller prepares the writable folder before the run and reads it after, as untrusted input. :func:`unavailable`
says, in words, what is missing on a machine where this cannot be had.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

NOBODY = 65534
#: The first uid (and gid) a root caller's runs get: systemd's list of uid ranges (systemd.io/UIDS-GIDS) leaves
#: 1879048192-2147483647 unused, so no account or container of the machine has processes under these uids.
SANDBOX_UID = 1_900_000_000
#: The files of /etc the dynamic loader and time functions read; nothing else of /etc is mounted.
ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")


@dataclass(frozen=True)
class Limits:
    """What one run may use. ``cpu_seconds`` bounds each process (the kernel sends SIGXCPU there, SIGKILL five
    seconds later), ``memory_mb`` each process's writable memory (``RLIMIT_DATA``: heap and private writable
    mappings, not the address ranges that V8 and PyTorch reserve and never touch), ``processes`` the processes and
    threads of the run, ``file_size_mb`` any file it writes, and the size of its ``/tmp`` and ``/dev/shm``."""

    cpu_seconds: int = 3600
    memory_mb: int = 8192
    processes: int = 256
    file_size_mb: int = 1024

    def prlimit(self) -> list[str]:
        mb = 1024 * 1024
        return ["prlimit", f"--cpu={self.cpu_seconds}:{self.cpu_seconds + 5}", f"--data={self.memory_mb * mb}",
                f"--nproc={self.processes}", f"--fsize={self.file_size_mb * mb}", "--core=0", "--"]


@dataclass
class Layout:
    """What a run sees: ``folder`` (the caller's) at ``mount``, writable; ``read_only`` pairs (path here, path in the
    sandbox); ``hidden_files`` and ``hidden_folders``: paths in the sandbox shown empty (``/dev/null``, an empty
    tmpfs); ``env``, the whole environment; ``cwd``, its working folder."""

    folder: Path
    mount: str
    read_only: list[tuple[Path, str]] = field(default_factory=list)
    hidden_files: list[str] = field(default_factory=list)
    hidden_folders: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "/"


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its exit status (negative: the signal that killed it), whether the time limit stopped it,
    its wall seconds, and the CPU seconds of all its processes (those it waited for and those the end of its
    namespace killed)."""

    status: int
    timed_out: bool
    seconds: float
    cpu_seconds: float


def _as_root() -> bool:
    return os.geteuid() == 0


def uid(slot: int) -> int:
    """The uid (here, on the machine) of the run in ``slot``."""
    return SANDBOX_UID + slot if _as_root() else os.geteuid()


def _system() -> list[tuple[str, str]]:
    """The system's programs and libraries and Python's installation, read-only: ``(path, path)`` pairs; the
    top-level links of a merged-/usr system (``/bin -> usr/bin``) as ``("link", target)`` entries."""
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


def command(layout: Layout, limits: Limits, argv: list[str], slot: int = 0) -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` in the sandbox described in the module's docstring."""
    size = str(limits.file_size_mb * 1024 * 1024)
    cmd = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--hostname", "sandbox", "--die-with-parent", "--as-pid-1", "--new-session", "--clearenv"]
    if _as_root():  # privileged bwrap, no user namespace; setpriv below drops to the run's uid
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        cmd += ["--unshare-user", "--disable-userns", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    # the private /proc, /dev, /dev/shm and /tmp first: a venv or a checkout that lives under /tmp here is mounted
    # into the fresh /tmp below, not hidden by it
    cmd += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--size", size,
            "--tmpfs", "/tmp"]
    made, read_only = {"/proc", "/dev", "/dev/shm", "/tmp"}, []
    for source, dest in _system():
        if source.startswith("link:"):
            cmd += ["--symlink", source[5:], dest]
        else:
            cmd += _parents(dest, made, read_only) + ["--ro-bind", source, dest]
            read_only.append(dest)
    cmd += _parents(layout.mount, made, read_only) + ["--bind", str(layout.folder), layout.mount]
    for source, dest in layout.read_only:
        cmd += _parents(dest, made, read_only) + ["--ro-bind", str(source), dest]
        read_only.append(dest)
    for dest in layout.hidden_files:
        cmd += ["--ro-bind", "/dev/null", dest]
    for dest in layout.hidden_folders:
        cmd += ["--tmpfs", dest]
    for name, value in layout.env.items():
        cmd += ["--setenv", name, value]
    cmd += ["--chdir", layout.cwd, "--"]
    if _as_root():
        cmd += ["setpriv", f"--reuid={uid(slot)}", f"--regid={uid(slot)}", "--clear-groups", "--"]
    return cmd + limits.prlimit() + argv


def run(cmd: list[str], timeout: float) -> Outcome:
    """Run a :func:`command`; past ``timeout`` seconds kill its process 1 (and with it the whole namespace)."""
    start = time.perf_counter()
    info_read, info_write = os.pipe()
    process = subprocess.Popen([*cmd[:1], "--info-fd", str(info_write), *cmd[1:]], pass_fds=[info_write],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={"PATH": "/usr/bin:/bin"}, umask=0o022)
    os.close(info_write)
    pidfd = _first_process(info_read, timeout)
    timed_out = False
    try:
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if not timed_out and time.perf_counter() - start > timeout:
                timed_out = True
                if pidfd is not None:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)  # process 1: the namespace ends with it
                else:
                    process.kill()
            time.sleep(0.1)
    finally:
        if pidfd is not None:
            os.close(pidfd)
        process.stdin.close()  # the run's lifeline: closed, it ends the run if it is still there
    process.returncode = os.waitstatus_to_exitcode(status)
    return Outcome(process.returncode, timed_out, time.perf_counter() - start,
                   usage.ru_utime + usage.ru_stime)


def _first_process(info: int, timeout: float) -> int | None:
    """A pidfd of the sandbox's process 1, from what bwrap writes to ``--info-fd`` once the sandbox is set up
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


def unavailable() -> str | None:
    """What keeps this machine from isolating a run, in words (None when nothing does): a missing program, or a
    kernel that refuses bubblewrap's namespaces."""
    tools = {"bwrap": "bubblewrap", "prlimit": "util-linux", "setpriv": "util-linux"}
    missing = [f"`{tool}` (Debian/Ubuntu package {package})" for tool, package in tools.items() if not shutil.which(tool)]
    if missing:
        return "Grading isolates each submission with bubblewrap, and this machine lacks " + ", ".join(missing) + "."
    with tempfile.TemporaryDirectory() as folder:
        probe = command(Layout(folder=Path(folder), mount="/probe"), Limits(), ["true"])
        result = subprocess.run(probe, capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    if result.returncode != 0:
        said = (result.stderr.strip().splitlines() or ["no message"])[-1][:300]
        return ("Grading isolates each submission with bubblewrap, which could not create its sandbox here "
                f"(bwrap said: {said}). Unprivileged user namespaces may be disabled (sysctls "
                "user.max_user_namespaces, kernel.unprivileged_userns_clone, "
                "kernel.apparmor_restrict_unprivileged_userns); run the grader as root, or allow them.")
    return None
