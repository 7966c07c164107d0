"""The explorer in the built book, as a reader without a network meets it: notebook 4's page opened from disk
(file://) in Debian's headless chromium driven by selenium, every host name unresolvable. The chart is drawn from
the book's own scripts; changing encoder B, the texts and the pair kind in its menus shows the averages of the
committed results files (read here from notebooks/explorer/, not typed); the explorer's scripts log no error; the
comparator widget, which needs a kernel, gives way to the explorer with one line saying so, and leaves no widget state
that would load RequireJS and the widget manager; the chart says how to read it, and a print of it says which choices
it shows. Needs the built book
(`make test` builds it); the screenshot goes to _build/screenshots/ (a CI artifact)."""

import json
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "_build" / "html" / "notebooks" / "nb04_comparator.html"
RESULTS = ROOT / "notebooks" / "explorer"
SHOTS = ROOT / "_build" / "screenshots"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,2400"]
NAME = re.compile(r"^(?P<slot>[AB]) (?P<name>\S+)$")  # each encoder's line, then its averages' line
VALUES = re.compile(r"^\s*SOCM (?P<socm>\d\.\d{4}),\s+dμ \d\.\d{4},\s+dΣ \d\.\d{4}$")
COUNT = re.compile(r"^Averages over (?P<pairs>[\d,]+) pairs:$")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The nb04 page in chromium (a fresh profile), once its explorer has drawn its averages."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    for exe in ("chromium", "chromedriver"):
        if shutil.which(exe) is None:
            pytest.skip(f"{exe} is not installed (apt-get install chromium chromium-driver); CI installs both")
    options = Options()
    options.binary_location = shutil.which("chromium")
    for flag in FLAGS + [f"--user-data-dir={tmp_path_factory.mktemp('profile')}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        driver.get(PAGE.as_uri())
        _wait(lambda: _averages(driver), "the explorer to draw its averages")
        yield driver
    finally:
        driver.quit()


def _wait(condition, what, seconds=120):
    deadline = time.monotonic() + seconds
    while not (value := condition()):
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.2)
    return value


def _averages(driver) -> dict:
    """What the explorer's averages say (SVG text, so the page's own words): {"A": (name, SOCM), "B": (name, SOCM),
    "pairs": number of pairs}, or {} before they are drawn."""
    lines = driver.execute_script(
        "return [...document.querySelectorAll('.vega-lite-chart svg text')].map(t => t.textContent)")
    shown = {name["slot"]: (name["name"], values["socm"]) for name, values in
             zip(map(NAME.match, lines), map(VALUES.match, lines[1:])) if name and values}
    counts = [int(m["pairs"].replace(",", "")) for m in map(COUNT.match, lines) if m]
    return {**shown, "pairs": counts[0]} if len(shown) == 2 and len(counts) == 1 else {}


def _menus(driver) -> dict:
    """The explorer's menus by the name in their label: {name: <select>} (each select sits in its <label>)."""
    selects = driver.find_elements("css selector", ".vega-lite-chart .vega-bindings select")
    return {driver.execute_script("return arguments[0].labels[0].querySelector('.vega-bind-name').textContent.trim()",
                                  s): s for s in selects}


def _encoder_files() -> list:
    """The committed per-encoder results files (the folder's text sets are in their own file, read once)."""
    return [p for p in sorted(RESULTS.glob("*.json")) if p.name != "text-sets.json"]


def _committed(encoder: str, text_set: str, kind: str | None = None) -> tuple[str, int]:
    """The average SOCM (at 4 decimals, as the page prints it) and the number of pairs, from the committed files."""
    sets = {s["name"]: s for s in json.loads((RESULTS / "text-sets.json").read_text(encoding="utf-8"))["sets"]}
    for path in _encoder_files():
        record = json.loads(path.read_text(encoding="utf-8"))
        if record["encoder"] == encoder:
            values = np.asarray(record["values"][text_set]["socm"])
            if kind is not None:
                values = values[np.asarray(sets[text_set]["pair_kinds"]) == kind]
            return f"{values.mean():.4f}", len(values)
    raise AssertionError(f"no committed results file for {encoder} in {RESULTS}")


