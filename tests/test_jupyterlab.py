"""The editions in a reader's hands: JupyterLab (pinned in requirements.txt) started as `make lab` starts it
(scripts/book_lab.py: on 127.0.0.1, the editions laid out as in _build/lab/, the built book served by the lab), with a
token, on a free port, and driven by Debian's headless chromium through selenium (Debian's chromedriver). The
comparator's notebook opens without being marked modified, runs from the top without an error or stderr output and
draws its widget (labelled controls, not their plain-text form) and the explorer (a Vega-Lite chart, drawn by
JupyterLab itself, whose spec draws no version warning); changing encoder B changes the printed averages, and the
arrow keys change a focused menu of the comparator and of the explorer, which keeps the focus, while the notebook's
active cell stays put (socm_lib.viz.keyboard). A lab
notebook run from the top answers no task: each task's check says "not answered yet", no solution runs (each is a
folded Markdown block), every one stays folded, and one opens when its title is clicked. Its theorem and chapter links
open the book built on this machine, offline, and its Colab link is text, not an image. A student notebook, in the
student kit's layout beside the editions, opens unmodified and runs from the top. The server is stopped by its
process id when the module ends, also after a failure.
Screenshots go to _build/screenshots/ (what a reader sees; CI artifacts). Needs the built book (`make test` builds it)."""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

import chromium
from socm_lib import course

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import book_lab  # noqa: E402
import student_edition  # noqa: E402

SHOTS = ROOT / "_build" / "screenshots"
COMPARATOR = "notebooks/nb04_comparator.ipynb"
LAB = "notebooks/nb01_socm_by_hand.ipynb"
STUDENT = "notebooks/nb09_benchmarks.ipynb"  # it reads benchmarks/results/ beside notebooks/
CHECK = re.compile(r'check\("(nb\d\d\.\d+)",\s*answer\)')
RUN_ALL_SECONDS = 420  # the comparator's notebook: about a minute on an idle 2-core machine, minutes on a loaded one


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(base URL, token) of a JupyterLab serving the editions; stopped by its PID when the module ends."""
    chromium.require()
    root = tmp_path_factory.mktemp("lab")
    book_lab.prepare(root)  # the editions as `make lab` lays them out, linked to the book built here
    student_edition.write_kit([ROOT / STUDENT], root / student_edition.ZIP_FOLDER)  # and a student kit beside them
    home = tmp_path_factory.mktemp("jupyter")
    # every cell rendered, not only those in view (JupyterLab's default windowing), so the DOM shows them all
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"windowingMode": "none"}')
    port, token = _free_port(), secrets.token_hex(16)
    command, env = book_lab.server(root, port, ["--no-browser", "--ServerApp.port_retries=0",
                                                f"--IdentityProvider.token={token}",
                                                f"--LabApp.workspaces_dir={home / 'workspaces'}",
                                                f"--LabApp.user_settings_dir={home / 'settings'}"])
    env.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"))
    log = (home / "server.log").open("w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5)
                break
            except OSError:
                assert server.poll() is None, f"JupyterLab exited: {(home / 'server.log').read_text()[-2000:]}"
                assert time.monotonic() < deadline, "JupyterLab did not answer within 120 s"
                time.sleep(0.5)
        yield url, token, root
    finally:
        os.kill(server.pid, signal.SIGTERM)  # JupyterLab shuts its kernels down, then exits
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def browser(lab):
    driver = chromium.start()
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(condition, seconds, what, state=lambda: ""):
    """condition()'s first true value, polled for `seconds`; else a failure saying what was awaited and state()."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"waited {seconds} s for {what} {state()}"
        time.sleep(0.5)


def _open(driver, lab, path):
    """Open `path` in JupyterLab and wait until its kernel is idle."""
    url, token, _ = lab
    driver.get(f"{url}/lab/tree/{path}?reset&token={token}")  # a fresh workspace: no tab of an earlier test
    _wait(lambda: driver.find_elements("css selector", ".jp-NotebookPanel .jp-CodeCell"), 120, f"{path} to open")
    _wait(lambda: _idle(driver), 120, "the kernel")


def _command(driver, menu, command):
    """Click JupyterLab's menu `menu` (menu bar text), then its item for `command` (a command id)."""
    from selenium.webdriver.common.action_chains import ActionChains

    item = next(e for e in driver.find_elements("css selector", ".lm-MenuBar-item") if e.text.strip() == menu)
    ActionChains(driver).move_to_element(item).click().perform()
    entry = _wait(lambda: driver.find_elements("css selector", f'.lm-Menu-item[data-command="{command}"]'), 10, command)
    ActionChains(driver).move_to_element(entry[0]).click().perform()


