"""`rlforge run` on a real commits.repair task: the policy patches code in the sandbox, the
task's own test suite (with its prepared venv) scores the final workspace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from builds import build_options
from paths import SAMPLE_DATA
from rlforge import db, envs
from rlforge.ingest.commits import ingest_repo
from rlforge.tasks.build import build_tasks
from test_run import alternate, rollouts_of, run_json
from test_run_support import SUBMIT, ScriptedPolicy, bash_call

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]


@pytest.fixture(scope="module")
def repair_task(tmp_path_factory, shared_cache) -> Path:
    root = tmp_path_factory.mktemp("repair")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLFORGE_CACHE_DIR", str(shared_cache))
        subprocess.run([sys.executable, str(SAMPLE_DATA / "repo" / "build_repo.py"),
                        str(root / "dura")], check=True, capture_output=True)
        con = db.connect(root / "rlforge.duckdb")
        try:
            ingest_repo(con, root / "dura")
            build_tasks(con, build_options(out=root / "tasks", generators=["commits.repair"],
                                           limit=1, validate=False))
        finally:
            con.close()
    [task] = [p for p in (root / "tasks").iterdir() if (p / "task.toml").is_file()]
    return task


def test_a_patch_made_with_bash_passes_and_doing_nothing_fails(cli, repair_task, tmp_path,
                                                               query):
    gold = (repair_task / "solution" / "gold.diff").read_text()
    fix = f"cat > /tmp/fix.diff <<'RLFORGE_EOF'\n{gold}RLFORGE_EOF\ngit apply /tmp/fix.diff && echo applied"
    policy = ScriptedPolicy({}).start()
    # The task's instruction has no script marker: every request plays the default script.
    policy.scripts[""] = [alternate(bash_call(fix), "I cannot fix this."), SUBMIT]
    try:
        result, data = run_json(cli, repair_task.parent, "--base-url", policy.url, "--model", "m",
                                "--samples", "2", "--concurrency", "1")
    finally:
        policy.stop()
    assert result.exit_code == 0, result.output
    records = {r["outcome"]: r for r in rollouts_of(data["run_dir"])}
    assert set(records) == {"pass", "fail"}
    passed, failed = records["pass"], records["fail"]
    assert passed["messages"][3]["content"].endswith("applied\n")
    assert passed["scored_by"] == "sandbox" and passed["ended_by"] == "submitted"
    components = passed["reward"]["components"]
    assert components["fail_to_pass"]["value"] == 1.0 and components["pass_to_pass"]["value"] == 1.0
    # The submission keeps the changed files and the patch as a diff.
    assert passed["submission"]["diff"].startswith("diff --git a/")
    assert set(passed["submission"]["files"]) <= {line[len("+++ b/"):] for line in gold.splitlines()
                                                  if line.startswith("+++ b/")}
    assert failed["submission"]["files"] == {} and failed["reward"]["total"] == 0.0
    # Re-scored without the model, and through the Python API, the rewards hold.
    again = cli("rescore", data["run_id"], "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["rescored"]["changed"] == 0
    with envs.load(repair_task) as env:
        assert env.verify(passed["submission"])["total"] == passed["reward"]["total"]
        assert env.verify(gold)["outcome"] == "pass"  # a diff as a text submission
    assert query("SELECT count(*) FROM rollouts WHERE scored_by = 'sandbox'") == [(2,)]
