"""Debian's headless chromium driven by selenium through Debian's chromedriver: the browser of the tests that click
or run scripts in a page (tests/test_jupyterlab.py, tests/test_accessibility.py)."""

import shutil

import pytest

from test_browser import OFFLINE  # no host name resolves: the browser tests' offline reader


def require():
    """Skip the test where chromium or chromedriver is missing (``apt-get install chromium chromium-driver``; CI
    installs both)."""
    for exe in ("chromium", "chromedriver"):
        if shutil.which(exe) is None:
            pytest.skip(f"{exe} is not installed (apt-get install chromium chromium-driver); CI installs both")


def start(*, offline: bool = False, window: str = "1400,1000"):
    """A new selenium session of headless chromium, which keeps the page's console messages (``get_log("browser")``);
    with ``offline``, no host name resolves (`require` first)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    require()
    options = Options()
    options.binary_location = shutil.which("chromium")
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={window}"]
    for flag in flags + ([OFFLINE] if offline else []):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
