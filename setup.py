"""The compiled part of the library: everything else is declared in pyproject.toml.

``socm_lib._lanes`` (nuclear norms of many small matrices, one per SIMD lane; see ``socm_lib/nuclear.py``) is an
optional extension: where no C compiler is found, or the build fails, the install goes on without it and the
library takes LAPACK's per-matrix path, which gives the same numbers to round-off. ``SOCM_BUILD_KERNEL=0`` skips
the build on purpose (a pure-Python wheel).

pip shows nothing of a build that failed (``pip install -q``, or any install that succeeds, keeps the build's
output to itself), so the build records why the kernel is missing in ``socm_lib/_lanes_build.json``, which
ships with the package, and :func:`socm_lib.nuclear.kernel_report` reads it: the kernel disabled, no C compiler,
or a build that failed, with the compiler's messages.
"""

import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

#: GCC and Clang: vectorise the lane loops; sqrt without errno so that it vectorises too. No -ffast-math: the
#: kernel relies on IEEE comparisons and on the order of its sums.
UNIX_FLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-std=c99"]
#: The build record's name in the package (the same name as ``socm_lib.nuclear.BUILD_RECORD``).
BUILD_RECORD = "_lanes_build.json"
BUILD = os.environ.get("SOCM_BUILD_KERNEL", "1") != "0"


def write_record(folder: Path, cause: str, **detail) -> None:
    """Record in ``folder`` (the package as built) why the kernel is not in this install."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / BUILD_RECORD).write_text(json.dumps({"cause": cause, **detail}, indent=1) + "\n", encoding="utf-8")


@contextlib.contextmanager
def stderr_kept():
    """Send what is written to standard error meanwhile (the compiler's messages) to a file as well: yields a
    function returning the text so far."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as copy:

        def text() -> str:
            sys.stderr.flush()
            copy.seek(0)
            return copy.read().decode(errors="replace")

        os.dup2(copy.fileno(), 2)
        try:
            yield text
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            copy.seek(0)
            os.write(2, copy.read())


class BuildLanes(build_ext):
    """Pass the optimisation flags that the compiler in use understands; record a build that fails."""

    def build_extensions(self):
        flags = ["/O2"] if self.compiler.compiler_type == "msvc" else UNIX_FLAGS
        for ext in self.extensions:
            ext.extra_compile_args = flags
        super().build_extensions()

    def build_extension(self, ext):
        folder = Path(self.get_ext_fullpath(ext.name)).parent
        (folder / BUILD_RECORD).unlink(missing_ok=True)  # an earlier build's record
        with stderr_kept() as messages:
            try:
                super().build_extension(ext)
            except Exception as error:  # setuptools goes on without the optional extension
                compiler = (getattr(self.compiler, "compiler_so", None) or [None])[0]
                missing = compiler is not None and shutil.which(compiler) is None
                write_record(folder, "no compiler" if missing else "failed", error=str(error),
                             messages=messages()[-4000:])
                raise


class BuildPy(build_py):
    """With ``SOCM_BUILD_KERNEL=0``, record that the kernel was left out on purpose."""

    def run(self):
        super().run()
        if not BUILD:
            editable = getattr(self, "editable_mode", False)  # the package is then the source folder itself
            write_record(Path(self.get_package_dir("socm_lib")) if editable else Path(self.build_lib, "socm_lib"),
                         "disabled")


lanes = Extension("socm_lib._lanes", sources=["socm_lib/_lanes.c"],
                  depends=["socm_lib/_lanes_body.h", "socm_lib/_lanes_bidiag.h"], optional=True)
setup(ext_modules=[lanes] if BUILD else [], cmdclass={"build_ext": BuildLanes, "build_py": BuildPy})
