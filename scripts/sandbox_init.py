"""The first program of a sandbox (scripts/sandbox.py): it sets the run's limits and identity, then becomes the
program the run is for.

    python -E -s sandbox_init.py --limits CPU,DATA,NPROC,FSIZE [--ids RUNNER_UID,PROGRAM_UID,GID] -- PROGRAM ARGS...

In order: the limits of every process of the run (``setrlimit``: CPU seconds, bytes of writable memory, processes
and threads of its user, bytes of one file, no core file); where it runs as root (a root grader), no supplementary
group, group ``GID``, and the user ids that keep the program out of reach of what it starts: real uid
``RUNNER_UID``, effective (and, after ``exec``, saved) uid ``PROGRAM_UID``, no capability left; the program then sets
its saved uid back to ``RUNNER_UID`` and starts what it runs under ``PROGRAM_UID`` alone, which may then neither
signal it nor trace it (and a program whose real and effective uids differ is not dumpable: its ``/proc`` files
are root's); a session keyring of its own, new and
empty (no key of the grader's session is reachable from it); then the system call filter
(scripts/syscall_filter.py), which also sets ``no_new_privs``. Only then ``exec``: nothing of the run is executed
before all of this holds.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import os
import resource
import sys

import syscall_filter

KEYCTL_JOIN_SESSION_KEYRING = 1


def _new_session_keyring() -> None:
    """Join a new anonymous session keyring (``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``)."""
    import pyseccomp

    libc = ctypes.CDLL(None, use_errno=True)
    number = pyseccomp.resolve_syscall(pyseccomp.system_arch(), "keyctl")
    if libc.syscall(ctypes.c_long(number), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None) < 0:
        if ctypes.get_errno() != errno.ENOSYS:  # a kernel without keyrings has none to keep apart
            raise OSError(ctypes.get_errno(), "could not join a new session keyring")


def enter(limits: list[int], ids: list[int] | None) -> None:
    cpu, data, nproc, fsize = limits
    for kind, value in ((resource.RLIMIT_CPU, (cpu, cpu + 5)), (resource.RLIMIT_DATA, (data, data)),
                        (resource.RLIMIT_NPROC, (nproc, nproc)), (resource.RLIMIT_FSIZE, (fsize, fsize)),
                        (resource.RLIMIT_CORE, (0, 0))):
        resource.setrlimit(kind, value)
    if ids:
        runner, program, group = ids
        os.setgroups([])
        os.setresgid(group, group, group)
        os.setresuid(runner, program, runner)  # leaving uid 0 clears every capability
    _new_session_keyring()
    syscall_filter.load()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limits", required=True, help="CPU seconds, data bytes, processes, file bytes")
    parser.add_argument("--ids", help="runner uid, program uid, gid (as root only)")
    parser.add_argument("program", nargs="+")
    args = parser.parse_args(argv)
    enter([int(x) for x in args.limits.split(",")], [int(x) for x in args.ids.split(",")] if args.ids else None)
    os.execv(args.program[0], args.program)


if __name__ == "__main__":
    sys.exit(main())
