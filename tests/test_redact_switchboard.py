"""The `switchboard.py` held-out corpus is what it says it is: the same records for a seed,
markup that parses into spans over the text, a form for every planted name, and the breadth
its docstring promises.

The detector's figures on this corpus are printed by `tests/redaction_corpus/score.py
switchboard`, never asserted here: a floor would invite tuning the rules to it.
"""

from __future__ import annotations

import collections
import importlib.util
import re
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "redaction_corpus" / "switchboard.py"


def _load():
    spec = importlib.util.spec_from_file_location("switchboard", CORPUS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def switchboard():
    return _load()


@pytest.fixture(scope="module")
def records(switchboard):
    return switchboard.build()


def test_same_seed_same_records_and_another_seed_differs(switchboard):
    assert switchboard.build(120, seed=7) == _load().build(120, seed=7)
    assert switchboard.build(120, seed=7) != switchboard.build(120, seed=8)


def test_every_record_is_well_formed(records):
    assert len(records) == 500
    for rec in records:
        text = rec["text"]
        assert not re.search(r"\[\[|\]\]|\{\{|\}\}|⟨|⟩", text), text
        spans = sorted([(s, e) for s, e, *_ in rec["planted"]] + [(s, e) for s, e, _ in rec["negatives"]])
        assert all(0 <= s < e <= len(text) for s, e in spans)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), text
        for s, e, kind, _ in rec["planted"]:
            assert kind == "PERSON" and text[s:e] == text[s:e].strip(), text[s:e]
        assert [[s, e] for s, e, _ in rec["forms"]] == [[s, e] for s, e, *_ in rec["planted"]]


def test_airline_names_are_one_upper_case_slash_pair(records):
    airline = [rec["text"][s:e] for rec in records for s, e, form in rec["forms"] if form == "airline"]
    assert airline and all(re.fullmatch(r"[A-Z']+/[A-Z]+", name) for name in airline), airline


def test_breadth_of_languages_origins_sources_forms_and_negatives(records):
    assert {r["locale"] for r in records} == {"en", "de", "fr", "es", "it", "nl", "pt", "pl"}
    assert len({r["origin"] for r in records} - {"-"}) == 26
    assert {r["country"] for r in records} == {"chat", "sms", "forum", "workorder", "registration", "letter"}
    forms = collections.Counter(form for r in records for *_, form in r["forms"])
    assert set(forms) == {"full", "lower", "upper", "airline", "surname_comma", "surname_first", "initial",
                          "given_initial", "title", "given_alone", "given_lower", "hyphenated", "possessive",
                          "with_email"}
    assert min(forms.values()) >= 15, forms
    nameless = [r for r in records if r["origin"] == "-"]
    assert len(nameless) == 83 and all(r["planted"] == [] and r["negatives"] for r in nameless)
    labels = collections.Counter(label for r in records for *_, label in r["negatives"])
    assert set(labels) == {"place", "product", "team", "company", "role", "word", "slash"}
