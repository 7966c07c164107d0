"""Open the built book the way a reader without a network does: Debian's headless chromium, every host name
unresolvable, pages opened from disk (file://). Check what is on screen (typeset mathematics) and keep screenshots
under _build/screenshots/ (CI artifacts). The explorer of notebook 4 is checked in tests/test_explorer_page.py."""

import functools
import json
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND"  # no host resolves: anything from a CDN fails to load
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", OFFLINE, "--virtual-time-budget=10000",
         "--run-all-compositor-stages-before-draw"]
PAGES = {  # name: (page, heading of its main content)
    "index": ("book/intro.html", "Second-order collapse"),
    "theory": ("book/ch03_socm.html", "Second-order collapse"),
    "comparator": ("notebooks/nb04_comparator.html", "Backbone versus contrastive encoder"),
}
MATH_PAGES = ["index", "theory", "comparator"]
RAW_TEX = [r"\(", r"\)", r"\[", r"\]", "$$", r"\begin{"]


def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install chromium); CI installs it")
    return exe


def _run(args):
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120)


class Node:
    """An element of the rendered DOM: tag, classes and children (elements and text)."""

    def __init__(self, tag, attrs, parent):
        self.tag, self.parent, self.children = tag, parent, []
        self.classes = set((dict(attrs).get("class") or "").split())

    def iter(self):
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def select(self, tag=None, cls=None):
        return [n for n in self.iter() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)]

    def text(self, skip=("script", "style", "mjx-assistive-mml")):
        """The text a reader sees: hidden machine-readable copies (scripts, MathML for screen readers) left out."""
        if self.tag in skip:
            return ""
        return "".join(c if isinstance(c, str) else c.text(skip) for c in self.children)


class _TreeBuilder(HTMLParser):
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.current = Node("#document", [], None)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.current)
        self.current.children.append(node)
        if tag not in self.VOID:
            self.current = node

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:  # close it (and anything left open inside it)
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def _page_requests(netlog: Path):
    """The http(s) URLs that the page itself asked for, read from Chromium's NetLog: requests made for a
    file:// page (Chromium's own background requests are made for other sites and are left out)."""
    text = netlog.read_text(encoding="utf-8")
    try:
        events = json.loads(text)["events"]
    except json.JSONDecodeError:  # a log cut short at exit lacks its closing brackets
        events = json.loads(text.rstrip().rstrip(",") + "]}")["events"]
    return sorted({e["params"]["url"] for e in events
                   if str(e.get("params", {}).get("network_isolation_key", "")).startswith("file://")
                   and str(e["params"].get("url", "")).startswith(("http:", "https:"))})


@functools.lru_cache(maxsize=None)
def _rendered(name):
    """The DOM of a page after its scripts ran (10 s of virtual time, no network), parsed, and the URLs that
    the page requested from the network."""
    page, _ = PAGES[name]
    with tempfile.TemporaryDirectory() as tmp:
        netlog = Path(tmp) / "netlog.json"
        dom = _run([f"--log-net-log={netlog}", "--dump-dom", (HTML / page).as_uri()]).stdout
        requested = _page_requests(netlog)
    builder = _TreeBuilder()
    builder.feed(dom)
    return builder.root, requested


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_loads_with_its_main_content_and_is_photographed(name):
    page, heading = PAGES[name]
    main = _rendered(name)[0].select("main")
    assert main, f"{page}: no <main> element in the rendered DOM"
    assert heading in main[0].text(), f"{page}: heading {heading!r} missing from the main content"
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{name}.png"
    shot.unlink(missing_ok=True)
    _run(["--hide-scrollbars", "--window-size=1280,3000", f"--screenshot={shot}", (HTML / page).as_uri()])
    assert shot.exists() and shot.stat().st_size > 10_000, f"{page}: no screenshot written"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_requests_nothing_from_the_network(name):
    """Scripts, styles, fonts and images all come from the built book (no CDN, no web fonts)."""
    page, _ = PAGES[name]
    requested = _rendered(name)[1]
    assert not requested, f"{page} requested {requested}"


@pytest.mark.parametrize("name", MATH_PAGES)
def test_mathematics_is_typeset_offline(name):
    """MathJax (served from the book's _static/) replaced every formula; the book's macros are defined."""
    page, _ = PAGES[name]
    source = (HTML / page).read_text(encoding="utf-8")
    formulas = source.count('class="math notranslate nohighlight"')
    assert formulas > 0, f"{page}: the page has no mathematics to check"
    dom = _rendered(name)[0]
    typeset = dom.select("mjx-container")
    assert len(typeset) >= formulas, f"{page}: {len(typeset)} typeset formulas for {formulas} in the source"
    errors = [e.text() for e in dom.select("mjx-merror")]
    assert not errors, f"{page}: MathJax errors: {errors[:3]}"
    # an undefined macro is shown as its name in red; the MathML copy for screen readers holds it as text
    undefined = sorted({t.text(skip=()) for m in dom.select("mjx-assistive-mml") for t in m.select("mtext")
                        if t.text(skip=()).startswith("\\")})
    assert not undefined, f"{page}: undefined TeX macros {undefined} (see mathjax3_config in _config.yml)"
    visible = dom.select("main")[0].text()
    left = [tex for tex in RAW_TEX if tex in visible]
    assert not left, f"{page}: raw TeX delimiters {left} left in the visible text"
