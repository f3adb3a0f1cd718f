"""sample_data/logs: the seeded generator is deterministic, every file ingests in the
format README.md names, and the incident is where incident.json says it is."""

from __future__ import annotations

import importlib.util
import json

from paths import SAMPLE_DATA

LOGS = SAMPLE_DATA / "logs"


def _generator():
    spec = importlib.util.spec_from_file_location("logs_generate", LOGS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generator_reproduces_the_committed_files(tmp_path):
    for path in _generator().write(tmp_path):
        rel = path.relative_to(tmp_path)  # the incident days are in folders of their own
        assert path.read_bytes() == (LOGS / rel).read_bytes(), rel


def test_another_seed_gives_other_logs_with_the_same_story(tmp_path):
    gen = _generator()
    gen.write(tmp_path, seed=1)
    assert (tmp_path / "edge-access.log").read_bytes() != (LOGS / "edge-access.log").read_bytes()
    assert (tmp_path / "incident.json").read_bytes() == (LOGS / "incident.json").read_bytes()


def test_sample_logs_ingest_and_show_the_incident(cli, query):
    files = sorted(p for p in LOGS.iterdir() if p.is_file() and p.name not in (
        "generate.py", "README.md", "incident.json"))  # not __pycache__ of the generator
    out = cli("ingest", "logs", *files, "--json")
    assert out.exit_code == 0, out.output
    got = {f["path"].rsplit("/", 1)[-1]: f for f in json.loads(out.output)["files"]}
    assert {k: v["format"] for k, v in got.items()} == {
        "billing-api.jsonl": "jsonl", "edge-access.log": "access", "inventory-sync.log": "plain",
        "pg-main.syslog": "syslog", "pos-gateway.json.log.gz": "docker"}
    assert all(f["reconciles"] for f in got.values())
    assert sum(f["n_quarantined"] for f in got.values()) == 2  # the two broken lines
    assert got["inventory-sync.log"]["n_read"] < 720  # stack traces joined
    incident = json.loads((LOGS / "incident.json").read_text())
    start, end = incident["start"].replace("T", " ")[:19], incident["end"].replace("T", " ")[:19]
    inside, outside = query(f"""
        SELECT count(*) FILTER (WHERE ts BETWEEN '{start}' AND '{end}'),
               count(*) FILTER (WHERE ts NOT BETWEEN '{start}' AND '{end}')
        FROM log_lines WHERE level IN ('error', 'fatal')""")[0]
    assert inside > 10 * max(outside, 1)
    fatal = query("SELECT count(*) FROM log_lines WHERE message LIKE '%too many clients%'")[0][0]
    assert fatal > 10
    # nothing personal reaches the store
    assert query("SELECT count(*) FROM log_lines WHERE message LIKE '%@%.example%' "
                 "OR fields::VARCHAR LIKE '%@%.example%'") == [(0,)]
