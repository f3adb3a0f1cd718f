"""The task exports inside the real trainers: veRL's dataset and reward manager, TRL's GRPO.

These need the `trainers` extra (torch CPU, trl, verl). The model is a one-layer Llama with
random weights and a byte-level tokenizer trained here, so nothing is downloaded; where a
test needs a right answer, generation is restricted to one token that spells it.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from test_export_rollouts import export_run, load_split, run_dirs  # noqa: F401
from test_export_tasks import export, gold_answer, hf_offline, tasks_by_split, tasks_dir  # noqa: F401

pytestmark = pytest.mark.trainers

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")

CHAT_TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}<eos>{% endfor %}"
                 "{% if add_generation_prompt %}<assistant>{% endif %}")


def tiny_tokenizer(extra_tokens: list[str] = ()):
    """A byte-level BPE tokenizer with a chat template (lossless decoding)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(["rlforge"], trainers.BpeTrainer(
        vocab_size=260, special_tokens=["<unk>", "<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>",
                                        pad_token="<pad>", eos_token="<eos>")
    tokenizer.add_tokens(list(extra_tokens))
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def test_verl_dataset_and_reward_manager_score_the_export(cli, tasks_dir, tmp_path):
    pytest.importorskip("verl")
    import numpy as np
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.workers.reward_manager.naive import NaiveRewardManager

    out = tmp_path / "verl"
    export(cli, tasks_dir, out, "verl")
    tokenizer = tiny_tokenizer()
    dataset = RLHFDataset(
        data_files=[str(out / "train.parquet")], tokenizer=tokenizer,
        config=OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 16384,
                                 "filter_overlong_prompts": True,
                                 "filter_overlong_prompts_workers": 1,
                                 "cache_dir": str(tmp_path / "verl-cache")}))
    train = {p.name: p for p in tasks_by_split(tasks_dir)["train"]}
    assert len(dataset) == len(train)
    rows = [dataset[i] for i in range(len(dataset))]
    assert sorted(r["extra_info"]["task_id"] for r in rows) == sorted(train)
    for r in rows:
        assert r["raw_prompt"][-1] == {"role": "user", "content": (
            train[r["extra_info"]["task_id"]] / "instruction.md").read_text()}
    # Responses as veRL's reward manager sees them: token ids after the prompt, decoded.
    # Even rows get the gold answer, odd rows an empty reply.
    replies = [gold_answer(train[r["extra_info"]["task_id"]]) if i % 2 == 0 else ""
               for i, r in enumerate(rows)]
    ids = [tokenizer(text)["input_ids"] for text in replies]
    width = max(len(x) for x in ids) + 1
    prompts = torch.full((len(rows), 2), tokenizer.pad_token_id)
    responses = torch.full((len(rows), width), tokenizer.pad_token_id)
    mask = torch.zeros((len(rows), 2 + width), dtype=torch.long)
    for i, x in enumerate(ids):
        prompts[i, -1] = tokenizer.eos_token_id
        mask[i, 1] = 1
        responses[i, :len(x)] = torch.tensor(x, dtype=torch.long)
        mask[i, 2:2 + max(1, len(x))] = 1
    batch = DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
        non_tensors={k: np.array([r[k] for r in rows], dtype=object)
                     for k in ("reward_model", "data_source", "extra_info")})
    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": str(out / "rlforge_reward.py"), "name": "compute_score"}}})
    manager = NaiveRewardManager(tokenizer=tokenizer, num_examine=0,
                                 compute_score=get_custom_reward_fn(config))
    result = manager(batch, return_dict=True)
    want = [1.0 if i % 2 == 0 else 0.0 for i in range(len(rows))]
    assert result["reward_tensor"].sum(dim=-1).tolist() == want
    assert result["reward_extra_info"]["acc"] == want


def test_trl_grpo_trainer_trains_a_step_on_the_export_with_trl_reward(cli, tasks_dir, tmp_path):
    pytest.importorskip("trl")
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from rlforge.export import trl_reward

    out = tmp_path / "trl"
    export(cli, tasks_dir, out, "trl")
    ds = datasets.load_dataset("parquet", data_files={"train": str(out / "train.parquet")})["train"]
    ds = ds.filter(lambda r: r["generator"] == "tickets.triage")
    answers = [json.loads(r)["answer"] for r in ds["rlforge_reference"]]
    label = Counter(answers).most_common(1)[0][0]
    right = [i for i, a in enumerate(answers) if a == label][:2]
    wrong = [i for i, a in enumerate(answers) if a != label][:2]
    assert len(right) == len(wrong) == 2, answers
    ds = ds.select(right + wrong)
    # The policy can only ever say "ANSWER: <label>": right for two tasks, wrong for two.
    spoken = f"ANSWER: {label}"
    tokenizer = tiny_tokenizer([spoken])
    only = tokenizer.convert_tokens_to_ids(spoken)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16384,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None))
    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=8, num_generations=2,
        max_completion_length=1, max_steps=1, logging_steps=1, report_to=[], use_cpu=True,
        save_strategy="no", seed=0,
        generation_kwargs={"suppress_tokens": [i for i in range(len(tokenizer)) if i != only]})
    trainer = GRPOTrainer(model=model, reward_funcs=[trl_reward], args=args, train_dataset=ds,
                          processing_class=tokenizer)
    trainer.train()
    logged = trainer.state.log_history[0]
    assert logged["completions/mean_length"] == 1.0
    assert logged["rewards/trl_reward/mean"] == pytest.approx(0.5)
    assert logged["frac_reward_zero_std"] == 1.0  # each prompt's two completions agree


