"""notebooks/sanitize.cfg: every rule parses (as configparser and as nbval read it) and does what it says."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

CFG = Path(__file__).resolve().parent.parent / "notebooks" / "sanitize.cfg"


@pytest.fixture(scope="module")
def text():
    if not CFG.exists():
        pytest.fail(f"{CFG} is missing")
    return CFG.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def rules(text):
    parser = configparser.ConfigParser()
    parser.read_string(text)
    assert parser.sections(), "sanitize.cfg has no [section]"
    out = []
    for section in parser.sections():
        assert set(parser[section]) == {"regex", "replace"}, f"[{section}] needs exactly regex and replace"
        regex, replace = parser[section]["regex"], parser[section]["replace"]
        assert regex.strip() and replace.strip(), f"[{section}] has an empty regex or replace"
        out.append((re.compile(regex), replace))
    return out


def apply(rules, s: str) -> str:
    for regex, replace in rules:
        s = regex.sub(replace, s)
    return s


def test_every_rule_compiles_and_nbval_reads_the_same_rules(text, rules):
    nbval_plugin = pytest.importorskip("nbval.plugin", reason="nbval is not installed")
    # nbval's own reader: "regex: ...\nreplace: ..." line pairs; a rule it cannot read is silently dropped
    nbval_rules = nbval_plugin.get_sanitize_patterns(text)
    assert [(r.pattern, rep) for r, rep in rules] == [(p, rep) for p, rep in nbval_rules]


def test_memory_address_is_replaced(rules):
    assert apply(rules, "<Figure at 0x7f3a2c1d9e50>") == "<Figure at 0xADDRESS>"
    assert apply(rules, "<object at 0x55D1C0FFEE00> and <x at 0x7ffd1234abcd>") == (
        "<object at 0xADDRESS> and <x at 0xADDRESS>"
    )


@pytest.mark.parametrize("s", ["0.4188", "pairs: 499500", "mean_socm: 0.0312", "d = 384, n = 1000", "SOCM 0.618",
                               "seed 0x2a"])
def test_results_are_left_unchanged(rules, s):
    assert apply(rules, s) == s
