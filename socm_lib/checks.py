"""Input validation shared by every public function.

Each check turns a bad argument into a ``TypeError`` or ``ValueError`` whose
message says what was wrong and what to do, so that a reader never meets a
silent NaN or a traceback from deep inside torch.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import sys
import unicodedata
from collections.abc import Iterator, Mapping, Sequence, Set
from pathlib import Path

import numpy as np
import torch

from .config import get_config


class ModelUnavailableError(OSError):
    """A model could not be loaded here (typically: not cached and no network). Importable from
    :mod:`socm_lib` and :mod:`socm_lib.encoders`; defined here, at the bottom, so that every layer can raise it."""


def as_bool(value, name: str) -> bool:
    """An on/off option: ``True`` or ``False`` (a numpy bool will do); anything else is refused, never read as truthy.

    ``"False"``, ``"no"``, ``0`` or ``None`` passed to an option such as ``trust_remote_code`` or ``normalize``
    would otherwise count by its truth value, silently the opposite of what was meant.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__}).")
    return bool(value)

def as_real_tensor(x, name: str, what: str = "a numpy array or torch tensor of real numbers") -> torch.Tensor:
    """``x`` (a numpy array or a torch tensor of real numbers) as a detached torch tensor, converted or refused at the
    door: an array in the other byte order (``'>f8'`` on a little-endian machine, as read from some files) is
    converted to this machine's; complex, object, text, masked, nested, quantized, sparse and ``meta`` inputs are
    refused with what to pass instead (``what`` says what is expected)."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name} is a numpy masked array, whose mask the library would ignore; drop the masked "
                        f"entries first and pass a plain array, e.g. {name}.data[~{name}.mask.any(axis=1)].")
    if isinstance(x, np.ndarray):
        if np.iscomplexobj(x):
            raise TypeError(f"{name} is complex; pass {what}.")
        if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
            raise TypeError(f"{name} has dtype {x.dtype}; pass {what}.")
        if x.dtype == np.longdouble and np.finfo(np.longdouble).bits > 64:
            raise TypeError(f"{name} has dtype {x.dtype} (numpy's long double), which torch cannot hold; pass "
                            f"{name}.astype(np.float64) (the library computes in float64).")
        if not x.dtype.isnative:  # torch holds native byte order only: convert, the values are the same
            x = x.astype(x.dtype.newbyteorder("="))
        try:
            return torch.from_numpy(np.ascontiguousarray(x))
        except TypeError:
            raise TypeError(f"{name} has dtype {x.dtype}, which torch cannot hold; pass {name}.astype(np.float64).") from None
    if isinstance(x, torch.Tensor):
        if x.is_nested:
            raise TypeError(f"{name} is a nested tensor, which holds several clouds of different lengths; pass them as "
                            f"a list of (n_i, d) tensors, {name}.unbind(), each one a cloud.")
        if x.is_quantized:
            raise TypeError(f"{name} is a quantized tensor ({x.dtype}), whose integers are not the embedding values; "
                            f"pass {name}.dequantize().")
        if x.is_complex():
            raise TypeError(f"{name} is complex; pass {what}.")
        if x.layout != torch.strided:
            raise TypeError(f"{name} is a sparse tensor ({x.layout}); pass {name}.to_dense().")
        if x.device.type == "meta":
            raise ValueError(f"{name} is on the 'meta' device: it has a shape but no values. Pass a tensor that "
                             "holds the values (on the CPU or a GPU).")
        return x.detach()
    raise TypeError(f"{name} is a {type(x).__name__}; pass {what}.")


def as_cloud(x, name: str = "cloud", compact: bool = False) -> torch.Tensor:
    """Return a token cloud ``X`` (shape ``(n, d)``) as a float64 CPU tensor.

    Accepts a numpy array or a torch tensor of real numbers (:func:`as_real_tensor`); rejects anything
    that is not two-dimensional, empty, complex or not finite. With ``compact=True`` a float32 or
    float64 cloud keeps its dtype (a CPU array or tensor is then not copied) and float16 / bfloat16
    become float32, which holds them exactly; other dtypes become float64 as before.
    """
    t = as_real_tensor(x, name, "a numpy array or torch tensor of shape (n_tokens, d), e.g. one element of the "
                                "list returned by token_embeddings(); token clouds are real-valued")
    if t.ndim != 2:
        hint = (
            " A 1-D array is a single vector: reshape it to (1, d) if it is one token."
            if t.ndim == 1
            else " For a batch of clouds pass a list of (n_i, d) arrays."
        )
        raise ValueError(f"{name} has shape {tuple(t.shape)}; a token cloud must be 2-D (n_tokens, d).{hint}")
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise ValueError(f"{name} has shape {tuple(t.shape)}; it needs at least one token and one dimension.")
    keep = {torch.float32: torch.float32, torch.float16: torch.float32, torch.bfloat16: torch.float32}
    t = t.to(device="cpu", dtype=keep.get(t.dtype, torch.float64) if compact else torch.float64)
    if not np.isfinite(t.numpy()).all():  # numpy's test: the same answer, at a fraction of the cost on small clouds
        bad = int((~torch.isfinite(t)).any(dim=1).nonzero()[0, 0])
        raise ValueError(
            f"{name} contains NaN or inf (first at token {bad}); check the encoder output or the data "
            "that produced it before computing statistics."
        )
    return t


def as_clouds(clouds, name: str = "clouds", compact: bool = False) -> list[torch.Tensor]:
    """Validate a list of token clouds that share the embedding dimension ``d`` (``compact``: as for :func:`as_cloud`)."""
    if isinstance(clouds, torch.Tensor) and clouds.is_nested:
        raise TypeError(f"{name} is a nested tensor; pass its clouds as a list of (n_i, d) tensors: {name}.unbind().")
    if isinstance(clouds, (np.ndarray, torch.Tensor)):
        raise TypeError(
            f"{name} is a single {type(clouds).__name__} of shape {tuple(clouds.shape)}; pass a list of "
            "(n_i, d) arrays, one per text (for a stacked (N, n, d) array use list(array))."
        )
    if isinstance(clouds, Iterator):  # generators are accepted for clouds, texts and pairs alike
        clouds = list(clouds)
    if not isinstance(clouds, Sequence) or isinstance(clouds, (str, bytes)):
        raise TypeError(f"{name} must be a list of (n_i, d) arrays, got {type(clouds).__name__}.")
    if len(clouds) == 0:
        raise ValueError(f"{name} is empty; pass at least one token cloud.")
    out = [as_cloud(c, f"{name}[{k}]", compact) for k, c in enumerate(clouds)]
    d0 = out[0].shape[1]
    for k, c in enumerate(out):
        if c.shape[1] != d0:
            raise ValueError(
                f"{name}[{k}] has d = {c.shape[1]} but {name}[0] has d = {d0}; all clouds must come from "
                "the same encoder and layer."
            )
    return out


def as_pairs(pairs, n_clouds: int) -> np.ndarray:
    """Validate index pairs ``(i, j)`` into a list of ``n_clouds`` clouds; returns an int64 ``(P, 2)`` array."""
    if isinstance(pairs, Iterator):
        pairs = list(pairs)
    try:
        arr = np.asarray(pairs)
    except Exception as exc:  # ragged input
        raise TypeError(f"pairs must be a sequence of (i, j) index pairs: {exc}") from None
    if arr.size == 0:
        raise ValueError("pairs is empty; pass at least one (i, j) pair, or pairs=None for all pairs i < j.")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"pairs has shape {arr.shape}; expected (P, 2) integer index pairs.")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"pairs has dtype {arr.dtype}; indices must be integers.")
    if arr.min() < 0 or arr.max() >= n_clouds:
        raise ValueError(f"pairs holds indices outside [0, {n_clouds - 1}] (there are {n_clouds} clouds).")
    return arr.astype(np.int64)


def as_values(values, name: str, *, minimum: int = 1) -> np.ndarray:
    """A sample of real numbers (a list, a numpy array, a pandas ``Series``, a torch tensor) as a 1-D float64 array
    of at least ``minimum`` finite values; anything else is refused with what to pass.

    Strings, complex numbers, objects that are not numbers, more than one dimension, NaN and inf are refused, never
    read as something else (a NaN would otherwise count as neither larger nor smaller than any value, and shift
    every rank statistic without a word).
    """
    if isinstance(values, (str, bytes, Mapping, Set)) or values is None:
        raise TypeError(f"{name} must be a list or 1-D array of numbers, got {type(values).__name__}.")
    if isinstance(values, torch.Tensor):
        if values.is_complex():
            raise TypeError(f"{name} holds complex numbers; pass real values.")
        values = values.detach().cpu()
        values = (values.double() if values.is_floating_point() else values).numpy()  # bfloat16 has no numpy twin
    if isinstance(values, Iterator):
        values = list(values)
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as exc:  # ragged nesting
        raise TypeError(f"{name} must be a 1-D sequence of numbers: {exc}") from None
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} holds complex numbers; pass real values.")
    if arr.dtype == object:
        for v in arr.ravel():
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name} holds {v!r} ({type(v).__name__}), which is not a number; pass real "
                                "values.")
        arr = arr.astype(np.float64)
    if arr.dtype == np.bool_:
        raise TypeError(f"{name} holds booleans; pass numbers (e.g. {name}.astype(float) for 0 and 1).")
    if not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} has dtype {arr.dtype}, not numbers; pass real values (convert text with float()).")
    if arr.ndim != 1:
        raise ValueError(f"{name} has shape {arr.shape}; pass a 1-D sample (one value per item).")
    if arr.size < minimum:
        if arr.size == 0:
            raise ValueError(f"{name} is empty; pass at least {'one value' if minimum == 1 else f'{minimum} values'}.")
        raise ValueError(f"{name} holds {arr.size} value(s); at least {minimum} are needed.")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        first = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} holds NaN or inf (first at position {first}: {arr[first]}); drop or repair "
                         "those values first.")
    return arr


def text_form(text: str) -> str:
    """The form in which the library compares, de-duplicates and matches texts: Unicode NFC (a precomposed
    ``é`` and ``e`` + combining acute are one spelling) with every run of whitespace, a no-break space included,
    read as one space and none at the ends.

    Two texts with the same form look the same to a reader; the texts measured are the ones given, this form only
    decides which of them are the same text.
    """
    if not isinstance(text, str):
        raise TypeError(f"text_form compares strings, got {type(text).__name__}.")
    return " ".join(unicodedata.normalize("NFC", text).split())


def distinct_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` without repeats by :func:`text_form`, each text's first spelling kept, in order."""
    first: dict[str, str] = {}
    for t in texts:
        first.setdefault(text_form(t), t)
    return list(first.values())


