"""`rlforge export tasks`: each format loads in the library that consumes it, and scores right.

Tasks are built from sample_data once per module (without sandboxed validation, which
`test_build_tasks.py` covers). veRL's schema below is written from veRL's documentation
(docs/preparation/prepare_data.rst), not from rlforge's constants.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from builds import build_options
from paths import SAMPLE_DATA
from rlforge import db
from rlforge.export import trl_reward
from rlforge.ingest import tickets
from rlforge.ingest.commits import ingest_repo
from rlforge.run.environment import EnvOptions, Environment
from rlforge.taskdir import load_task
from rlforge.tasks.build import build_tasks

datasets = pytest.importorskip("datasets")

TICKETS = SAMPLE_DATA / "tickets"
MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))


def build_sample_tasks(root: Path, limit: int = 40) -> Path:
    """Ingest the sample tickets into a new database under root and build tasks from them."""
    con = db.connect(root / "rlforge.duckdb")
    # A fixed key: pseudonyms, so task texts and ids, and so what the tests' graded
    # policies answer, are the same every run (a new database draws a random key).
    db.meta_set(con, "redaction_key", "3c" * 32)
    try:
        tickets.ingest_file(con, TICKETS / "tickets.csv")
        tickets.ingest_file(con, TICKETS / "zendesk_export.json",
                            mapping={"category": "custom_fields.360041872211"})
        tickets.ingest_file(con, TICKETS / "jira_export.csv", mapping={"category": "Component/s"})
        # Single-turn tasks only: tickets.reply is multi-turn (the policy searches a
        # knowledge base), so text trainers skip it like any sandboxed task.
        build_tasks(con, build_options(out=root / "tasks", generators=["tickets.triage"],
                                       limit=limit, seed=7, validate=False))
    finally:
        con.close()
    return root / "tasks"


_BUILT: dict[str, Any] = {}


def once(key: str, make: Callable[[], Any]) -> Any:
    """Build a read-only fixture once per test session, for every module that imports it."""
    if key not in _BUILT:
        _BUILT[key] = make()
    return _BUILT[key]


@pytest.fixture(scope="module")
def tasks_dir(tmp_path_factory) -> Path:
    return once("tasks", lambda: build_sample_tasks(tmp_path_factory.mktemp("export-tasks")))


@pytest.fixture(autouse=True)
def hf_offline(monkeypatch, tmp_path):
    """Hugging Face libraries stay offline and cache under tmp_path."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    # datasets reads its cache location once, at import: point it here for this test.
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def task_meta(task: Path) -> dict:
    return tomllib.loads((task / "task.toml").read_text())["metadata"]["rlforge"]


