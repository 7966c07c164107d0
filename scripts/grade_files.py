"""The grader's files, as an instructor expects them whatever the students named theirs: which arguments are
submissions, how a submission is opened, where its record goes and how it is written.

* An argument that names an existing file is a submission, never an option, however it starts (a student's
  ``--key=zz-key.ipynb`` or ``-x.ipynb`` in ``grade.py *.ipynb``); ``--`` ends the options as usual.
* A submission is opened folder by folder below the submissions' common folder, no link followed: a link anywhere
  on that path (``mallory/notebooks -> ../alice/notebooks``) or a notebook that is a link gets a record saying so.
* Records never collide: each is named after the submission's path below the common folder (``alice/nb01.ipynb``
  -> ``alice/nb01.json``), distinct submissions always get distinct names (``alice`` and ``alice.ipynb`` too), any
  file name the file system allows (not UTF-8, 255 bytes) gets one, cut short with a hash where it would be too long.
* The records' folder may not be inside the submissions' folder nor hold it, and a record is written folder by
  folder below it, no link followed, atomically (a temporary file, then a rename that replaces a link rather than
  writing through it).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

MAX_NAME = 255  # bytes of a file name


class Unreadable(Exception):
    """A submission that cannot be graded, with the reason in words (never its content: that could be anything)."""


def split_arguments(argv: list[str], takes_value: set[str]) -> list[str]:
    """``argv`` rearranged for argparse: the options (those of ``takes_value`` with their value), then ``--``, then
    every other argument; an argument that names an existing file or folder is never an option."""
    options, paths, k = [], [], 0
    while k < len(argv):
        token = argv[k]
        if token == "--":
            paths += argv[k + 1:]
            break
        if token.startswith("-") and token != "-" and not os.path.lexists(token):
            options.append(token)
            if token in takes_value and k + 1 < len(argv):
                options.append(argv[k + 1])
                k += 1
        else:
            paths.append(token)
        k += 1
    return [*options, "--", *paths]


def common_folder(submissions: list[Path]) -> Path:
    """The folder all submissions are below (their paths as given, made absolute, no link resolved)."""
    return Path(os.path.commonpath([os.path.dirname(os.path.abspath(s)) for s in submissions]))


def open_submission(path: Path, top: Path) -> int:
    """A descriptor of the submission ``path``, opened from ``top`` (the common folder) one folder at a time, no
    link followed; a regular file. Raises :class:`Unreadable` saying why not."""
    parts = Path(os.path.relpath(os.path.abspath(path), top)).parts
    if not parts or parts[0] == "..":
        raise Unreadable("it is not below the submissions' folder")
    try:
        folder = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        raise Unreadable(f"its folder could not be opened ({type(error).__name__})") from None
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            except OSError as error:
                link = _is_link(part, folder)
                raise Unreadable("a folder on its path is a link" if link else
                                 f"a folder on its path could not be opened ({type(error).__name__})") from None
            os.close(folder)
            folder = inner
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
        except OSError as error:
            raise Unreadable("it is a link, not a file" if _is_link(parts[-1], folder) else
                             f"it could not be opened ({type(error).__name__})") from None
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Unreadable("it is not a regular file")
    return fd


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode)
    except OSError:
        return False


def _fitting(name: str, suffix: str) -> str:
    """``name + suffix``, or, where that is longer than a file name may be, a cut ``name`` with a hash of it."""
    if len(os.fsencode(name + suffix)) <= MAX_NAME:
        return name + suffix
    digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:12]
    return os.fsdecode(os.fsencode(name)[:MAX_NAME - len(suffix) - 14]) + f"~{digest}" + suffix


def record_names(submissions: list[Path]) -> dict[Path, Path]:
    """Each submission's record, a path relative to the records' folder: its path below the submissions' common
    folder, ``.ipynb`` replaced by ``.json`` (any other name gets ``.json`` added); where two would collide, or a
    record would stand where another needs a folder, the later one gets ``~2``, ``~3``... before ``.json``."""
    top = common_folder(submissions)
    names, files, folders = {}, set(), set()
    for submission in submissions:
        relative = Path(os.path.relpath(os.path.abspath(submission), top))
        stem = relative.name[:-6] if relative.name.endswith(".ipynb") else relative.name
        parent, k = relative.parent, 1
        while True:
            name = parent / _fitting(stem if k == 1 else f"{stem}~{k}", ".json")
            clash = name in files or name in folders or any(p in files for p in name.parents)
            if not clash:
                break
            k += 1
        names[submission] = name
        files.add(name)
        folders.update(name.parents)
    return names


def check_out(out: Path, submissions: list[Path]) -> None:
    """Raise ValueError if the records' folder ``out`` is inside the submissions' common folder or holds it."""
    records, top = os.path.realpath(out), os.path.realpath(common_folder(submissions))
    inside = os.path.commonpath([records, top])
    if inside in (records, top):
        raise ValueError(f"--out {os.fsencode(out)!r} and the submissions' folder {os.fsencode(top)!r} are one inside "
                         "the other: a submission could plant links where records are written. Give a folder of its "
                         "own for the records.")


def write_record(out: Path, name: Path, text: str) -> Path:
    """Write ``text`` to ``out/name`` (UTF-8), making its folders, following no link below ``out``: atomically, by a
    temporary file renamed over the record (a link there is replaced, never written through)."""
    out.mkdir(parents=True, exist_ok=True)
    folder = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in name.parts[:-1]:
            try:
                os.mkdir(part, 0o755, dir_fd=folder)
            except FileExistsError:
                pass
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        temporary = f".{hashlib.sha256(os.fsencode(name.name)).hexdigest()[:16]}.{os.getpid()}.part"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644, dir_fd=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, name.name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        os.close(folder)
    return out / name