#: A lone surrogate code point (U+D800 to U+DFFF): half of a UTF-16 pair, not a character.
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_visible_character(text: str) -> bool:
    """Whether ``text`` holds a character a reader can see: one that is not whitespace or another separator
    (Unicode categories ``Z*``), a control character (``Cc``: NUL, DEL, ...), a format character (``Cf``: the
    zero-width space U+200B, the byte-order mark, ...), a surrogate or an unassigned code point.

    A text without one is empty to its reader, and a tokenizer turns it into special tokens only (or ``[UNK]``),
    so it is refused like an empty string.
    """
    return any(unicodedata.category(ch)[0] not in "ZC" or unicodedata.category(ch) == "Co" for ch in text)


def as_texts(texts, name: str = "texts") -> list[str]:
    """Validate a list of strings that each hold a visible character (:func:`has_visible_character`) and no lone
    surrogate (which no tokenizer can encode; it comes from bytes decoded with ``errors="surrogateescape"`` or a
    JSON escape such as ``"\\ud800"``): such a text is refused, not repaired, because any repair would change the
    text measured."""
    if isinstance(texts, str):
        raise TypeError(f"{name} is a single string; pass a list of texts, e.g. [{texts[:30]!r}].")
    if isinstance(texts, (Set, Mapping)):
        raise TypeError(f"{name} is a {type(texts).__name__}, which has no fixed order (a set's order changes with "
                        "the hash seed), so results could not be matched to texts; pass a list, e.g. "
                        f"sorted({name}) or list({name}.values()).")
    if isinstance(texts, Iterator) or not isinstance(texts, Sequence):
        try:
            texts = list(texts)
        except TypeError:
            raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__}.") from None
    if len(texts) == 0:
        raise ValueError(f"{name} is empty; pass at least one text.")
    for k, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{k}] is a {type(t).__name__}; every text must be a str.")
        bad = _SURROGATE.search(t)
        if bad:
            raise ValueError(f"{name}[{k}] holds a lone surrogate, U+{ord(bad.group()):04X} at character "
                             f"{bad.start()}: half of a UTF-16 pair, not a character, so no tokenizer can encode it. Repair the text "
                             "where it was read (decode its bytes as UTF-8 with errors='strict' or 'replace'; a pair "
                             "split in two: t.encode('utf-16', 'surrogatepass').decode('utf-16')).")
        if not has_visible_character(t):
            raise ValueError(f"{name}[{k}] is empty or whitespace only (no visible character: only spaces, control or "
                             "zero-width characters); remove it or replace it with real text.")
    return list(texts)


