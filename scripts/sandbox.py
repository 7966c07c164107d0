"""Confine the calling process, and every process it starts, to a few folders: Linux's Landlock (kernel 5.13 or
newer, unprivileged; see the kernel's documentation, ``Documentation/userspace-api/landlock.rst``).

After :func:`confine`, files outside the listed folders can be neither read nor written, nor listed, and (Landlock's
own rule) no process outside the sandbox can be traced, which closes ``/proc/<pid>/mem``, ``environ`` and ``fd`` of
the grader that started it; from ABI 6 on, signals to processes outside it are refused too. It cannot be undone.
No Python package for Landlock is installed here, so the three system calls are made through ctypes.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

# system call numbers: the same on every architecture Linux added them for (x86-64, arm64, riscv, ...)
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1  # flag: return the ABI version
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
# filesystem rights, by the ABI that introduced them (include/uapi/linux/landlock.h)
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
ALL_FS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | (1 << 14) | (1 << 15)  # rights that apply to a file, not a folder
SCOPE_SIGNAL = 1 << 1  # ABI 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)


def _call(number, *args) -> int:
    result = _libc.syscall(number, *args)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"Landlock system call {number} failed: {os.strerror(err)}")
    return result


def abi() -> int:
    """The Landlock ABI version the kernel offers; 0 when it offers none (an old kernel, or Landlock disabled)."""
    result = _libc.syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(result, 0)


def confine(read: list[Path], write: list[Path]) -> int:
    """From now on this process and its children read only under ``read`` and ``write`` and write only under ``write``
    (folders or files; missing ones are skipped). Raises OSError when the kernel has no Landlock. Returns the ABI."""
    version = abi()
    if version < 1:
        raise OSError("this kernel offers no Landlock (Linux 5.13 or newer with Landlock enabled is needed)")
    handled = ALL_FS[max(v for v in ALL_FS if v <= version)]
    attr = _RulesetAttr(handled, 0, SCOPE_SIGNAL if version >= 6 else 0)
    size = 24 if version >= 6 else 8  # the struct's size for this ABI: fs only, or fs, net and scopes
    ruleset = _call(CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for paths, rights in ((read, EXECUTE | READ_FILE | READ_DIR), (write, handled)):
            for path in paths:
                if not os.path.exists(path):
                    continue
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                try:
                    allowed = rights if os.path.isdir(path) else rights & FILE_ONLY
                    rule = _PathBeneath(allowed, fd)
                    _call(ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule),
                          ctypes.c_uint32(0))
                finally:
                    os.close(fd)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        _call(RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return version
