"""Real public ticket text with hand labels, as records the corpus scorer reads.

The text stays in ../shared/data (it is not the project's to copy); `real_labels.json`
holds where each labelled value is and how it was labelled. Planted values: the people
named in Bitext requests and in Jira comments, found by their written form in the text
they were read in. Hard negatives, which must be kept whole: the values Bitext's publisher
tagged in other requests (order and invoice numbers, cities, countries, account types,
amounts), and every request with no tagged value.

Record shape as in `heldout.py`; ``locale`` is the source (``bitext``, ``jira``).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE.parent.parent.parent / "shared" / "data"


def _spans(text: str, kind: str, value: str) -> list[list]:
    found = [[m.start(), m.end(), kind, ""] for m in re.finditer(re.escape(value), text)]
    if not found:
        raise ValueError(f"labelled value {value!r} is not in {text!r}")
    return found


def build(n: int = 0, seed: int = 0) -> list[dict]:
    """The records (`n`, `seed`: unused, as every labelled text is taken)."""
    labels = json.loads((HERE / "real_labels.json").read_text(encoding="utf-8"))
    records = []
    bitext = labels["bitext"]
    named = {row: value for value, rows in bitext["PERSON"].items() for row in rows}
    with open(DATA / bitext["path"], encoding="utf-8", newline="") as f:
        for row, rec in enumerate(csv.DictReader(f)):
            text = rec[bitext["field"]]
            if row in named:
                records.append({"locale": "bitext", "text": text,
                                "planted": _spans(text, "PERSON", named[row]), "negatives": []})
            elif rec["entity_type"] and rec["entity_type"] != "person_name":
                # the publisher's value, as written ("Platinum" is "platinum" in the text;
                # "00004587345" is tagged 4587345): skipped where not written as tagged
                negatives = [[m.start(), m.end(), rec["entity_type"]] for m in
                             re.finditer(re.escape(rec["entity_value"]), text, re.IGNORECASE)]
                if negatives:
                    records.append({"locale": "bitext", "text": text, "planted": [],
                                    "negatives": negatives})
            elif not rec["entity_type"]:
                records.append({"locale": "bitext", "text": text, "planted": [],
                                "negatives": [[0, len(text), "request"]]})
    for item in labels["jira"]:
        body = json.loads((DATA / item["path"]).read_text(encoding="utf-8"))["comments"][item["comment"]]["body"]
        planted = [s for kind, value in item["values"] for s in _spans(body, kind, value)]
        records.append({"locale": "jira", "text": body, "planted": planted,
                        "negatives": [] if planted else [[0, len(body), "comment"]]})
    return records