def as_device(device, name: str = "device") -> torch.device:
    """Validate a device up front: ``None`` (the GPU when one is present, else the CPU), ``"cpu"``, ``"cuda"``,
    ``"cuda:K"``, ``"mps"`` or a ``torch.device``.

    A GPU that this machine or this torch build does not have is refused here, with what to do, instead
    of failing later inside torch after minutes of work.
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{name} must be None, a string such as 'cpu' or 'cuda', or a torch.device; "
                        f"got {type(device).__name__}.")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(f"{name}={device!r} is not a device name; use 'cpu', 'cuda', 'cuda:0' or None "
                         "(the GPU when one is present).") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only torch build" if torch.version.cuda is None else f"torch built for CUDA {torch.version.cuda}, but no GPU is visible"
            raise ValueError(f"{name}={str(device)!r} asks for a CUDA GPU, but this machine has none ({build}, "
                             f"torch {torch.__version__}). Pass device='cpu' (or None to pick the GPU only "
                             "when one is present), or install a CUDA build of torch on a machine with a GPU.")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"{name}={str(device)!r}: there are only {torch.cuda.device_count()} CUDA device(s) "
                             f"(cuda:0 to cuda:{torch.cuda.device_count() - 1}).")
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"{name}={str(device)!r} asks for Apple's MPS GPU, which this machine or torch build "
                             "does not have; pass device='cpu' or None.")
    elif dev.type != "cpu":
        raise ValueError(f"{name}={str(device)!r}: only 'cpu', 'cuda' and 'mps' devices are supported.")
    return dev


#: The dtypes by name; a string option is spelled as one of these keys everywhere.
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}
#: The engine's dtypes (:func:`socm_lib.socm_pairs`, :func:`socm_lib.socm_summary`, :func:`socm_lib.paper_route`).
ENGINE_DTYPES = (torch.float32, torch.float64)
#: Above this many pairs, ``progress=None`` shows a progress bar (:func:`socm_lib.socm_pairs`,
#: :func:`socm_lib.socm_summary`).
PROGRESS_PAIRS = 20_000


def as_dtype(dtype, allowed=ENGINE_DTYPES, name: str = "dtype") -> torch.dtype:
    """A floating dtype given as a ``torch.dtype``, a numpy dtype or scalar type (``np.float32``), or its
    name (``"float32"``), as the ``torch.dtype`` it names; it must be one of ``allowed``."""
    names = ", ".join(repr(k) for k, v in DTYPES.items() if v in allowed)
    if isinstance(dtype, torch.dtype):
        out = dtype
    elif isinstance(dtype, str):
        out = DTYPES.get(dtype)
    elif isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        out = DTYPES.get(np.dtype(dtype).name)
    else:
        raise TypeError(f"{name} must be a torch.dtype, a numpy dtype or one of the names {names}; "
                        f"got {dtype!r} ({type(dtype).__name__}).")
    if out not in allowed:
        raise ValueError(f"{name}={dtype!r} is not supported here; use one of {names} "
                         "(or the torch / numpy dtype of that name).")
    return out


def as_int(value, name: str, *, minimum: int | None = None, maximum: int | None = None, advice: str = "") -> int:
    """An integer option (a Python ``int`` or a numpy integer, never a ``bool``) within ``[minimum, maximum]``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__}).{advice and ' ' + advice}")
    lo = "" if minimum is None else f"{minimum} <= "
    hi = "" if maximum is None else f" <= {maximum}"
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} = {value} is outside {lo}{name}{hi}.{advice and ' ' + advice}")
    return int(value)