def tasks_by_split(tasks_dir: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for p in sorted(tasks_dir.iterdir()):
        if (p / "task.toml").is_file():
            out.setdefault(task_meta(p)["split"], []).append(p)
    return out


def gold_answer(task: Path) -> str:
    """The text the task's gold solution writes (solution/solve.sh holds it in a heredoc)."""
    script = (task / "solution" / "solve.sh").read_text()
    m = re.search(r"<<'(\w+)'\n(.*)\n\1\n", script, re.S)
    assert m, f"{task.name}: no heredoc in solve.sh"
    return m.group(2)


def export(cli, tasks_dir: Path, out: Path, fmt: str, *args: str) -> dict:
    result = cli("export", "tasks", tasks_dir, "--format", fmt, "--out", out, "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def load_verl_reward(path: Path):
    """Load a custom reward function the way veRL does (a file path and a function name)."""
    spec = importlib.util.spec_from_file_location("custom_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, "compute_score")


def test_verl_parquet_has_verls_documented_schema_and_lineage(cli, tasks_dir, tmp_path):
    report = export(cli, tasks_dir, tmp_path / "verl", "verl", "--split", "all")
    splits = tasks_by_split(tasks_dir)
    assert report["rows"] == {s: len(splits.get(s, [])) for s in ("train", "val", "test")}
    table = pq.read_table(tmp_path / "verl" / "train.parquet")
    schema = table.schema
    # The five fields veRL's RLHFDataset and reward manager read.
    assert schema.field("data_source").type == pa.string()
    assert schema.field("prompt").type == MESSAGES
    assert schema.field("ability").type == pa.string()
    assert schema.field("reward_model").type == pa.struct([("style", pa.string()),
                                                           ("ground_truth", pa.string())])
    assert pa.types.is_struct(schema.field("extra_info").type)
    assert schema.field("extra_info").type.field("index").type == pa.int64()
    rows = table.to_pylist()
    by_id = {p.name: p for p in splits["train"]}
    assert sorted(r["extra_info"]["task_id"] for r in rows) == sorted(by_id)
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))
    for row in rows:
        task = by_id[row["extra_info"]["task_id"]]
        meta = task_meta(task)
        info = row["extra_info"]
        assert row["data_source"] == "rlforge/" + meta["generator"].split("@")[0]
        # The prompt is what `rlforge run` sends for the same task.
        assert row["prompt"] == asyncio.run(Environment(load_task(task), EnvOptions(), None,
                                                        tmp_path).reset())
        assert row["prompt"][-1] == {"role": "user", "content": (task / "instruction.md").read_text()}
        assert row["reward_model"]["style"] == "rule"
        assert json.loads(row["reward_model"]["ground_truth"]) == \
            json.loads((task / "tests" / "reference.json").read_text())
        assert info["split"] == "train" and info["generator"] + f"@{info['generator_version']}" == meta["generator"]
        assert info["source_keys"] == meta["source_keys"]
        assert info["source_content_hashes"] == meta["source_content_hashes"]
        assert info["template_hash"] == meta["template_hash"] and info["seed"] == meta["seed"] == 7
        assert json.loads(info["metadata"]) == meta


def test_verl_export_loads_with_datasets_and_its_reward_file_scores_without_rlforge(
        cli, tasks_dir, tmp_path):
    out = tmp_path / "verl"
    export(cli, tasks_dir, out, "verl")
    ds = datasets.load_dataset("parquet", data_files={"train": str(out / "train.parquet")})["train"]
    assert ds.num_rows == len(tasks_by_split(tasks_dir)["train"])
    gold = {p.name: gold_answer(p) for p in tasks_by_split(tasks_dir)["train"]}
    # veRL's workers load the reward file by path; run it in Debian's python, where
    # rlforge is not importable, to prove the exported directory is all it needs.
    cases = []
    for row in ds:
        answer = gold[row["extra_info"]["task_id"]]
        reply = (f"Let me think.\nANSWER: {answer}" if row["extra_info"]["verifier"] == "answer"
                 else answer)
        cases.append([row["data_source"], reply, row["reward_model"]["ground_truth"], 1.0])
        cases.append([row["data_source"], "", row["reward_model"]["ground_truth"], 0.0])
    script = f"""
import importlib.util, json, sys
try:
    import rlforge
    sys.exit("rlforge is importable here; the test needs an interpreter without it")
except ImportError:
    pass
spec = importlib.util.spec_from_file_location("custom_module", {str(out / 'rlforge_reward.py')!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
for source, reply, truth, want in json.load(sys.stdin):
    got = module.compute_score(source, reply, truth, extra_info={{}})
    print(json.dumps([got, want]))
"""
    proc = subprocess.run(["/usr/bin/python3", "-I", "-c", script], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(results) == len(cases) > 0
    for got, want in results:
        assert got == {"score": want, "acc": want}
    # And in-process (rlforge installed): a wrong label scores 0.
    compute_score = load_verl_reward(out / "rlforge_reward.py")
    triage = next(r for r in ds if r["extra_info"]["verifier"] == "answer")
    ref = json.loads(triage["reward_model"]["ground_truth"])
    wrong = next(label for label in ref["labels"] if label != ref["answer"])
    assert compute_score(triage["data_source"], f"ANSWER: {wrong}",
                         triage["reward_model"]["ground_truth"]) == {"score": 0.0, "acc": 0.0}


def test_trl_dataset_and_reward_function_score_like_the_task(cli, tasks_dir, tmp_path):
    out = tmp_path / "trl"
    export(cli, tasks_dir, out, "trl")
    ds = datasets.load_dataset("parquet", data_files={"train": str(out / "train.parquet")})["train"]
    assert ds.column_names[0] == "prompt"
    assert ds.features["prompt"].feature["role"].dtype == "string"
    train = {p.name: p for p in tasks_by_split(tasks_dir)["train"]}
    assert sorted(ds["task_id"]) == sorted(train)
    # The call GRPOTrainer makes: every column but the prompt as a keyword argument, one
    # entry per completion; conversational completions are lists of assistant messages.
    batch = {key: ds[key] for key in ds.column_names if key != "prompt"}
    # gold_answer: what the gold solution writes, the warm-up's supervised target
    assert ds["gold_answer"] == [gold_answer(train[t]) for t in ds["task_id"]]
    right = [[{"role": "assistant", "content": g}] for g in ds["gold_answer"]]
    assert trl_reward(completions=right, prompts=ds["prompt"], **batch) == [1.0] * ds.num_rows
    empty = [[{"role": "assistant", "content": ""}] for _ in ds["task_id"]]
    assert trl_reward(completions=empty, **batch) == [0.0] * ds.num_rows
    # Plain-text completions work too; a reply with only some key facts gets partial credit.
    ref = json.dumps({"verifier": "reply", "required": ["Settings > Webhooks", "FR-1262"],
                      "forbidden": [], "min_words": 5, "max_words": 60})
    gold = ("Thanks for writing in. You can turn webhooks on yourself under Settings > Webhooks, "
            "and I added your vote to roadmap item FR-1262.")
    assert trl_reward([gold], [ref]) == [1.0]
    assert 0.0 < trl_reward([gold.replace("FR-1262", "our list")], [ref])[0] < 1.0


def test_the_gold_answer_is_read_back_from_any_solve_script_rlforge_writes():
    from rlforge.tasks.generators.answers import gold_answer as read_gold, solve_script

    for text in ("billing", "", "two\nlines\n", "RLFORGE_ANSWER_EOF\nRLFORGE_ANSWER_EOF_",
                 "quotes ' and \"$HOME\" stay"):
        assert read_gold(solve_script(text).decode()) == text
    assert read_gold("#!/bin/bash\ngit apply <<'EOF'\n+x\nEOF\n") is None
    assert read_gold(solve_script("x").decode().replace("RLFORGE_ANSWER_EOF\n", "EOF\n")) is None


def test_jsonl_rows_carry_instruction_reference_and_lineage(cli, tasks_dir, tmp_path):
    report = export(cli, tasks_dir, tmp_path / "jsonl", "jsonl", "--split", "train,test")
    assert set(report["rows"]) == {"train", "test"}
    splits = tasks_by_split(tasks_dir)
    for split in ("train", "test"):
        path = tmp_path / "jsonl" / f"{split}.jsonl"
        if not splits.get(split):
            assert not path.exists()
            continue
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert [r["task_id"] for r in rows] == sorted(p.name for p in splits[split])
        for row in rows:
            task = Path(row["path"])
            assert task.name == row["task_id"] and row["split"] == split
            assert row["instruction"] == (task / "instruction.md").read_text()
            assert row["reference"] == json.loads((task / "tests" / "reference.json").read_text())
            assert row["metadata"] == task_meta(task)
    # The same rows load as a JSON dataset.
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "jsonl" / "train.jsonl"))["train"]
    assert ds.num_rows == len(splits["train"])


