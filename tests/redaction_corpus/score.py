"""Print per-kind recall and hard negatives kept, overall and per language (or style or
source), on the held-out corpora: `heldout.py` (values from faker), `second.py` (values
from mimesis), `name_styles.py` (names written in ten styles, fifteen countries),
`unseen_names.py` (names from sources no other corpus uses, held out from session 50's
rules), `fresh.py` (hand-written tickets, scored once), `real.py` (real public ticket
text, hand-labelled), `crafted.py` (names of 22 origins in eight styles and words that
look like names, written for session 51 before its rules; tuned on by session 52) and
`chatmail.py` (chat and e-mail tickets with the name groups `crafted.py` found weakest,
written for session 52 before its rules) and `frontdesk.py` (CRM notes, macros, forum
posts, quoted threads, voicemails, escalations and order exports in eight languages, names
of sixteen origins, written for session 53 by someone who never read the rules) and
`backoffice.py` (travel bookings, clinic notes, HR requests, call transcripts, minutes, delivery
notes and claim forms, names of twenty origins in twelve written forms, written for session
55 before its rules; its PERSON recall is also printed per form) and `switchboard.py` (chat
and SMS logs, forum posts, work orders, registrations and letters, names of twenty-six origins
in fourteen written forms, written for session 56 before its rules; per form too).

    PYTHONPATH=. .venv/bin/python tests/redaction_corpus/score.py [heldout|second|name_styles|unseen_names|fresh|real|crafted|chatmail|frontdesk|backoffice|switchboard] [N]
"""

from __future__ import annotations

import collections
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    from rlforge.ingest.redaction.redactor import Redactor

    which = sys.argv[1] if len(sys.argv) > 1 else "second"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    records = _load(which).build(n)
    scorer = _load("../test_redact_corpus").score_heldout
    red = Redactor(b"corpus-key")
    by_lang = collections.defaultdict(list)
    for rec in records:
        by_lang[rec["locale"]].append(rec)
    results = {"all": scorer(red, records), **{k: scorer(red, v) for k, v in by_lang.items()}}
    kinds = sorted(results["all"]["planted"])
    print(f"{which}: {n} tickets; recall per kind (caught/planted), hard negatives kept")
    print(f"{'':6s}" + "".join(f"{k[:11]:>12s}" for k in kinds) + f"{'negatives':>12s}")
    for lang, r in results.items():
        cells = [f"{r['caught'][k] / r['planted'][k]:.3f}" if r["planted"][k] else "-" for k in kinds]
        kept = sum(r["kept"].values()) / max(1, sum(r["negatives"].values()))
        print(f"{lang:6s}" + "".join(f"{c:>12s}" for c in cells) + f"{kept:12.4f}")
    for key in ("origin", "country"):  # PERSON recall per style or country of the name
        groups = collections.defaultdict(list)
        for rec in records:
            groups[rec.get(key, "")].append(rec)
        if len(groups) > 1:
            print(f"PERSON recall per {key}:", {o: f"{x['caught']['PERSON'] / x['planted']['PERSON']:.3f}"
                                               for o, x in ((o, scorer(red, v)) for o, v in sorted(groups.items()))
                                               if x["planted"]["PERSON"]})
    if records and "forms" in records[0]:  # PERSON recall per written form of the name
        per_form = collections.defaultdict(list)
        for rec in records:
            for s, e, form in rec["forms"]:
                per_form[form].append({**rec, "planted": [[s, e, "PERSON", ""]], "negatives": []})
        print("PERSON recall per form:", {f: "{caught}/{n}".format(caught=scorer(red, v)["caught"]["PERSON"],
                                                                    n=len(v)) for f, v in sorted(per_form.items())})
    r = results["all"]
    print("negatives kept per label:", {k: f"{r['kept'][k]}/{v}" for k, v in sorted(r["negatives"].items())})
    if "-v" in sys.argv:
        for k in kinds:
            print(k, r["missed"][k][:15])


if __name__ == "__main__":
    main()
