"""One rule for answers: :func:`plain_answer` turns whatever a student holds into plain data, and every verdict is
passed on that plain form, in the practice check (:func:`socm_lib.course.check`) and in grading alike.

The plain form of an answer is ``None`` (not answered), a ``bool``, an ``int`` (at most 64 bits wide; a wider one
becomes the nearest ``float``, ``inf`` beyond its range), a ``float``, a ``str``, or a list of plain forms; whatever
cannot be read becomes ``{"unreadable": why}``. It is JSON as it stands, so a grader can carry it out of a
student's kernel as text and judge it elsewhere exactly as the practice check judges it here. Read as students
hold numbers and lists:

* Python scalars, and subclasses of them, by their value; ``...`` as ``None``;
* numpy scalars and arrays (``np.float32``, ``np.longdouble``, ``np.matrix``, ...): numbers as Python ``int`` and
  ``float`` (float64), arrays as nested lists of their shape; complex numbers, dates and objects are unreadable;
* torch tensors (detached, on the CPU) and pandas ``Series``, ``DataFrame`` and ``Index`` as their arrays;
* tuples, lists, sets and frozensets as lists.

Anything else, an answer of more than :data:`MAX_ITEMS` numbers or strings, a string longer than
:data:`MAX_CHARS`, lists nested deeper than :data:`MAX_DEPTH`, and an answer that raises while being read (a
``tolist`` that calls ``sys.exit``) is unreadable, with the reason. The function never raises and never calls
code of the answer's own beyond the conversions of numpy, torch and pandas.

This module imports no third-party package: a grader runs its source in a student's kernel as it stands, and
numpy, torch and pandas are looked up in :data:`sys.modules`, where an answer of theirs has put them.
"""

import sys

MAX_ITEMS = 100_000  # numbers or strings in one answer
MAX_CHARS = 10_000  # characters of one string
MAX_DEPTH = 8  # lists within lists
_INT64 = 2**63


def plain_answer(x):
    """``x`` in its plain form (see the module's docstring); ``{"unreadable": why}`` where it cannot be read."""
    try:
        return _plain(x, [0], 0)
    except _Unreadable as unreadable:
        return {"unreadable": str(unreadable)}
    except BaseException as error:  # noqa: B036  (SystemExit, KeyboardInterrupt: raised by the answer itself)
        try:
            name = type(error).__name__
        except BaseException:  # noqa: B036
            name = "an exception"
        return {"unreadable": f"{str(name)[:60]} raised while reading it"}


class _Unreadable(Exception):
    """Why an answer cannot be read."""


def _plain(x, count: list, depth: int):
    """The plain form of ``x``, counting in ``count[0]`` the items of the lists and arrays read so far."""
    if x is None or x is Ellipsis:
        return None
    if depth > MAX_DEPTH:
        raise _Unreadable(f"lists nested more than {MAX_DEPTH} deep")
    if isinstance(x, dict) and set(x) == {"unreadable"} and isinstance(x["unreadable"], str):
        return {"unreadable": x["unreadable"][:200]}  # already plain: the form is its own plain form
    if isinstance(x, (bool, int, float, str)):
        return _scalar(x)
    array = _as_array(x)
    if array is not None:
        return _from_array(array, count, depth)
    if isinstance(x, (list, tuple, set, frozenset)):
        _count(count, len(x))
        return [_plain(v, count, depth + 1) for v in x]
    raise _Unreadable(f"an object of type {str(type(x).__name__)[:60]}")


def _count(count: list, n: int) -> None:
    count[0] += n
    if count[0] > MAX_ITEMS:
        raise _Unreadable(f"more than {MAX_ITEMS:,} numbers or strings")


def _scalar(x):
    """A Python scalar (or a subclass's value) in its plain form."""
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        value = int.__index__(x)
        if -_INT64 <= value < _INT64:
            return value
        try:
            return float(value)
        except OverflowError:
            return float("inf") if value > 0 else float("-inf")
    if isinstance(x, float):
        return float.__float__(x)
    return _text(str.__str__(x))


def _text(text: str) -> str:
    if len(text) > MAX_CHARS:
        raise _Unreadable(f"a string of {len(text):,} characters (at most {MAX_CHARS:,})")
    return text


def _as_array(x):
    """``x`` as a base-class numpy array, or a torch tensor as nested lists, when it is a numpy, torch or pandas
    object; else None."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        tensor = x.detach().cpu()
        if tensor.is_complex():
            raise _Unreadable("complex numbers")
        if tensor.numel() > MAX_ITEMS:
            raise _Unreadable(f"more than {MAX_ITEMS:,} numbers or strings")
        return tensor.tolist()  # Python floats (float32 and bfloat16 exactly), ints, bools, nested
    np = sys.modules.get("numpy")
    if np is None:
        return None
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x)  # a subclass (np.matrix, or a student's) becomes a plain ndarray
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(x, (pandas.Series, pandas.DataFrame, pandas.Index)):
        return np.asarray(x.to_numpy())
    return None


def _from_array(a, count: list, depth: int):
    """A numpy array as nested lists (a scalar for 0-d) of float64, int64, bool or str; object arrays element by
    element. (A tensor arrives as nested lists already.)"""
    if isinstance(a, (list, bool, int, float)):
        return _plain(a, count, depth)
    np = sys.modules["numpy"]
    if depth + a.ndim > MAX_DEPTH:
        raise _Unreadable(f"lists nested more than {MAX_DEPTH} deep")
    kind = a.dtype.kind
    if kind == "O":
        return _plain(a.item(), count, depth) if a.ndim == 0 else [_plain(v, count, depth + 1) for v in a]
    _count(count, int(a.size))
    if kind == "f":
        return a.astype(np.float64).tolist()
    if kind == "u" and a.dtype.itemsize == 8 and a.size and int(a.max()) >= _INT64:
        return a.astype(np.float64).tolist()
    if kind in "iub":
        return a.astype(np.bool_ if kind == "b" else np.int64).tolist()
    if kind == "U":
        for text in np.ravel(a).tolist():
            _text(text)
        return a.tolist()
    raise _Unreadable({"c": "complex numbers", "M": "dates", "m": "time spans"}.get(kind, f"numpy {a.dtype} data"))