def _prompts(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell')].map(c => "
        "(c.querySelector('.jp-InputPrompt') || {textContent: ''}).textContent.trim())")


def _idle(driver):
    return "| Idle" in driver.find_element("css selector", "#jp-main-statusbar").text


def _run_all(driver, seconds=RUN_ALL_SECONDS):
    """Clear every output, run all cells from the menu, and wait until each code cell has run (a numbered prompt;
    a collapsed cell shows none) and the kernel is idle; the seconds taken."""
    _command(driver, "Edit", "editmenu:clear-all")
    _wait(lambda: "[ ]:" in _prompts(driver), 30, "the outputs to clear")
    start = time.monotonic()
    _command(driver, "Run", "runmenu:run-all")
    done = lambda: _idle(driver) and not {"[ ]:", "[*]:"} & set(_prompts(driver))  # noqa: E731
    state = lambda: (driver.save_screenshot(str(SHOTS / "jupyterlab_run_all_timeout.png"))  # noqa: E731
                     and f"(prompts {_prompts(driver)}, idle {_idle(driver)})")
    _wait(lambda: done() and (time.sleep(1) or done()), seconds, "Run All to finish", state)
    return time.monotonic() - start


def _cells(driver):
    """Each code cell as (source, output text, input collapsed, outputs collapsed), in order."""
    return driver.execute_script(
        "return [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell')].map(c => ["
        "[...c.querySelectorAll('.cm-line')].map(l => l.textContent).join('\\n'),"
        "(c.querySelector('.jp-OutputArea') || {innerText: ''}).innerText,"
        "!!c.querySelector('.jp-InputPlaceholder'), !!c.querySelector('.jp-OutputPlaceholder')])")


def _stderr_shown(driver):
    """The text of the stderr outputs (JupyterLab's pink blocks) of the visible notebook."""
    return driver.execute_script(
        "return [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) "
        ".jp-OutputArea-output[data-mime-type=\"application/vnd.jupyter.stderr\"]')].map(o => o.innerText)")


def _modified(driver):
    return bool(driver.find_elements("css selector", ".lm-TabBar-tab.jp-mod-current.jp-mod-dirty"))


def _saved(driver, lab, path):
    """Save the notebook from JupyterLab and read what it wrote."""
    _command(driver, "File", "docmanager:save")
    _wait(lambda: not _modified(driver), 30, "the save")
    return nbformat.read(lab[2] / path, as_version=4)


def _widget_summary(driver):
    """The comparator's printed averages, as shown in its output area (the <pre> of its last render); "" while the
    widget is redrawing (the <pre> found was replaced before its text was read), so that _wait polls again."""
    from selenium.common.exceptions import StaleElementReferenceException

    try:
        pres = driver.find_elements("css selector", ".jp-OutputArea .widget-output pre")
        return pres[0].text if pres else ""
    except StaleElementReferenceException:
        return ""


@pytest.fixture(scope="module")
def comparator(lab, browser):
    """The comparator's notebook opened (not marked modified) and run from the top; the console's messages since."""
    _open(browser, lab, COMPARATOR)
    time.sleep(3)  # JupyterLab writes the kernel's metadata into the model once it connects
    assert not _modified(browser), "opening the notebook marked it modified"
    seconds = _run_all(browser)
    print(f"Run All of {COMPARATOR}: {seconds:.0f} s")
    browser.save_screenshot(str(SHOTS / "jupyterlab_nb04_run_all.png"))
    return browser.get_log("browser")