def test_hf_folder_loads_by_path_with_named_splits(cli, tasks_dir, tmp_path):
    out = tmp_path / "hf"
    report = export(cli, tasks_dir, out, "hf", "--split", "all")
    loaded = datasets.load_dataset(str(out))
    splits = tasks_by_split(tasks_dir)
    want = {{"val": "validation"}.get(s, s): len(v) for s, v in splits.items() if v}
    assert {name: d.num_rows for name, d in loaded.items()} == want
    assert sum(report["rows"].values()) == sum(want.values())
    train = loaded["train"]
    assert train.features["source_keys"].feature.dtype == "string"
    row = train[0]
    task = tasks_dir / row["task_id"]
    assert row["prompt"][-1]["content"] == (task / "instruction.md").read_text()
    assert json.loads(row["reference"]) == json.loads((task / "tests" / "reference.json").read_text())


def test_exports_are_byte_identical_for_the_same_tasks(cli, tasks_dir, tmp_path):
    def digest(root: Path) -> dict[str, str]:
        return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file()}

    for fmt in ("verl", "hf"):
        export(cli, tasks_dir, tmp_path / f"{fmt}1", fmt, "--split", "all")
        export(cli, tasks_dir, tmp_path / f"{fmt}2", fmt, "--split", "all")
        assert digest(tmp_path / f"{fmt}1") == digest(tmp_path / f"{fmt}2")


@pytest.fixture(scope="module")
def mixed_tasks(tmp_path_factory, tasks_dir, shared_cache) -> Path:
    """The ticket tasks plus one commits.repair task (multi-turn, verified in the sandbox)."""
    return once("mixed", lambda: _mixed_tasks(tmp_path_factory.mktemp("mixed-tasks"), tasks_dir,
                                              shared_cache))


def _mixed_tasks(root: Path, tasks_dir: Path, shared_cache: Path) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLFORGE_CACHE_DIR", str(shared_cache))
        mp.setenv("HOME", str(root))
        subprocess.run([sys.executable, str(SAMPLE_DATA / "repo" / "build_repo.py"), str(root / "dura")],
                       check=True, capture_output=True)
        con = db.connect(root / "rlforge.duckdb")
        try:
            ingest_repo(con, root / "dura")
            build_tasks(con, build_options(out=root / "repair", generators=["commits.repair"],
                                           limit=1, validate=False))
        finally:
            con.close()
    shutil.copytree(tasks_dir, root / "tasks")
    [repair] = [p for p in (root / "repair").iterdir() if (p / "task.toml").is_file()]
    shutil.copytree(repair, root / "tasks" / repair.name)
    return root / "tasks"


