"""The compiled part of the library: everything else is declared in pyproject.toml.

``socm_lib._lanes`` (nuclear norms of many small matrices, one per SIMD lane; see ``socm_lib/nuclear.py``) is an
optional extension: where no C compiler is found, or the build fails, the install goes on without it and the
library takes LAPACK's per-matrix path, which gives the same numbers to round-off. ``SOCM_BUILD_KERNEL=0`` skips
the build on purpose (a pure-Python wheel).
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: GCC and Clang: vectorise the lane loops; sqrt without errno so that it vectorises too. No -ffast-math: the
#: kernel relies on IEEE comparisons and on the order of its sums.
UNIX_FLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-std=c99"]


class BuildLanes(build_ext):
    """Pass the optimisation flags that the compiler in use understands."""

    def build_extensions(self):
        flags = ["/O2"] if self.compiler.compiler_type == "msvc" else UNIX_FLAGS
        for ext in self.extensions:
            ext.extra_compile_args = flags
        super().build_extensions()


build = os.environ.get("SOCM_BUILD_KERNEL", "1") != "0"
lanes = Extension("socm_lib._lanes", sources=["socm_lib/_lanes.c"], depends=["socm_lib/_lanes_body.h"],
                  optional=True)
setup(ext_modules=[lanes] if build else [], cmdclass={"build_ext": BuildLanes})
