"""A control group for one graded run (cgroup v1, as this machine and CI mount it): the kernel then counts and
bounds the run as a whole, all of its processes together, whatever each one does.

* ``memory``: the run's memory budget (``memory.limit_in_bytes``, and ``memory.memsw.limit_in_bytes`` where swap is
  accounted): anonymous, shared and file-backed pages, the files of its in-memory folders (tmpfs) and the kernel's
  memory for them (inodes) are all charged to it; past the budget the kernel reclaims what it can and then kills a
  process of the run (its out-of-memory killer, within the group);
* ``pids``: processes and threads of the run (``pids.max``);
* ``cpu``: the cores the run may use at once (``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``); runs share the
  machine by group, not by process, so forking or ``setsid`` buys a run no more of it;
* ``cpuacct``: the CPU time of every process of the run (``cpuacct.usage``).

Each group is made below the grader's own group in its hierarchy (never moving anything of the machine's out of
its place), named after the run's box (scripts/sandbox.py), which one grader on the machine holds at a time.
Where a hierarchy is missing, read-only or not ours (a container, a grader that is not root, a machine with only
cgroup v2 mounted), :func:`unavailable` says why, and the sandbox says which other bound holds instead.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
PERIOD_US = 100_000


def _unescape(path: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def _mounts() -> dict[str, Path]:
    """Each controller of :data:`CONTROLLERS` mounted as cgroup v1: its mount point (from ``/proc/self/mountinfo``)."""
    found = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] != "cgroup":
            continue
        for option in tail[2].split(","):
            if option in CONTROLLERS:
                found.setdefault(option, Path(_unescape(fields[4])))
    return found


def _own() -> dict[str, str]:
    """This process's group in each v1 hierarchy (``/proc/self/cgroup``), by controller."""
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            own[controller] = path
    return own


def _write(path: Path, value) -> None:
    with open(path, "w") as file:
        file.write(str(value))


def _read_int(path: Path, key: str | None = None) -> int | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    if key is None:
        return int(text.split()[0])
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return None


@dataclass
class RunGroup:
    """The groups of one run, one folder per controller."""

    folders: dict[str, Path]

    @classmethod
    def create(cls, name: str, memory_mb: int, processes: int, cores: int) -> "RunGroup":
        """Make the groups ``name`` with the run's bounds (an empty group of that name, left by a grader that died, is
        removed first); raises OSError where a hierarchy refuses."""
        mounts, own = _mounts(), _own()
        missing = [c for c in CONTROLLERS if c not in mounts or c not in own]
        if missing:
            raise OSError(f"no cgroup v1 hierarchy of {', '.join(missing)} is mounted")
        folders = {c: mounts[c] / own[c].lstrip("/") / name for c in CONTROLLERS}
        group = cls(folders)
        try:
            for folder in dict.fromkeys(folders.values()):
                remove_folder(folder)
                folder.mkdir()
            memory = folders["memory"]
            _write(memory / "memory.limit_in_bytes", memory_mb * 2**20)
            if (memory / "memory.memsw.limit_in_bytes").exists():
                _write(memory / "memory.memsw.limit_in_bytes", memory_mb * 2**20)
            _write(folders["pids"] / "pids.max", processes)
            _write(folders["cpu"] / "cpu.cfs_period_us", PERIOD_US)
            _write(folders["cpu"] / "cpu.cfs_quota_us", cores * PERIOD_US)
        except OSError:
            group.remove()
            raise
        return group

    def procs(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes its pid to, to enter the run's groups."""
        return [str(folder / "cgroup.procs") for folder in dict.fromkeys(self.folders.values())]

    def pids(self) -> set[int]:
        found = set()
        for folder in dict.fromkeys(self.folders.values()):
            try:
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return found

    def stats(self) -> dict:
        """What the kernel counted for the run: its peak memory (MB), how often the out-of-memory killer acted,
        whether the CPU quota held it back, its CPU seconds, and forks refused at the process limit."""
        memory, cpu = self.folders["memory"], self.folders["cpu"]
        peak = _read_int(memory / "memory.max_usage_in_bytes")
        usage = _read_int(self.folders["cpuacct"] / "cpuacct.usage")
        return {"memory_peak_mb": None if peak is None else round(peak / 2**20),
                "oom_kills": _read_int(memory / "memory.oom_control", "oom_kill"),
                "memory_failures": _read_int(memory / "memory.failcnt"),
                "cpu_throttled": _read_int(cpu / "cpu.stat", "nr_throttled"),
                "cpu_seconds": None if usage is None else usage / 1e9,
                "forks_refused": _read_int(self.folders["pids"] / "pids.events", "max")}

    def remove(self) -> None:
        """Remove the groups (each empty by then; a process still exiting delays it a little)."""
        for folder in dict.fromkeys(self.folders.values()):
            remove_folder(folder)


def remove_folder(folder: Path) -> None:
    for _ in range(50):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


@lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why no run's group can be made here, in words (None when one can): tried once, with a group made and removed."""
    if os.geteuid() != 0:
        return "the grader is not root, and only root may make groups in the machine's cgroup hierarchies"
    try:
        RunGroup.create(f"socm-grade-probe-{os.getpid()}", 64, 8, 1).remove()
    except (OSError, ValueError) as error:
        return f"no cgroup could be made ({type(error).__name__}: {str(error)[:200]})"
    return None
