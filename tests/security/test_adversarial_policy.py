"""A policy that plays every attack found so far, through `rlforge run`, never gets a pass
and never an `invalid`.

The attacks are `benchmarks/adversarial_policy.py`'s (memory no RSS shows, bytes no program
can receive, tool arguments no parser expects, signals, planted reward files, huge
outputs, odd workspace files, ...), one a sample, here on a task whose answer is read in
the rlforge process and on one whose verifier runs the submitted program in the sandbox.
Each of them once made a rollout `invalid`, stopped the run, or was never tried; an
invalid rollout is dropped from the pass rate, so a policy that learned them would train
on a world where it never fails.
"""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path

import pytest

from paths import ROOT
from test_run_support import count_task, script_task

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def _benchmark():
    spec = importlib.util.spec_from_file_location("adversarial_policy",
                                                  ROOT / "benchmarks" / "adversarial_policy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_attack_is_the_policys_own_fail(cli, tmp_path):
    bench = _benchmark()
    tasks = tmp_path / "tasks"
    count_task(tasks, "count")
    script_task(tasks, "prog")
    policy = bench.AdversarialPolicy()
    url = policy.start()
    try:
        result = cli("run", tasks, "--base-url", url, "--model", "adversarial",
                     "--samples", str(len(bench.ATTACKS)), "--max-turns", "4",
                     "--max-infra-error-rate", "1", "--json")
    finally:
        policy.server.shutdown()
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    records = [json.loads(line) for line in
               (Path(data["run_dir"]) / "rollouts.jsonl").read_text().splitlines()]
    assert len(records) == 2 * len(bench.ATTACKS)
    outcomes = collections.Counter(r["outcome"] for r in records)
    wrong = [(policy.attack_for({"messages": r["messages"], "seed": r["seed"]}), r["outcome"],
              r["error"]) for r in records if r["outcome"] in ("pass", "invalid")]
    assert not wrong, wrong
    assert outcomes["fail"] + outcomes["timeout"] == len(records)
    assert data["infra_error_rate"] == 0.0
