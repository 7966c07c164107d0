"""Text a submission controls, made safe to print on a terminal, write in a log and store in a record that a web
page may show: :func:`safe` shows every control and format character escaped (so no escape sequence reaches a
terminal, no newline forges a line of a log, no bidirectional override reorders what is read), the bytes of a file
name that are not UTF-8 as ``\\xNN``, ``&``, ``<`` and ``>`` as HTML entities (so no tag of the student's is
rendered), and cuts the text to a stated length, looking at no more of it than that.
"""

from __future__ import annotations

import html
import os
import unicodedata

MAX_TEXT = 1000  # characters of one string in a record or on the terminal
UNSAFE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}  # controls, format (bidi), surrogates, private use, unassigned


def _shown(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a file name that is not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if unicodedata.category(char) in UNSAFE:
        return char.encode("unicode_escape").decode("ascii")
    return html.escape(char, quote=False)


def safe(text, limit: int = MAX_TEXT) -> str:
    """``text`` (a ``str``, or ``bytes`` of a file name) as safe, printable, HTML-escaped text of at most ``limit``
    characters, ``…`` ending it where it was cut."""
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    text = str(text)
    parts, size = [], 0
    for char in text:  # stops after at most limit + 1 characters: each is shown as one or more
        shown = _shown(char)
        if size + len(shown) > limit:
            while parts and size > limit - 1:
                size -= len(parts.pop())
            return "".join(parts) + "…"
        parts.append(shown)
        size += len(shown)
    return "".join(parts)


def safe_record(value, limit: int = MAX_TEXT):
    """A record (JSON data) with every string in it, keys included, made :func:`safe`."""
    if isinstance(value, str):
        return safe(value, limit)
    if isinstance(value, dict):
        return {safe(k, limit): safe_record(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_record(v, limit) for v in value]
    return value
