r"""Settings that hold for everything a piece of code runs, not for one call: one mechanism (book, Chapter 6).

Three of the library's choices are not options of one function but of every call a block of code makes:

* ``svd_kernel``: the route of the nuclear norms on the CPU (:mod:`socm_lib.nuclear`): ``"auto"`` (the best variant
  of the compiled lane kernel built here, else LAPACK), ``"lapack"``, or a variant, ``"avx512"``, ``"avx2"`` or
  ``"portable"``. Its default is read once, when the library is imported, from the environment variable
  :data:`KERNEL_ENV` (``SOCM_SVD_KERNEL``), so that a shell can choose the route of a whole process;
* ``torch_svd``: the torch path's solver of singular values (:mod:`socm_lib.block_math`): ``"auto"`` (the batched
  Jacobi on a GPU above 32 x 32, else ``torch.linalg.svdvals``), ``"jacobi"`` or ``"svdvals"``;
* ``progress``: progress bars of calls left at ``progress=None``: ``None`` (each call decides: a bar for a long run
  in a terminal), ``False`` (never) or ``True`` (always). A call's own ``progress=True`` or ``False`` wins.

They live in a :class:`contextvars.ContextVar`, as scikit-learn's ``config_context`` holds its own:
:func:`config_context` changes them inside a ``with`` block and puts back what was there after it, for the code that
block runs only: another thread (which starts with the defaults) or an asyncio task keeps its own. :func:`get_config`
reads them. A call carries its settings to the workers it starts: the engine's threads run each block in a copy of the
caller's context, and a Dask task of :mod:`socm_lib.distributed` under the settings the call saw. Nothing else of the
library is process-wide but what belongs to the process itself (BLAS threads, torch's matmul precision), which the
engine holds only while it runs (:class:`socm_lib.block_runner.SharedSetting`)::

    with socm_lib.config_context(svd_kernel="lapack", progress=False):
        socm_lib.socm_pairs(clouds)  # LAPACK for every nuclear norm, no bar
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from dataclasses import asdict, dataclass, replace

import numpy as np

#: Environment variable that gives ``svd_kernel`` its default, read once when the library is imported.
KERNEL_ENV = "SOCM_SVD_KERNEL"
#: Routes of the nuclear norms: ``"auto"``, ``"lapack"`` or a variant of the compiled kernel.
SVD_KERNELS = ("auto", "lapack", "avx512", "avx2", "portable")
#: Solvers of the torch path: ``"auto"``, the batched one-sided Jacobi of :mod:`socm_lib.jacobi`, or
#: ``torch.linalg.svdvals`` (on CUDA, batched by cuSOLVER only up to 32 x 32).
TORCH_SVDS = ("auto", "jacobi", "svdvals")


@dataclass(frozen=True)
class Config:
    """The settings (module docstring)."""

    svd_kernel: str = "auto"
    torch_svd: str = "auto"
    progress: bool | None = None


#: The settings a context starts with: ``svd_kernel`` from :data:`KERNEL_ENV` (as written there: a value that is no
#: route is refused where the route is chosen, :func:`socm_lib.nuclear.kernel`, never at import).
DEFAULTS = Config(svd_kernel=os.environ.get(KERNEL_ENV, "auto").strip().lower() or "auto")
_CURRENT = contextvars.ContextVar("socm_lib_config", default=DEFAULTS)


def get_config() -> dict:
    """The settings in force here, as a dict ``{"svd_kernel": ..., "torch_svd": ..., "progress": ...}``."""
    return asdict(_CURRENT.get())


def _checked(name: str, value):
    """``value`` of setting ``name``, refused with a message naming it when it is not one of the setting's values."""
    choices = {"svd_kernel": SVD_KERNELS, "torch_svd": TORCH_SVDS}.get(name)
    if choices is not None:
        if value not in choices:
            raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}.")
        return value
    if name == "progress":
        if value is not None and not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"progress must be True, False or None (each call decides), got {value!r}.")
        return None if value is None else bool(value)
    raise TypeError(f"config_context got an unknown setting {name!r}; the settings are "
                    f"{', '.join(Config.__dataclass_fields__)}.")


@contextlib.contextmanager
def config_context(**settings):
    """Change some settings (module docstring) inside the ``with`` block, for the code it runs; the settings found are
    back after it, also when the block raises. Each value is checked first: an unknown setting or value raises
    ``TypeError`` or ``ValueError`` before anything changes."""
    new = replace(_CURRENT.get(), **{name: _checked(name, value) for name, value in settings.items()})
    token = _CURRENT.set(new)
    try:
        yield
    finally:
        _CURRENT.reset(token)
