"""pytest configuration shared by the test suite and nbval.

nbval compares stream output including stderr. Progress bars (tqdm) and library
warnings go to stderr and carry timings, so stderr is left out of the comparison
for every notebook; stdout and rich outputs are still compared strictly.
"""

import os

# Notebook kernels inherit this process's environment. A non-interactive MPLBACKEND (e.g. Agg) would make
# plt.show() display nothing, so figure outputs would go missing; kernels must use their inline backend.
os.environ.pop("MPLBACKEND", None)


def pytest_collectstart(collector):
    if getattr(collector, "fspath", None) is not None and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",)
