#!/usr/bin/env python3
"""The incidents planted across Tallybird's tickets, logs and the `dura` repository.

One source of truth for the generators: the ticket generator (tickets/planted.py) and
the log generator (logs/generate.py) take their times and identifiers from here, and
this script writes the ground truth, ``incidents.json``:

    python sample_data/tallybird_incidents.py        # rewrites sample_data/incidents.json

Each incident is a regression in `dura` (Tallybird's own duration library) that reached a
Python service: the customer's ticket, the error burst in that day's logs
(``logs/<day>/``) and the dura commit that fixes it and names the ticket. The decoys
look like links and are not. Standard library only.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def utc(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")


# --- INC-2024-0514-01: invoices with payment terms of a week or more cannot be saved ---------
# billing-api 2024.05.2 brings dura 0.3.0, whose format_duration writes '2w' for 14 days;
# billing stores payment terms with format_duration and reads them back with
# parse_duration, which knows no 'w'.
TERMS = {
    "day": "2024-05-14",
    "window": (utc("2024-05-14 07:00:00"), utc("2024-05-14 12:00:00")),
    "deploy": utc("2024-05-14 08:47:09"),
    "rollback": utc("2024-05-14 09:58:30"),
    "error_code": "BILLING_E4220",
    # the customer's failed request, quoted in the ticket and logged by billing-api
    "request_id": "req_5d1e2a9b7c40",
    "request_at": utc("2024-05-14 09:02:51"),
    "shop": "bakery-lumen",
    "ticket_index": 114,  # tickets.csv, id 10115
    "ticket_at": utc("2024-05-14 09:06:41"),
}

# --- INC-2024-0730-01: hardware-store checkout fails in the afternoon ---------------------
# store-api 2024.07.3 passes the warehouse's time-zone-aware clock to add_business_hours
# for the dispatch estimate; from 15:00 Dublin time the two business hours run into the
# next working day and the result comes back naive, so comparing it fails.
DISPATCH = {
    "day": "2024-07-30",
    "window": (utc("2024-07-30 12:00:00"), utc("2024-07-30 18:00:00")),
    "deploy": utc("2024-07-30 13:21:40"),
    "first_error": utc("2024-07-30 14:00:00"),  # 15:00 in Dublin (UTC+1)
    "rollback": utc("2024-07-30 16:04:55"),
    "trace_id": "7d3e0c41a9f24b6c8e15d2a7b3f90c68",
    "trace_at": utc("2024-07-30 14:41:07"),
    "shop": "bikes-spoke",
    "ticket_index": 180,  # zendesk_export.json, id 52361
    "ticket_at": utc("2024-07-30 14:52:18"),
}

# --- INC-2024-1008-01: failed webhook deliveries expire instead of being retried -----------
# webhooks 2024.10.1 brings dura with milliseconds, where '500ms' (the default retry
# delay) is read as 500 minutes: the retry falls outside the 1-hour delivery window.
RETRY = {
    "day": "2024-10-08",
    "window": (utc("2024-10-08 07:00:00"), utc("2024-10-08 12:00:00")),
    "deploy": utc("2024-10-08 08:55:12"),
    "rollback": utc("2024-10-08 10:48:03"),
    "ticket_index": 240,  # jira_export.csv, SUP-121
    "ticket_at": utc("2024-10-08 09:41:26"),
}

# --- decoys -------------------------------------------------------------------------------
UNKNOWN_REQUEST = {  # a billing ticket the day after INC-2024-0514-01, its id in no log
    "request_id": "req_91f0c7e2b38a",
    "ticket_index": 115,  # tickets.csv, id 10116
    "ticket_at": utc("2024-05-15 09:40:12"),
}
QUIET_SERVICE = {  # names webhooks on 2024-07-30, when the webhooks log has no errors
    "ticket_index": 181,  # zendesk_export.json, id 52362 (moved to the afternoon before)
    "ticket_at": utc("2024-07-30 17:18:45"),
}

COMMITS = {  # subjects of the dura commits (sample_data/repo/history.toml)
    "weeks_format": "format_duration: group seven days into a week ('2w 3d')",
    "weeks_fix": "parse_duration cannot read the weeks that format_duration writes",
    "aware_fix": "add_business_hours drops the time zone when the hours run into the next day",
    "ms_fix": "'500ms' is read as 500 minutes",
}


def iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def ground_truth() -> dict:
    """incidents.json: what a linker should find, and what it must not."""
    return {
        "incidents": [
            {
                "id": "INC-2024-0514-01",
                "title": "Invoices with payment terms of a week or more cannot be saved",
                "ticket": "csv:10115",
                "commit_subject": COMMITS["weeks_fix"],
                "log": [
                    {"file": "logs/2024-05-14/billing-api.jsonl", "start": iso(TERMS["deploy"]),
                     "end": iso(TERMS["rollback"]),
                     "ids": [TERMS["request_id"], TERMS["error_code"]]},
                    {"file": "logs/2024-05-14/edge-access.log", "start": iso(TERMS["deploy"]),
                     "end": iso(TERMS["rollback"]), "ids": []},
                ],
                "evidence": ["ticket_key", "shared_id"],
                "root_cause": "dura 0.3.0: format_duration writes weeks ('2w') that "
                              "parse_duration rejects; billing-api round-trips payment terms",
            },
            {
                "id": "INC-2024-0730-01",
                "title": "Hardware-store checkout fails for orders placed after 15:00 Dublin time",
                "ticket": "zendesk:52361",
                "commit_subject": COMMITS["aware_fix"],
                "log": [
                    {"file": "logs/2024-07-30/store-api.jsonl", "start": iso(DISPATCH["first_error"]),
                     "end": iso(DISPATCH["rollback"]), "ids": [DISPATCH["trace_id"]]},
                    {"file": "logs/2024-07-30/edge-access.log", "start": iso(DISPATCH["first_error"]),
                     "end": iso(DISPATCH["rollback"]), "ids": []},
                ],
                "evidence": ["ticket_url", "shared_id"],
                "root_cause": "dura add_business_hours returns a naive date-time for an aware "
                              "start once the hours run into the next working day",
            },
            {
                "id": "INC-2024-1008-01",
                "title": "Failed webhook deliveries expire instead of being retried",
                "ticket": "jira:SUP-121",
                "commit_subject": COMMITS["ms_fix"],
                "log": [
                    {"file": "logs/2024-10-08/webhooks.jsonl", "start": iso(RETRY["deploy"]),
                     "end": iso(RETRY["rollback"]), "ids": []},
                ],
                "evidence": ["ticket_key", "time_component"],
                "root_cause": "dura unit_seconds takes the 's' of 'ms' for a plural: '500ms' "
                              "is 500 minutes, past the 1-hour delivery window",
            },
        ],
        "decoys": [
            {"kind": "request_id_in_no_log", "ticket": "csv:10116",
             "value": UNKNOWN_REQUEST["request_id"],
             "note": "a billing ticket the day after INC-2024-0514-01 quoting a request id "
                     "that no log holds (billing logs end the day before)"},
            {"kind": "number_not_a_ticket_key", "commit_subject": COMMITS["weeks_format"],
             "value": "10080",
             "note": "the message says '10080 minutes'; csv:10080 exists but is not "
                     "referenced (no '#', no 'ticket')"},
            {"kind": "service_on_a_quiet_day", "ticket": "zendesk:52362",
             "value": "webhooks", "log": "logs/2024-07-30/webhooks.jsonl",
             "note": "names webhooks at 17:18 on 2024-07-30; that day's webhooks log has no "
                     "errors (the store-api burst that afternoon is another service)"},
        ],
    }


def main() -> int:
    path = HERE / "incidents.json"
    path.write_text(json.dumps(ground_truth(), indent=2) + "\n", encoding="utf-8")
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