def as_number(value, name: str, *, minimum: float = 0.0, maximum: float | None = None, advice: str = "") -> float:
    """A real-number option (``int``, ``float`` or numpy scalar, never a ``bool``), finite, ``>= minimum`` and, where
    given, ``<= maximum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__}).")
    try:
        number = float(value)
    except OverflowError:  # an int beyond float64's range
        raise ValueError(f"{name} = {value}: it is beyond the range of float64.") from None
    if not (np.isfinite(number) and number >= minimum):
        raise ValueError(f"{name} = {value!r}: it must be a finite number >= {minimum}.{advice and ' ' + advice}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} = {value!r} is outside {minimum} <= {name} <= {maximum}.{advice and ' ' + advice}")
    return number


def as_progress(value, name: str = "progress") -> bool | None:
    """``progress``: ``True`` (show a bar), ``False`` (none) or ``None`` (a bar for long runs in a terminal only)."""
    if value is not None and not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True, False or None (a bar only for long runs), got {value!r}.")
    return None if value is None else bool(value)


def show_progress(progress: bool | None, count: int, threshold: int = PROGRESS_PAIRS) -> bool:
    """Whether to show a progress bar for ``count`` items: ``progress``, or (``None``) the setting ``progress`` of
    :func:`socm_lib.config_context`, or (``None`` too) whether ``count > threshold`` and stderr is a terminal. A bar
    is text redrawn on stderr: a notebook shows it as an error-coloured block that keeps every redraw, and a log file
    keeps them too, so neither gets one unless it is asked for."""
    if progress is None:
        progress = get_config()["progress"]
    if progress is not None:
        return progress
    return count > threshold and sys.stderr is not None and sys.stderr.isatty()


def as_pair_set(pairs, n_items: int, what: str = "clouds") -> tuple[np.ndarray | None, int]:
    """``(pairs, count)``: listed pairs validated by :func:`as_pairs` (``None`` stays ``None``: every pair
    ``i < j`` of ``n_items``) and how many pairs that is, refusing a call with no pair at all."""
    if pairs is not None:
        pairs = as_pairs(pairs, n_items)
        return pairs, len(pairs)
    count = n_items * (n_items - 1) // 2
    if count == 0:
        raise ValueError(f"There are no pairs: pass at least two {what}, or explicit pairs.")
    return None, count


def as_input_path(path, what: str) -> Path:
    """A path to read, as a :class:`~pathlib.Path` that exists: a ``str``, an ``os.PathLike`` or ``bytes`` (decoded as
    the file system does, :func:`os.fsdecode`); anything else is a ``TypeError``.

    A path that cannot be reached says why: a symbolic link loop (``OSError``), a link to a missing target or nothing
    there (``FileNotFoundError``).
    """
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what}: the path must be a str or a pathlib.Path, got {path!r} ({type(path).__name__}).")
    p = Path(path)
    try:
        p.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(f"{what} {p} is a symbolic link loop (following it leads back to itself); pass the path to "
                          "the file itself.") from None
        if p.is_symlink():
            raise FileNotFoundError(f"{what} {p} is a symbolic link to {os.readlink(p)}, which does not exist; pass "
                                    "the path to your copy of the file.") from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise FileNotFoundError(f"{what} not found at {p}; pass the path to your copy of the file.") from None
        raise
    return p


def as_output_path(path, name: str = "out", inputs: Sequence[tuple[str, object]] = ()) -> Path:
    """The file a path to be written names: the path itself, or the target of a symbolic link (so that writing
    keeps the link); not a folder, in an existing writable folder, writable if it exists, and none of ``inputs``.

    ``inputs`` are ``(what, path)`` pairs, the paths a run reads (``("--texts", "texts.txt")``): an output that is
    the same file as one of them, through a link, a hard link or another spelling alike (:func:`os.path.samefile`),
    or an existing file inside an input folder, is refused, since writing it would destroy what the run reads.
    Checked before any long work starts, so that a run never computes for minutes and then fails to save.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path, got {path!r}.")
    if not os.fspath(path):
        raise ValueError(f"{name} is an empty path; pass a file path.")
    p = Path(path)
    if p.is_symlink() and not (p.exists() and not p.is_file()):  # a link to a device or pipe is opened as it is
        try:
            os.stat(p)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ValueError(f"{name} {path} is a symbolic link loop (it leads back to itself); pass a file "
                                 "path.") from None
        p = Path(os.path.realpath(p))  # write the link's target, keep the link
    folder = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise ValueError(f"{name} {path} is a folder; pass a file path inside it.")
    if not folder.is_dir():
        raise ValueError(f"{name} {path}: the folder {folder} does not exist; create it or choose another path.")
    if (p.exists() and not os.access(p, os.W_OK)) or (not p.exists() and not os.access(folder, os.W_OK)):
        raise ValueError(f"{name} {path}: no permission to write there; choose a writable file path.")
    for what, source in inputs:
        if source is None or not os.path.exists(source) or not p.exists():
            continue
        inside = os.path.isdir(source) and Path(os.path.realpath(p)).is_relative_to(os.path.realpath(source))
        if inside or os.path.samefile(p, source):
            where = "a file inside" if inside else "the same file as"
            raise ValueError(f"{name} {path} is {where} {what} {source}, which this run reads: writing it would "
                             f"replace that input. Choose another {name}.")
    return p