def test_sandboxed_tasks_are_skipped_for_trainers_and_counted(cli, mixed_tasks, tmp_path):
    splits = tasks_by_split(mixed_tasks)
    repair = [p for v in splits.values() for p in v if p.name.startswith("commits-repair")]
    assert len(repair) == 1 and task_meta(repair[0])["kind"] == "terminal"
    split = task_meta(repair[0])["split"]
    report = export(cli, mixed_tasks, tmp_path / "trl", "trl", "--split", "all")
    assert report["rows"][split] == len(splits[split]) - 1
    [(reason, n)] = report["skipped"].items()
    assert n == 1 and reason.startswith("commits.repair: verifier 'repair' (terminal task)")
    report = export(cli, mixed_tasks, tmp_path / "jsonl", "jsonl", "--split", "all")
    assert report["rows"][split] == len(splits[split]) and not report["skipped"]
    rows = [json.loads(line) for line in (tmp_path / "jsonl" / f"{split}.jsonl").read_text().splitlines()]
    [row] = [r for r in rows if r["task_id"] == repair[0].name]
    assert row["verifier"] == "repair" and row["instruction"] == (repair[0] / "instruction.md").read_text()


def test_cli_errors_say_how_to_fix_them(cli, tasks_dir, tmp_path):
    export(cli, tasks_dir, tmp_path / "out", "jsonl")
    again = cli("export", "tasks", tasks_dir, "--format", "jsonl", "--out", tmp_path / "out")
    assert again.exit_code == 1 and "--force" in again.output
    assert cli("export", "tasks", tasks_dir, "--format", "jsonl", "--out", tmp_path / "out",
               "--force").exit_code == 0
    bad = cli("export", "tasks", tasks_dir, "--format", "parquet", "--out", tmp_path / "o2")
    assert bad.exit_code == 2 and "verl, trl, jsonl, hf" in bad.output
    split = cli("export", "tasks", tasks_dir, "--format", "verl", "--split", "dev", "--out", tmp_path / "o3")
    assert split.exit_code == 1 and "train, val, test" in split.output
    empty = cli("export", "tasks", tmp_path / "out", "--format", "verl", "--out", tmp_path / "o4")
    assert empty.exit_code == 1 and "no task directories" in empty.output
    own = cli("export", "tasks", tasks_dir, "--format", "jsonl", "--out", tasks_dir.parent, "--force")
    assert own.exit_code == 1 and "holds the input" in own.output
    assert (tasks_dir / "manifest.parquet").is_file()
    human = cli("export", "tasks", tasks_dir, "--format", "verl", "--out", tmp_path / "o5")
    assert human.exit_code == 0 and "rlforge_reward.py" in human.output


def test_verl_rows_count_prompt_tokens_and_overlong_ones_warn_or_go(cli, tasks_dir, tmp_path):
    # A real tokenizer: the one inside the embedded model's GGUF file, with its chat template.
    pytest.importorskip("llama_cpp")
    from rlforge.export.tokens import approximate
    from rlforge.local_model import find_gguf

    gguf = str(find_gguf())
    real = export(cli, tasks_dir, tmp_path / "real", "verl", "--tokenizer", gguf)
    rows = pq.read_table(tmp_path / "real" / "train.parquet").to_pylist()
    tokens = {r["extra_info"]["task_id"]: r["extra_info"]["prompt_tokens"] for r in rows}
    assert real["prompt_tokens"]["counted_by"] == gguf and real["prompt_tokens"]["max"] == max(tokens.values())
    # The approximation (no tokenizer) errs high, never low, on these prompts.
    approx = export(cli, tasks_dir, tmp_path / "approx", "trl")
    table = pq.read_table(tmp_path / "approx" / "train.parquet").to_pylist()
    assert approx["prompt_tokens"]["counted_by"] == "approx"
    for r in table:
        assert r["prompt_tokens"] == approximate(r["prompt"]) >= tokens[r["task_id"]], r["task_id"]
    # A limit between the shortest and the longest prompt: a warning naming the rows over it.
    limit = sorted(tokens.values())[len(tokens) // 2]
    over = sorted(t for t, n in tokens.items() if n > limit)
    assert over
    result = cli("export", "tasks", tasks_dir, "--format", "verl", "--out", tmp_path / "warn",
                 "--tokenizer", gguf, "--max-prompt-length", str(limit))
    assert result.exit_code == 0 and f"{len(over)} prompt(s) longer than --max-prompt-length" in result.output
    kept = export(cli, tasks_dir, tmp_path / "kept", "verl", "--tokenizer", gguf,
                  "--max-prompt-length", str(limit), "--filter-overlong")
    assert kept["prompt_tokens"]["overlong_tasks"] == over and kept["rows"]["train"] == len(tokens) - len(over)
    left = {r["extra_info"]["task_id"] for r in pq.read_table(tmp_path / "kept" / "train.parquet").to_pylist()}
    assert left == set(tokens) - set(over)
