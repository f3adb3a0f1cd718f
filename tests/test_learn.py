"""The training loop of examples/learn_grpo.py and the server that scores what it trains.

GRPO runs for real (TRL's GRPOTrainer on rlforge's TRL export, the reward
`rlforge.export.trl_reward`) on a tiny random model whose generation is restricted to one
token spelling an answer, so the reward each step logs is known from the verifier alone.
The trained checkpoint is then served by `rlforge.hf_server` and scored by `rlforge run`.
"""

from __future__ import annotations

import http.client
import json
from collections import Counter

import pytest

from paths import ROOT
from test_export_tasks import export, hf_offline, tasks_dir  # noqa: F401
from test_export_trainers import tiny_model, tiny_tokenizer

pytestmark = pytest.mark.trainers

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
pytest.importorskip("trl")


@pytest.fixture(scope="module")
def learn_grpo():
    import importlib.util

    spec = importlib.util.spec_from_file_location("learn_grpo", ROOT / "examples" / "learn_grpo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_right_one_wrong(export_dir):
    """Keep, in the train split, one triage task whose answer is the commonest label and one
    whose answer is not; returns (label, the two references)."""
    path = export_dir / "train.parquet"
    ds = datasets.load_dataset("parquet", data_files={"train": str(path)})["train"]
    ds = ds.filter(lambda r: r["generator"] == "tickets.triage")
    answers = [json.loads(r)["answer"] for r in ds["rlforge_reference"]]
    label = Counter(answers).most_common(1)[0][0]
    keep = [answers.index(label), next(i for i, a in enumerate(answers) if a != label)]
    ds = ds.select(keep)
    ds.to_parquet(str(path))
    return label, ds["rlforge_reference"]


def test_grpo_loop_trains_on_the_export_and_logs_the_verifiers_reward(
        cli, tasks_dir, tmp_path, learn_grpo):
    from rlforge.export import score_completion

    out = tmp_path / "trl"
    export(cli, tasks_dir, out, "trl", "--split", "all")
    label, references = one_right_one_wrong(out)
    spoken = f"ANSWER: {label}"
    tokenizer = tiny_tokenizer([spoken])
    only = tokenizer.convert_tokens_to_ids(spoken)
    expected = sum(score_completion(r, spoken)["total"] for r in references) / len(references)
    assert expected == pytest.approx(0.5)  # the verifier passes one and fails the other
    result = learn_grpo.train(
        out, tmp_path / "trained", generators=["tickets.triage"], steps=2, batch=4,
        num_generations=2, max_completion_length=1, model=tiny_model(tokenizer),
        tokenizer=tokenizer,
        generation_kwargs={"suppress_tokens": [i for i in range(len(tokenizer)) if i != only]})
    assert result["steps"] == 2 and result["rows"] == 2
    assert [c["reward"] for c in result["curve"]] == [pytest.approx(expected)] * 2
    assert (tmp_path / "trained" / "config.json").is_file()
    assert (tmp_path / "trained" / "tokenizer.json").is_file()


def test_the_warm_up_keeps_only_what_the_verifier_passes_and_tunes_on_it(
        cli, tasks_dir, tmp_path, learn_grpo):
    out = tmp_path / "trl"
    export(cli, tasks_dir, out, "trl", "--split", "all")
    label, references = one_right_one_wrong(out)
    spoken = f"ANSWER: {label}"
    tokenizer = tiny_tokenizer([spoken])
    only = tokenizer.convert_tokens_to_ids(spoken)
    model = tiny_model(tokenizer)
    rows = learn_grpo.train_rows(out, ["tickets.triage"])
    sampled = learn_grpo.sample_passing(
        rows, model, tokenizer, samples=3, max_new_tokens=1,
        suppress_tokens=[i for i in range(len(tokenizer)) if i != only])
    # every sample speaks the one label: right for one task, wrong for the other
    assert sampled["by_generator"] == {"tickets.triage": [3, 6]}
    assert sampled["prompts_passed"] == 1
    assert [p["completion"][0]["content"] for p in sampled["passing"]] == [spoken]
    assert sampled["passing"][0]["prompt"] == rows[0]["prompt"]  # the task it passed
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tuned = learn_grpo.warm_up(sampled["passing"], tmp_path / "warm", model, tokenizer,
                               epochs=1, batch=1)
    assert tuned["steps"] == 1 and tuned["rows"] == 1 and tuned["loss"][0] > 0
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert (tmp_path / "warm" / "config.json").is_file()
    with pytest.raises(SystemExit, match="never passed"):
        learn_grpo.warm_up([], tmp_path / "none", model, tokenizer)


def test_the_gold_warm_up_tunes_on_each_train_tasks_gold_answer(
        cli, tasks_dir, tmp_path, learn_grpo):
    from rlforge.export import trl_reward

    out = tmp_path / "trl"
    export(cli, tasks_dir, out, "trl", "--split", "all")
    rows = learn_grpo.train_rows(out, None)
    gold = learn_grpo.gold_completions(rows)
    assert [g["prompt"] for g in gold] == rows["prompt"]  # one target per train task
    assert trl_reward([g["completion"] for g in gold], rows["rlforge_reference"]) == [1.0] * len(gold)
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tuned = learn_grpo.warm_up(gold[:2], tmp_path / "warm", model, tokenizer, epochs=1, batch=2)
    assert tuned["steps"] == 1 and tuned["rows"] == 2 and tuned["loss"][0] > 0
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


def chat(port: int, body: dict) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", "/v1/chat/completions", json.dumps(body),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        return {"status": response.status, **json.loads(response.read())}
    finally:
        connection.close()


def test_a_trained_checkpoint_is_served_and_scored_by_rlforge_run(cli, tasks_dir, tmp_path):
    from rlforge.hf_server import TransformersServer

    tokenizer = tiny_tokenizer()
    checkpoint = tmp_path / "ckpt"
    tiny_model(tokenizer).save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    with TransformersServer(checkpoint, "tiny", startup_timeout=300) as server:
        body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 8, "temperature": 1.0, "seed": 7}
        first, second = chat(server.port, body), chat(server.port, body)
        assert first["status"] == 200, first
        assert first["choices"][0]["message"]["content"] == \
            second["choices"][0]["message"]["content"]
        assert first["usage"]["completion_tokens"] <= 8
        assert chat(server.port, {"messages": []})["status"] == 400
        result = cli("run", tasks_dir, "--base-url", server.base_url, "--model", "tiny",
                     "--api-key-env", "", "--generators", "tickets.triage", "--limit", "2",
                     "--samples", "1", "--max-tokens", "8", "--runs-dir", tmp_path / "runs",
                     "--run-id", "tiny", "--quiet")
    assert result.exit_code in (0, 3), result.output
    rollouts = [json.loads(x) for x in
                (tmp_path / "runs" / "tiny" / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2
    assert {r["outcome"] for r in rollouts} <= {"pass", "fail"}  # scored, not infra errors
    assert all(r["completion_tokens"] >= 1 for r in rollouts)
