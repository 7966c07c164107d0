r"""Bounded in-process caches for the two costly steps of a measurement: loading an encoder and extracting clouds.

:func:`socm_lib.load_encoder` and :func:`socm_lib.token_embeddings` keep their recent results in an
:class:`LRUCache`, so that a second identical call (a lab's answer check after the notebook's own call, a widget
going back to an encoder) costs no new load and no forward pass. The semantics are those of
:func:`functools.lru_cache`: a call is answered from the cache when its key (every argument that can change the
result, see the two functions) equals an earlier call's; the least recently used entry leaves first once
``maxsize`` entries (or ``maxbytes`` bytes of arrays) are held; ``cache_info()`` and ``cache_clear()`` are
attached to each function. A call that raises stores nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, namedtuple
from collections.abc import Callable

#: The statistics of a cache, with the fields of :func:`functools.lru_cache`'s ``cache_info()``.
CacheInfo = namedtuple("CacheInfo", "hits misses maxsize currsize")


class LRUCache:
    """A mapping that forgets its least recently used entries first.

    At most ``maxsize`` entries are held, and, with ``maxbytes``, at most that many bytes by ``sizeof(value)``;
    a value larger than ``maxbytes`` is not stored at all, unless ``keep_latest``: then the latest value always
    stays, alone if it must (for values that are costly to form again and asked for many times in a row, such
    as the engine's bucket factors). ``valid(value)`` (default: always) is asked on every
    hit; an entry it rejects is dropped and the lookup counts as a miss. Safe to use from several threads.
    """

    def __init__(self, maxsize: int, *, maxbytes: int | None = None, sizeof: Callable[[object], int] = lambda v: 0,
                 valid: Callable[[object], bool] = lambda v: True, keep_latest: bool = False):
        self.maxsize, self.maxbytes, self.sizeof, self.valid = maxsize, maxbytes, sizeof, valid
        self.keep_latest = keep_latest
        self._data: OrderedDict = OrderedDict()
        self._bytes = 0
        self._hits = self._misses = 0
        self._lock = threading.Lock()

    def get(self, key):
        """The value stored under ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            if key in self._data and self.valid(self._data[key][0]):
                self._data.move_to_end(key)
                self._hits += 1
                return self._data[key][0]
            if key in self._data:
                self._drop(key)
            self._misses += 1
            return None

    def put(self, key, value) -> bool:
        """Store ``value`` under ``key``, dropping entries that ``valid`` rejects, then the least recently used.

        Returns whether the value was stored (not when it alone exceeds ``maxbytes``).
        """
        size = self.sizeof(value)
        with self._lock:
            if key in self._data:
                self._drop(key)
            for stale in [k for k, (v, _) in self._data.items() if not self.valid(v)]:
                self._drop(stale)
            if self.maxsize < 1 or (self.maxbytes is not None and size > self.maxbytes and not self.keep_latest):
                return False
            self._data[key] = (value, size)
            self._bytes += size
            while len(self._data) > self.maxsize or (self.maxbytes is not None and self._bytes > self.maxbytes
                                                     and len(self._data) > 1):
                self._drop(next(iter(self._data)))
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def values(self) -> list:
        """The stored values, least recently used first."""
        with self._lock:
            return [value for value, _ in self._data.values()]

    def _drop(self, key) -> None:
        self._bytes -= self._data.pop(key)[1]

    def info(self) -> CacheInfo:
        """Hits, misses, ``maxsize`` and the number of entries held, as ``functools.lru_cache``'s ``cache_info()``."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, self.maxsize, len(self._data))

    def clear(self) -> None:
        """Forget every entry and reset the statistics."""
        with self._lock:
            self._data.clear()
            self._bytes = self._hits = self._misses = 0