def tiny_model(tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16384,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None))


def test_trl_sft_and_dpo_trainers_take_a_step_on_rollout_exports(cli, run_dirs, tmp_path):
    pytest.importorskip("trl")
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    sft = export_run(cli, run_dirs, tmp_path / "sft", "sft", "--split", "train")
    dpo = export_run(cli, run_dirs, tmp_path / "dpo", "dpo", "--split", "train")
    assert sft["rows"]["train"] >= 2 and dpo["rows"]["train"] >= 2
    common = dict(max_steps=1, per_device_train_batch_size=2, logging_steps=1, report_to=[],
                  use_cpu=True, save_strategy="no", seed=0, max_length=8192)
    tokenizer = tiny_tokenizer()
    trainer = SFTTrainer(model=tiny_model(tokenizer), processing_class=tokenizer,
                         train_dataset=load_split(tmp_path / "sft", "train"),
                         args=SFTConfig(output_dir=str(tmp_path / "sft-out"), **common))
    trainer.train()
    assert trainer.state.global_step == 1 and trainer.state.log_history[0]["loss"] > 0
    trainer = DPOTrainer(model=tiny_model(tokenizer), ref_model=tiny_model(tokenizer),
                         processing_class=tokenizer,
                         train_dataset=load_split(tmp_path / "dpo", "train"),
                         args=DPOConfig(output_dir=str(tmp_path / "dpo-out"), **common))
    trainer.train()
    logged = trainer.state.log_history[0]
    assert trainer.state.global_step == 1 and logged["loss"] == pytest.approx(0.6931, abs=0.01)


def _tool_episode(sample: int, reward: float, command: str) -> dict:
    """A rollout record of a multi-turn episode: bash with `command`, its output, submit."""
    return {"run_id": "r", "task_id": "t1", "generator": "commits.repair@1", "split": "train",
            "rollout_id": f"t1#{sample}", "sample": sample, "seed": sample,
            "outcome": "pass" if reward >= 1 else "fail",
            "reward": {"total": reward, "outcome": "pass" if reward >= 1 else "fail", "components": {}},
            "messages": [
                {"role": "system", "content": "You are working in a Linux sandbox."},
                {"role": "user", "content": "Fix the bug."},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c2", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]}]}


def test_tool_episodes_render_once_through_a_shipped_chat_template(tmp_path):
    # SFT and DPO rows of tool-using episodes, written and loaded back as TRL loads them,
    # rendered through the Qwen2.5 chat template TRL ships in its package: the template
    # writes `arguments | tojson`, so arguments stored as a JSON string come out encoded
    # twice ("{\"command\": ...}"); stored as an object, once.
    import importlib.resources

    from transformers.utils.chat_template_utils import render_jinja_template

    from rlforge.export.rollouts import DPO_SCHEMA, SFT_SCHEMA, _as_built, dpo_rows, sft_rows
    from rlforge.export.tasks import _write_parquet

    template = (importlib.resources.files("trl") / "chat_templates" / "qwen2_5.jinja").read_text()
    records = [_tool_episode(0, 1.0, 'grep -n "def main" app.py'), _tool_episode(1, 0.0, "ls")]
    for name, rows, schema in (("sft", sft_rows(records), SFT_SCHEMA),
                               ("dpo", dpo_rows(records), DPO_SCHEMA)):
        assert rows
        _write_parquet(rows, _as_built(schema), tmp_path / f"{name}.parquet", cast_to=schema)
        row = load_split(tmp_path, name)[0]
        tools = json.loads(row["tools"])
        assert [t["function"]["name"] for t in tools] == ["bash", "submit"]
        conversation = row["messages"] if name == "sft" else row["prompt"] + row["chosen"]
        call = conversation[2]["tool_calls"][0]["function"]
        assert call["arguments"] == {"command": 'grep -n "def main" app.py'}
        text = render_jinja_template([conversation], tools=tools, chat_template=template)[0][0]
        assert '{"name": "bash", "arguments": {"command": "grep -n \\"def main\\" app.py"}}' in text
        assert '{"name": "submit", "arguments": {}}' in text
        assert '"arguments": "' not in text and '\\\\"' not in text  # never a string of JSON
        assert '"name": "bash", "description"' in text  # the tools block from the `tools` column
