"""The `frontdesk.py` held-out corpus is what it says it is: the same records for a seed,
markup that parses into spans over the text, and values that a checker would accept.

The detector's figures on this corpus are reported by `tests/redaction_corpus/score.py`,
never asserted here: a floor would invite tuning the rules to it.
"""

from __future__ import annotations

import collections
import importlib.util
import re
from pathlib import Path

import pytest
from test_sample_data import _iban_ok, _luhn_ok

CORPUS = Path(__file__).parent / "redaction_corpus" / "frontdesk.py"
KINDS = {"PERSON", "EMAIL", "PHONE", "ADDRESS", "DOB", "PASSWORD", "API_KEY", "GITHUB_TOKEN", "IBAN",
         "CARD", "NATIONAL_ID"}


def _load():
    spec = importlib.util.spec_from_file_location("frontdesk", CORPUS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def frontdesk():
    return _load()


@pytest.fixture(scope="module")
def records(frontdesk):
    return frontdesk.build()


def test_same_seed_same_records_and_another_seed_differs(frontdesk):
    assert frontdesk.build(120, seed=7) == _load().build(120, seed=7)
    assert frontdesk.build(120, seed=7) != frontdesk.build(120, seed=8)


def test_markup_parses_into_spans_over_the_text(frontdesk):
    rec = frontdesk._record("en", "Hi [[PERSON|ana lópez]], {{product|Lumen Desk}} is down; call"
                                  " [[PHONE|0612]] or [[PHONE|+31 612]].", "x", "crm",
                            {("PHONE", "0612"): "p", ("PHONE", "+31 612"): "p"})
    assert rec["text"] == "Hi ana lópez, Lumen Desk is down; call 0612 or +31 612."
    got = [(rec["text"][s:e], kind, group) for s, e, kind, group in rec["planted"]]
    assert got == [("ana lópez", "PERSON", "ana lópez"), ("0612", "PHONE", "p"), ("+31 612", "PHONE", "p")]
    assert [(rec["text"][s:e], label) for s, e, label in rec["negatives"]] == [("Lumen Desk", "product")]


def test_every_record_is_well_formed(records):
    assert len(records) >= 600
    for rec in records:
        text = rec["text"]
        assert not re.search(r"\[\[|\]\]|\{\{|\}\}|⟨|⟩", text), text
        spans = [(s, e) for s, e, *_ in rec["planted"]] + [(s, e) for s, e, _ in rec["negatives"]]
        spans.sort()
        assert all(0 <= s < e <= len(text) for s, e in spans)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), text
        for s, e, kind, group in rec["planted"]:
            assert kind in KINDS and group and text[s:e] == text[s:e].strip()
        for s, e, label in rec["negatives"]:
            assert re.fullmatch(r"[a-z_]+", label) and text[s:e] == text[s:e].strip()


def test_breadth_of_languages_origins_styles_and_kinds(records):
    assert len({r["locale"] for r in records}) >= 6
    assert len({r["origin"] for r in records} - {"-"}) >= 10
    assert len({r["country"] for r in records}) >= 7
    kinds = collections.Counter(kind for r in records for *_, kind, _ in r["planted"])
    assert set(kinds) == KINDS
    assert any(r["planted"] == [] and r["negatives"] for r in records)
    lower = [r["text"][s:e] for r in records for s, e, kind, _ in r["planted"] if kind == "PERSON"]
    assert any(" " in name and name == name.lower() for name in lower)


def test_cards_and_ibans_carry_valid_check_digits(records):
    values = collections.defaultdict(list)
    for rec in records:
        for s, e, kind, _ in rec["planted"]:
            values[kind].append(re.sub(r"[ -]", "", rec["text"][s:e]))
    assert values["CARD"] and all(_luhn_ok(v) for v in values["CARD"])
    assert values["IBAN"] and all(_iban_ok(v) for v in values["IBAN"])
    for value in values["NATIONAL_ID"]:
        if re.fullmatch(r"\d{8}[A-Z]", value):  # Spanish DNI
            assert "TRWAGMYFPDXBNJZSQVHLCKE"[int(value[:8]) % 23] == value[8]
        elif re.fullmatch(r"\d{11}", value):  # Polish PESEL
            weights = (1, 3, 7, 9, 1, 3, 7, 9, 1, 3, 1)
            assert sum(int(c) * w for c, w in zip(value, weights)) % 10 == 0, value
        elif re.fullmatch(r"\d{15}", value):  # French NIR with its key
            assert 97 - int(value[:13]) % 97 == int(value[13:]), value