def test_the_comparator_runs_from_the_top_with_a_live_widget(lab, browser, comparator):
    from selenium.webdriver.support.ui import Select

    # the explorer's spec declares the Vega-Lite JupyterLab draws with: vega-embed warns of none newer
    warned = [e["message"] for e in comparator if "The input spec uses" in e["message"]]
    assert not warned, warned

    saved = _saved(browser, lab, COMPARATOR)
    errors = [o for c in saved.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"error outputs: {[e.ename + ': ' + e.evalue for e in errors]}"
    assert not _stderr_shown(browser), f"stderr after Run All: {_stderr_shown(browser)}"

    labels = [e.text for e in browser.find_elements("css selector", ".jp-OutputArea .widget-dropdown label")]
    assert {"encoder A", "encoder B"} <= set(labels), f"no rendered comparator (dropdowns: {labels})"
    assert "run this cell to use the comparator" not in browser.find_element("css selector", ".jp-Notebook").text  # no text form
    # every control of the comparator is a labelled form field whose label shows whole (no slider: its handle has
    # no accessible name)
    unlabelled = browser.execute_script(
        "return [...document.querySelectorAll('.jp-OutputArea .jupyter-widgets :is(select, input, [role=slider])')]"
        ".filter(e => !(e.labels && e.labels.length)).map(e => e.outerHTML.slice(0, 120))")
    assert not unlabelled, f"controls without a label: {unlabelled}"
    cut = browser.execute_script(
        "return [...document.querySelectorAll('.jp-OutputArea .widget-label')]"
        ".filter(l => l.offsetWidth && l.scrollWidth > l.clientWidth).map(l => l.textContent)")
    assert not cut, f"labels cut off: {cut}"

    # the explorer: JupyterLab draws the Vega-Lite output itself (no network, no kernel needed)
    explorer = browser.find_elements("css selector", ".jp-OutputArea .jp-RenderedVegaLite")
    assert len(explorer) == 1, "JupyterLab drew no Vega-Lite chart (the explorer)"
    assert len(explorer[0].find_elements("css selector", ".vega-bindings select")) == 4
    assert "Averages over" in browser.execute_script("return arguments[0].textContent", explorer[0])

    before = _widget_summary(browser)
    assert re.search(r"^B \S+: average SOCM \d\.\d{4}", before, re.M), before
    dropdown = next(e for e in browser.find_elements("css selector", ".jp-OutputArea .widget-dropdown")
                    if e.find_element("css selector", "label").text == "encoder B")
    current = Select(dropdown.find_element("css selector", "select")).first_selected_option.text
    other = next(name for name in ("untrained-minilm-l6", "all-minilm-l6") if name != current)
    Select(dropdown.find_element("css selector", "select")).select_by_visible_text(other)
    after = _wait(lambda: (s := _widget_summary(browser)) and f"B {other}:" in s and s, 120, "the comparator to redraw")
    browser.save_screenshot(str(SHOTS / "jupyterlab_nb04_encoder_b.png"))
    averages = [re.search(rf"^B .*average SOCM (\d\.\d+)", s, re.M)[1] for s in (before, after)]
    assert averages[0] != averages[1], f"encoder B changed, its average did not: {before!r} -> {after!r}"


def _active_cell(driver) -> int:
    """The index of the visible notebook's active cell."""
    return driver.execute_script(
        "return [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')]"
        ".findIndex(c => c.classList.contains('jp-mod-active'))")


def _arrow_down(driver, select) -> tuple[str, str, int, int, bool]:
    """Focus `select` (a <select>), press ArrowDown: (value before, value after, active cell before, after, whether
    the select still has the focus)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus()", select)
    time.sleep(0.5)
    before, cell = select.get_attribute("value"), _active_cell(driver)
    ActionChains(driver).send_keys(Keys.ARROW_DOWN).perform()
    time.sleep(1)
    focused = driver.execute_script("return document.activeElement === arguments[0]", select)
    return before, select.get_attribute("value"), cell, _active_cell(driver), focused


def test_the_arrow_keys_drive_the_menus_of_the_comparator_and_the_explorer(lab, browser, comparator):
    """A focused menu changes with ArrowDown and keeps the focus, and the notebook's active cell stays where it was:
    the key reaches the menu, not JupyterLab's command mode (socm_lib.viz.keyboard). Then the comparator and the
    explorer show the encoder chosen."""
    dropdown = next(e for e in browser.find_elements("css selector", ".jp-OutputArea .widget-dropdown")
                    if e.find_element("css selector", "label").text == "encoder A")
    before, after, cell, cell_after, focused = _arrow_down(browser, dropdown.find_element("css selector", "select"))
    assert after != before and focused and cell_after == cell, (before, after, cell, cell_after, focused)
    _wait(lambda: f"A {after}:" in _widget_summary(browser), 120, f"the comparator to show encoder A = {after}")

    chart = browser.find_element("css selector", ".jp-OutputArea .jp-RenderedVegaLite")
    menu = next(s for s in chart.find_elements("css selector", ".vega-bindings select")
                if browser.execute_script("return arguments[0].labels[0].querySelector('.vega-bind-name').textContent",
                                          s).strip() == "encoder A")
    before, after, cell, cell_after, focused = _arrow_down(browser, menu)
    assert after != before and focused and cell_after == cell, (before, after, cell, cell_after, focused)
    lines = browser.execute_script("return [...arguments[0].querySelectorAll('svg text')].map(t => t.textContent)", chart)
    assert f"A {after}" in lines, f"the explorer does not show encoder A = {after}: {lines[:8]}"
    browser.save_screenshot(str(SHOTS / "jupyterlab_nb04_keyboard.png"))


def _folded_solutions(driver):
    """The visible notebook's ``<details>`` blocks titled "Solution to ...": (title, open, code shown) each. Chromium
    lays out a closed block's content (hidden by content-visibility), so "shown" asks checkVisibility, not the size."""
    return driver.execute_script(
        "return [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell details')]"
        ".filter(d => d.querySelector('summary').textContent.startsWith('Solution to'))"
        ".map(d => [d.querySelector('summary').textContent, d.open, d.querySelector('pre').checkVisibility()])")


def test_a_lab_run_from_the_top_answers_no_task_and_keeps_its_solutions_folded(lab, browser):
    _open(browser, lab, LAB)
    time.sleep(3)
    assert not _modified(browser), "opening the notebook marked it modified"
    edition = nbformat.read(lab[2] / LAB, as_version=4)
    n_solutions = sum("solution" in c.metadata.get("tags", []) for c in edition.cells)
    assert n_solutions >= 2 and not [c for c in edition.cells
                                     if c.cell_type == "code" and "solution" in c.metadata.get("tags", [])]
    _run_all(browser, 120)
    browser.save_screenshot(str(SHOTS / "jupyterlab_nb01_run_all.png"))
    cells = _cells(browser)
    checks = [(CHECK.search(src)[1], out) for src, out, _, _ in cells if CHECK.search(src)]
    assert len(checks) >= 2, f"{len(checks)} checks found"
    for task_id, shown in checks:
        assert course.verdict(task_id, None).line() in shown, f"{task_id}: the check shows {shown!r}"
    assert not re.search(r"nb\d\d\.\d+: right", "\n".join(out for _, out, _, _ in cells)), "a solution ran"
    assert not _stderr_shown(browser), f"stderr after Run All: {_stderr_shown(browser)}"
    folded = _folded_solutions(browser)
    assert [title.split(" (")[0] for title, _, _ in folded] == [f"Solution to Task {k}" for k in range(1, n_solutions + 1)]
    assert not [title for title, is_open, shown in folded if is_open or shown], f"solutions open after Run All: {folded}"
    browser.find_element("css selector", ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell details summary").click()
    opened = _wait(lambda: (f := _folded_solutions(browser)) and f[0][1] and f[0][2] and f, 10, "a solution to open")
    assert not any(is_open for _, is_open, _ in opened[1:]), opened


def _rendered_links(driver):
    """(text, href, target) of every link in the visible notebook's rendered Markdown."""
    return driver.execute_script(
        "return [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell a[href]')]"
        ".map(a => [a.textContent, a.href, a.target])")


def test_theorem_and_chapter_links_open_the_book_built_here_and_colab_is_a_text_link(lab, browser):
    url = lab[0]
    _open(browser, lab, LAB)
    links = _rendered_links(browser)
    book = [(text, href) for text, href, _ in links if href.startswith(url + book_lab.BOOK_PATH)]
    theorem = next(href for text, href in book if text == "Theorem 2")
    chapter = next(href for text, href in book if "#" not in href and "/book/ch" in href)
    assert not [href for _, href, _ in links if "socm-book.github.io" in href], "a link to the published book is left"
    first = browser.find_element("css selector", ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownCell")
    assert not first.find_elements("css selector", "img"), "the first cell shows an image (Colab's badge)"
    assert "colab.research.google.com" in first.find_element("link text", "Open in Colab").get_attribute("href")
    for href in (theorem, chapter):
        browser.get(href)  # the page the link opens (in a new tab in JupyterLab): served by the lab, no network
        page, _, anchor = href.partition("#")
        assert browser.execute_script("return document.readyState") == "complete"
        assert browser.find_elements("css selector", "main h1"), f"{page} shows no page of the book"
        if anchor:
            assert browser.find_elements("id", anchor), f"{page} has no anchor {anchor}"
    browser.save_screenshot(str(SHOTS / "jupyterlab_book_link.png"))


def test_a_student_notebook_in_the_kit_opens_unmodified_and_runs_from_the_top(lab, browser):
    path = f"{student_edition.ZIP_FOLDER}/{STUDENT}"
    _open(browser, lab, path)
    time.sleep(3)  # JupyterLab writes the kernel's metadata into the model once it connects
    assert not _modified(browser), "opening the student notebook marked it modified"
    _run_all(browser, 180)
    browser.save_screenshot(str(SHOTS / "jupyterlab_student_nb09_run_all.png"))
    saved = _saved(browser, lab, path)
    errors = [o for c in saved.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"error outputs: {[e.ename + ': ' + e.evalue for e in errors]}"
    assert any(c.outputs for c in saved.cells if c.cell_type == "code"), "nothing ran"
    assert not _stderr_shown(browser), f"stderr after Run All: {_stderr_shown(browser)}"