@contextlib.contextmanager
def output_file(path, name: str = "out", newline: str | None = None, inputs: Sequence[tuple[str, object]] = ()):
    """Open ``path`` (checked by :func:`as_output_path`, ``inputs`` included) for writing UTF-8 text, so that no
    earlier file is lost: the one writer of every file the library writes (the CLI's CSV, the GPU check's report,
    the explorer's results files).

    A regular file is written as a temporary file beside it and moved into place only when the ``with`` block
    ends without an error (an existing file stays as it was until then, and a reader never sees a partial file).
    A symbolic link is written through: its target is replaced and the link kept. The new file keeps the mode of
    the file it replaces (a private ``0600`` stays private), or, for a new file, takes the mode ``open()`` would
    give it (``0666`` less the umask). A device or pipe (``/dev/stdout``) is written directly. The text is encoded
    as UTF-8 whatever the locale. An ``OSError`` of the writing itself (a full disk, say) names ``path``, never
    the temporary file.
    """
    p = as_output_path(path, name, inputs)
    if p.exists() and not p.is_file():
        handle = open(p, "w", encoding="utf-8", newline=newline)
        try:
            yield handle
        except BaseException:
            with contextlib.suppress(OSError):  # a full device fails again on close: keep the first error
                handle.close()
            raise
        handle.close()
        return
    mode = stat.S_IMODE(os.stat(p).st_mode) if p.exists() else None
    with _naming(path, name, mode is not None):
        fd, tmp = _new_file(p)
    try:
        with _naming(path, name, mode is not None):
            handle = os.fdopen(fd, "w", encoding="utf-8", newline=newline)
        try:
            yield handle
        except BaseException:
            with contextlib.suppress(OSError):
                handle.close()
            raise
        with _naming(path, name, mode is not None):
            handle.close()
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, p)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def _naming(path, name: str, existed: bool):
    """Re-raise an ``OSError`` of writing ``path`` (through its temporary file) as one that names ``path`` alone."""
    try:
        yield
    except OSError as exc:
        kept = "the earlier file there is unchanged" if existed else "nothing was written there"
        message = f"{name} {os.fspath(path)}: could not be written ({exc.strerror or exc}); {kept}."
        raise (type(exc)(message) if exc.errno is None else type(exc)(exc.errno, message)) from None


def write_text(path, text: str, name: str = "out") -> Path:
    """Write ``text`` to ``path`` by :func:`output_file` (atomically, as UTF-8); returns the file's path."""
    existed = os.path.isfile(path)
    with output_file(path, name) as handle, _naming(path, name, existed):
        handle.write(text)
        handle.flush()
    return Path(path)


def _new_file(p: Path) -> tuple[int, str]:
    """A new, empty file beside ``p`` (``.NAME.RANDOM.part``), opened for writing: ``(descriptor, path)``. Created with
    mode ``0666`` so that the umask applies as for ``open()`` (``tempfile.mkstemp`` would make it ``0600``), and never
    over an existing file (``O_EXCL``)."""
    while True:
        tmp = str(p.parent / f".{p.name}.{secrets.token_hex(4)}.part")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
