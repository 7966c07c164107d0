"""pytest configuration shared by the test suite and nbval.

nbval compares stream output including stderr. Progress bars (tqdm) and library
warnings go to stderr and carry timings, so stderr is left out of the comparison
for every notebook; stdout and rich outputs are still compared strictly.
"""


def pytest_collectstart(collector):
    if getattr(collector, "fspath", None) is not None and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",)
