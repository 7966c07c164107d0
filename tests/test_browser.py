"""Open the built book in a real headless browser (Debian's chromium) and save screenshots under _build/."""

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
PAGES = {
    "index": ("book/intro.html", "Second-order collapse"),
    "comparator": ("notebooks/nb04_comparator.html", "Backbone versus contrastive encoder"),
}


def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install chromium); CI installs it")
    return exe


def _run(args):
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_loads_with_its_main_content(name):
    page, heading = PAGES[name]
    url = (HTML / page).as_uri()
    dom = _run(["--virtual-time-budget=5000", "--dump-dom", url]).stdout
    assert "<main" in dom, f"{page}: no <main> element in the rendered DOM"
    main = dom[dom.index("<main"):]
    assert heading in main, f"{page}: heading {heading!r} missing from the main content"
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{name}.png"
    shot.unlink(missing_ok=True)
    _run(["--window-size=1280,1600", f"--screenshot={shot}", url])
    assert shot.exists() and shot.stat().st_size > 10_000, f"{page}: no screenshot written"