def test_changing_encoder_b_shows_its_committed_average(page):
    from selenium.webdriver.support.ui import Select

    menus = _menus(page)
    assert set(menus) == {"encoder A", "encoder B", "texts", "pair kind (labelled pairs)"}, sorted(menus)
    encoder_b = Select(menus["encoder B"])
    options = [o.get_attribute("value") for o in encoder_b.options]
    assert len(options) == len(_encoder_files()) >= 3  # one choice per committed results file
    first = _averages(page)
    for slot in "AB":
        assert (first[slot][1], first["pairs"]) == _committed(first[slot][0], "corpus")
    other = next(name for name in options if name not in (first["A"][0], first["B"][0]))
    encoder_b.select_by_value(other)
    after = _wait(lambda: (a := _averages(page)) and a["B"][0] == other and a, f"B = {other}")
    assert after["B"][1] == _committed(other, "corpus")[0] != first["B"][1]
    assert after["A"] == first["A"]

    Select(menus["texts"]).select_by_value("labelled")
    Select(menus["pair kind (labelled pairs)"]).select_by_value("negation")
    expected = _committed(other, "labelled", "negation")
    shown = _wait(lambda: (a := _averages(page)) and a["pairs"] == expected[1] and a, "the negation pairs")
    assert (shown["B"][1], shown["A"][1]) == (expected[0], _committed(first["A"][0], "labelled", "negation")[0])
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.save_screenshot(str(SHOTS / "explorer.png"))


def test_the_explorer_logs_nothing_and_the_widget_gives_way(page):
    """No warning or error from the explorer's scripts (Vega's own warnings included: a spec they fault). The
    page's other console errors, left by the theme and the widgets' scripts, are checked for every page in
    tests/test_browser.py."""
    logged = [e for e in page.get_log("browser") if e["level"] in ("WARNING", "SEVERE")]
    mine = [e["message"] for e in logged if re.match(r"\S*/_static/vega(/|_charts\.js)", e["message"])]
    assert not mine, mine
    assert not page.find_elements("css selector", ".widget-dropdown, .widget-slider, .jupyter-widgets-view")
    text = page.find_element("css selector", "main").text
    assert "needs a running kernel" in text and "Colab or JupyterLab" in text
    scripts = page.execute_script(
        "return [...document.scripts].map(s => s.getAttribute('src')).filter(Boolean).map(s => s.split('?')[0])")
    vega = [s for s in scripts if "/vega" in s]
    assert vega == ["../_static/vega/vega.min.js", "../_static/vega/vega-lite.min.js",
                    "../_static/vega/vega-embed.min.js", "../_static/vega_charts.js"], scripts
    # no stale widget state: the comparator's output is not in the book, so neither RequireJS nor the widget manager
    assert not [s for s in scripts if "require" in s or "html-manager" in s or "widget-manager" in s], scripts


def test_the_explorer_says_how_to_read_it_and_what_a_print_shows(page):
    """The chart's key (high SOCM, the diagonal) and axis titles in dμ and dΣ; the note that a print shows instead of
    the menus names the choices and says whether they are the defaults (the test above changed them)."""
    from selenium.webdriver.support.ui import Select

    text = " ".join(page.execute_script(
        "return [...document.querySelectorAll('.vega-lite-chart svg text')].map(t => t.textContent)"))
    for words in ("How to read it", "is high when", "B collapses the pair more than A", "B collapses more",
                  "A collapses more", "dμ (means apart)", "dΣ (shapes apart)"):
        assert words in text, words
    assert "d_mu" not in text and "d_sigma" not in text
    note = page.find_element("css selector", ".vega-print-note")
    assert not note.is_displayed()  # on screen the menus say it; print.css shows the note on paper
    menus = _menus(page)
    for name, value in (("texts", "corpus"), ("pair kind (labelled pairs)", "all")):
        Select(menus[name]).select_by_value(value)
    chosen = {name: Select(menu).first_selected_option.text for name, menu in menus.items()}
    said = note.get_attribute("textContent")
    assert all(f"{name}: {label}" in said for name, label in chosen.items()), said
    defaults = json.loads(page.execute_script(
        "return document.querySelector('.vega-lite-chart script[type=\"application/json\"]').textContent"))["params"]
    at_defaults = all(chosen[p["bind"]["name"].strip()] == p["bind"]["labels"][p["bind"]["options"].index(p["value"])]
                      for p in defaults)
    assert ("(its default choices)" in said) == at_defaults and ("not its default choices" in said) != at_defaults
    for p in defaults:
        Select(menus[p["bind"]["name"].strip()]).select_by_value(p["value"])
    assert "(its default choices)" in note.get_attribute("textContent")
