"""Redaction quality on the seeded corpus (recall, precision) and on real data.

Run with ``pytest -s`` to see the figures.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import re
from pathlib import Path

import polars as pl
import pytest

from rlforge.ingest.redaction.redactor import KINDS, Redactor

SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
CORPUS_DIR = Path(__file__).parent / "redaction_corpus"
KEY = b"corpus-key"


def _generator():
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS_DIR / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_corpus_file_is_what_the_seeded_generator_writes():
    gen = _generator()
    assert (CORPUS_DIR / "corpus.jsonl").read_text(encoding="utf-8") == gen.dumps(gen.build())


OLD_KINDS = {"EMAIL", "PHONE", "CARD", "IBAN", "IPV4", "IPV6", "JWT", "PRIVATE_KEY", "PASSWORD",
             "SECRET", "AWS_ACCESS_KEY", "AWS_SECRET_KEY", "GCP_API_KEY", "GITHUB_TOKEN",
             "GITLAB_TOKEN", "SLACK_TOKEN", "STRIPE_KEY", "OPENAI_KEY", "API_KEY", "TOKEN"}


def test_recall_and_precision_on_the_seeded_corpus():
    records = [json.loads(line) for line in (CORPUS_DIR / "corpus.jsonl").open(encoding="utf-8")]
    red = Redactor(KEY)
    planted = covered = found_total = found_true = 0
    missed, false_pos = collections.Counter(), collections.Counter()
    negatives_hit = collections.Counter()
    for rec in records:
        text, spans = rec["text"], rec["planted"]
        found = red.find(text)
        out = red.redact_text(text)
        for s, e, kind in spans:
            planted += 1
            if any(fs <= s and fe >= e for fs, fe, _ in found) and text[s:e] not in out:
                covered += 1
            else:
                missed[kind] += 1
        for fs, fe, kind in found:
            if kind not in OLD_KINDS:
                continue  # names, addresses, MACs...: kinds this corpus does not label
            found_total += 1
            if any(fs < e and fe > s for s, e, _ in spans):
                found_true += 1
            else:
                false_pos[kind] += 1
                for s, e, label in rec["negatives"]:
                    if fs < e and fe > s:
                        negatives_hit[label] += 1
    recall, precision = covered / planted, found_true / found_total
    n_neg = sum(len(r["negatives"]) for r in records)
    print(f"\nredaction corpus: {len(records)} texts, {planted} planted values, "
          f"{n_neg} hard negatives")
    print(f"recall {recall:.4f} ({covered}/{planted})  precision {precision:.4f} "
          f"({found_true}/{found_total})")
    print(f"missed by kind: {dict(missed)}; false positives by kind: {dict(false_pos)}; "
          f"hard negatives hit: {dict(negatives_hit)}")
    assert planted > 2000 and n_neg > 1000
    assert {k for r in records for *_, k in r["planted"]} >= OLD_KINDS
    assert recall >= 0.99
    assert precision >= 0.95


LOGS = sorted((SHARED_DATA / "loghub").glob("*/*_2k.log"))
BITEXT = SHARED_DATA / "tickets" / "bitext" / "bitext_customer_support_sample.csv"


@pytest.mark.skipif(not LOGS or not BITEXT.exists(), reason="shared real data not present")
def test_real_logs_and_tickets_have_few_false_positives():
    red = Redactor(KEY)
    per_source = {}
    for path in LOGS:
        before = collections.Counter(red.counts)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        red.redact_series(pl.Series(lines))
        per_source[path.parent.name] = dict(red.counts - before)
    tickets = pl.read_csv(BITEXT, infer_schema=False)
    before = collections.Counter(red.counts)
    out = red.redact_series(tickets["instruction"])
    red.redact_series(tickets["response"])
    per_source["bitext"] = dict(red.counts - before)
    for source, counts in per_source.items():
        print(f"{source:12s} {counts}")
    # HDFS, OpenSSH, Zookeeper log peer addresses: those are real IPs
    assert per_source["HDFS"].get("IPV4", 0) > 1000 and per_source["OpenSSH"].get("IPV4", 0) > 1000
    # Known non-secrets: block ids, BGL hex/WWN fields, Windows package versions (a~~6.1.1.0),
    # Android object references, Bitext order numbers (15 digits)
    only_ips = {"HDFS", "BGL", "Windows", "Android", "Hadoop", "Spark", "HPC"}
    for source in only_ips:
        assert set(per_source[source]) <= {"IPV4"}, (source, per_source[source])
    assert set(per_source["Thunderbird"]) <= {"IPV4", "MAC"}  # dhcpd logs hosts' MACs
    assert per_source["Windows"] == {}
    # Bitext's tickets name people ("bill from Mr. Smith", "Anna Freeman"); a typo'd order
    # word ("cancel ordedr 3707955617") leaves a ten-digit number that reads as a phone
    assert set(per_source["bitext"]) <= {"EMAIL", "PERSON", "PHONE"}
    assert per_source["bitext"].get("PHONE", 0) <= 5
    orders = tickets.filter(pl.col("entity_type") == "order_id")["entity_value"].to_list()
    lost = [text for o, text in zip(orders, out.filter(tickets["entity_type"] == "order_id"))
            if o not in text]
    print(f"order numbers redacted: {len(lost)} of {len(orders)}: {lost}")
    assert orders and len(lost) <= 2  # "cancel ordedr 3707955617": an Italian mobile's shape


# --- the held-out multi-locale corpus ------------------------------------------------------
# Its phrasings were written before the detector's name, address, national-number and prose
# rules, in a file of their own (redaction_corpus/heldout.py); values come from faker, whose
# name and street lists the detector does not use. Targets (issue 27): recall >= 0.99 for
# structured kinds, >= 0.95 for names and addresses, >= 0.97 for secrets in prose; hard
# negatives kept >= 0.99; one placeholder per value.
STRUCTURED = {"PHONE", "EMAIL", "CARD", "IBAN", "IPV4", "IPV6", "MAC", "NATIONAL_ID", "SSN",
              "PASSPORT", "DOB", "ACCOUNT"}
NAMES_PLACES = {"PERSON", "ADDRESS"}
PROSE_SECRETS = {"PASSWORD", "API_KEY", "GITHUB_TOKEN", "PRIVATE_KEY"}
TARGET = {**{k: 0.99 for k in STRUCTURED}, **{k: 0.95 for k in NAMES_PLACES},
          **{k: 0.97 for k in PROSE_SECRETS}}


def _heldout():
    spec = importlib.util.spec_from_file_location("heldout", CORPUS_DIR / "heldout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score_heldout(red: Redactor, records: list[dict]) -> dict:
    """Recall per kind, hard negatives kept per label, and consistency, reading what
    `redact_series` (the ingest path) stores: a planted value counts as caught when every
    word of it lies in a redacted span and it no longer occurs in the stored text."""
    stored = red.redact_series(pl.Series([r["text"] for r in records])).to_list()
    planted, caught = collections.Counter(), collections.Counter()
    negatives, kept = collections.Counter(), collections.Counter()
    groups: dict[str, list] = collections.defaultdict(list)
    missed = collections.defaultdict(list)
    for rec, out in zip(records, stored):
        text = rec["text"]
        found = red.findings(text)
        for s, e, kind, group in rec["planted"]:
            planted[kind] += 1
            value = text[s:e]
            words = [(m.start() + s, m.end() + s) for m in re.finditer(r"\w+", value)]
            ok = all(any(fs <= a and fe >= b for fs, fe, *_ in found) for a, b in words) \
                and (len(value) < 4 or value not in out)
            caught[kind] += ok
            if not ok:
                missed[kind].append(value)
            if group:
                holders = {ph for fs, fe, _, ph in found if fs <= s < fe} if ok else set()
                groups[f"{id(rec)}:{group}"].append(holders)
        for s, e, label in rec["negatives"]:
            negatives[label] += 1
            kept[label] += not any(fs < e and fe > s for fs, fe, *_ in found)
    # values written more than once in a ticket (a phone as "(652) 615-3776" and
    # "6526153776"), all occurrences caught: one placeholder for all of them?
    repeated = [v for v in groups.values() if len(v) > 1 and all(v)]
    split = [v for v in repeated if len(set().union(*v)) != 1]
    return {"planted": planted, "caught": caught, "negatives": negatives, "kept": kept,
            "consistent": len(repeated) - len(split), "groups": len(repeated), "split": split,
            "missed": missed}


@pytest.mark.slow
def test_heldout_multilocale_recall_negatives_and_consistency():
    records = _heldout().build(2000, seed=27)
    red = Redactor(KEY)
    r = score_heldout(red, records)
    planted, caught = r["planted"], r["caught"]
    print(f"\nheld-out corpus: {len(records)} tickets in 6 locales, {sum(planted.values())} "
          f"planted values, {sum(r['negatives'].values())} hard negatives")
    print(f"{'kind':13s} {'caught':>11s} {'recall':>7s} {'target':>7s}")
    for kind in sorted(planted):
        rec = caught[kind] / planted[kind]
        flag = "" if rec >= TARGET[kind] else "  BELOW TARGET"
        print(f"{kind:13s} {caught[kind]:5d}/{planted[kind]:<5d} {rec:7.4f} {TARGET[kind]:7.2f}{flag}")
    print(f"{'hard negative':13s} {'kept':>11s}")
    for label in sorted(r["negatives"]):
        print(f"{label:13s} {r['kept'][label]:5d}/{r['negatives'][label]:<5d} "
              f"{r['kept'][label] / r['negatives'][label]:7.4f}")
    kept_all = sum(r["kept"].values()) / sum(r["negatives"].values())
    print(f"hard negatives kept overall {kept_all:.4f}; consistency {r['consistent']}/{r['groups']} "
          f"values written more than once got one placeholder")
    for kind in sorted(planted):
        assert caught[kind] / planted[kind] >= TARGET[kind], (kind, r["missed"][kind][:10])
    assert kept_all >= 0.99
    assert r["groups"] > 300 and r["consistent"] == r["groups"], r["split"][:5]


def test_heldout_scoring_can_fail():
    """The scorer counts a value the redactor leaves alone as missed, and a negative it
    redacts as lost: with names and phones off, those kinds score 0."""
    records = _heldout().build(60, seed=3)
    r = score_heldout(Redactor(KEY, kinds=set(KINDS) - {"PERSON", "PHONE"}), records)
    assert r["planted"]["PERSON"] > 10 and r["caught"]["PERSON"] == 0
    assert r["planted"]["PHONE"] > 5 and r["caught"]["PHONE"] == 0
    everything = re.compile(r"[^ \n]+")
    r = score_heldout(Redactor(KEY, patterns={"ANY": everything.pattern}), records)
    assert sum(r["kept"].values()) == 0


@pytest.mark.slow  # two processes importing faker: 65 s at a load average of 70
def test_heldout_corpus_is_the_same_under_any_hash_seed():
    """The same seed builds the same held-out corpus in processes with other hash seeds
    (faker makes it_IT's city list from a set)."""
    import os
    import subprocess
    import sys

    script = ("import importlib.util, json, sys; "
              f"spec = importlib.util.spec_from_file_location('heldout', {str(CORPUS_DIR / 'heldout.py')!r}); "
              "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
              "sys.stdout.write(json.dumps(m.build(300)))")
    built = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")]
    assert built[0] == built[1] and len(json.loads(built[0])) == 300
