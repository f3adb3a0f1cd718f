"""A LoRA adapter served with the embedded model (`rlforge run --adapter FILE`).

The adapter files here are written with the `gguf` package in the layout llama.cpp loads,
and served by the real llama.cpp server: an adapter whose change is zero answers as the
base model does, a strong one answers otherwise, and the served name carries its stem.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from rlforge.errors import LocalModelUnavailable
from rlforge.local_model import MODEL_NAME, LocalModel, find_gguf
from rlforge.policy import PolicyClient, PolicyConfig
from rlforge.run.session import select_tasks
from rlforge.taskdir import discover_tasks
from test_run_support import built_tasks

QUESTION = [{"role": "user", "content": "Name three colours of the rainbow."}]




def write_adapter(path: Path, scale: float, *, rank: int = 4, layers: int = 30) -> Path:
    """An adapter on every block's ffn_down: lora_b = `scale` × noise (0: no change)."""
    gguf = pytest.importorskip("gguf")
    rng = np.random.default_rng(7)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_type("adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(rank))
    for block in range(layers):  # ffn_down: 1536 in, 576 out
        a = rng.standard_normal((rank, 1536)).astype(np.float16)
        b = (scale * rng.standard_normal((576, rank))).astype(np.float16)
        writer.add_tensor(f"blk.{block}.ffn_down.weight.lora_a", a)
        writer.add_tensor(f"blk.{block}.ffn_down.weight.lora_b", b)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def answer(local: LocalModel) -> tuple[list[str], str]:
    async def ask():
        config = PolicyConfig(**local.policy_overrides(), temperature=0.0, max_tokens=24)
        async with PolicyClient(config) as client:
            return await client.models(), (await client.chat(QUESTION, seed=5)).content

    return asyncio.run(ask())


@pytest.mark.llama
@pytest.mark.slow
def test_an_adapter_is_served_over_the_embedded_model(local_extra, cli, tmp_path):
    with LocalModel() as local:
        _, base = answer(local)
    with LocalModel(adapter=write_adapter(tmp_path / "zero.gguf", 0.0)) as local:
        names, unchanged = answer(local)
        assert "--lora_path" in local.command(find_gguf())
    assert names == [f"{MODEL_NAME}+zero"]
    assert unchanged == base  # B = 0: the adapter adds nothing
    with LocalModel(adapter=write_adapter(tmp_path / "loud.gguf", 0.05)) as local:
        names, changed = answer(local)
    assert names == [f"{MODEL_NAME}+loud"]
    assert changed != base
    # a run with it records the served name, so its calibration is not the base model's
    tasks = built_tasks(tmp_path, limit=1, generators=("tickets.triage",))
    result = cli("run", tasks, "--adapter", tmp_path / "zero.gguf", "--runs-dir", tmp_path / "runs",
                 "--run-id", "with-zero", "--max-tokens", "8", "--json")
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "runs" / "with-zero" / "config.json").read_text())
    assert config["embedded"] and config["adapter"] == str((tmp_path / "zero.gguf").resolve())
    assert config["policy"]["model"] == f"{MODEL_NAME}+zero"


def test_a_missing_adapter_is_refused_before_the_server_starts(tmp_path):
    with pytest.raises(LocalModelUnavailable, match="adapter file .* does not exist"):
        LocalModel(adapter=tmp_path / "none.gguf").start()


def test_run_refuses_an_adapter_it_cannot_serve(cli, tmp_path):
    tasks = built_tasks(tmp_path, limit=1, generators=("tickets.triage",))
    result = cli("run", tasks, "--adapter", tmp_path / "none.gguf", "--runs-dir", tmp_path / "runs")
    assert result.exit_code == 1 and "no such file" in result.output
    adapter = tmp_path / "a.gguf"
    adapter.write_bytes(b"GGUF")
    result = cli("run", tasks, "--adapter", adapter, "--base-url", "http://127.0.0.1:9/v1",
                 "--model", "m", "--runs-dir", tmp_path / "runs")
    assert result.exit_code == 1 and "served with the embedded model" in result.output


def test_a_run_can_take_several_splits(tmp_path):
    tasks = discover_tasks(built_tasks(tmp_path, limit=40, generators=("tickets.triage",)))
    splits = {t.split for t in tasks}
    assert len(splits) > 1
    some = sorted(splits)[:2]
    chosen = select_tasks(tasks, split=",".join(some))
    assert {t.split for t in chosen} == set(some)
    assert len(chosen) == sum(t.split in some for t in tasks)


def test_the_shipped_adapter_never_saw_a_held_out_ticket(tmp_path):
    """The adapter rlforge ships was trained on the train split of sample_data's triage
    tasks: every ticket it saw is a train ticket in any build of that data, and the demo's
    val and test triage tasks hold none of them (splits are a stable hash per ticket group)."""
    import polars as pl

    from rlforge import db
    from rlforge.ingest import tickets
    from rlforge.local_model import ADAPTERS
    from rlforge.tasks.build import build_tasks
    from builds import build_options
    from paths import SAMPLE_DATA

    meta = json.loads((ADAPTERS / "smollm2-135m-triage.json").read_text())
    seen = set(meta["trained_on"])
    assert len(seen) > 50
    con = db.connect(tmp_path / "t.duckdb")
    base = SAMPLE_DATA / "tickets"
    tickets.ingest_file(con, base / "tickets.csv")
    tickets.ingest_file(con, base / "zendesk_export.json",
                        mapping={"category": "custom_fields.360041872211"})
    tickets.ingest_file(con, base / "jira_export.csv", mapping={"category": "Component/s"})
    build_tasks(con, build_options(out=tmp_path / "tasks", generators=["tickets.triage"],
                                   limit=1000, seed=1, validate=False))
    con.close()
    manifest = pl.read_parquet(tmp_path / "tasks" / "manifest.parquet")
    by_split: dict[str, set[str]] = {}
    for row in manifest.iter_rows(named=True):
        by_split.setdefault(row["split"], set()).update(row["source_keys"])
    held_out = by_split.get("val", set()) | by_split.get("test", set())
    assert held_out and not held_out & seen
    built = set().union(*by_split.values())
    assert seen & built <= by_split["train"]
    assert len(seen & built) >= 0.9 * len(seen)  # a build of other generators may keep a few more
    assert (ADAPTERS / "smollm2-135m-triage.gguf").stat().st_size < 12_000_000


@pytest.mark.trainers
@pytest.mark.llama
@pytest.mark.slow
def test_a_trained_lora_adapter_is_served_as_transformers_computes_it(local_extra, tmp_path):
    """examples/gguf_adapter.py writes a peft LoRA adapter for llama.cpp. Adapters on the
    query and key projections only (their rows are stored in another order in a llama GGUF)
    with random weights: the change llama.cpp + adapter makes to the next-token logits is
    the change the peft model makes under Transformers; without the reordering it is not."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    import importlib.util

    from llama_cpp import Llama
    from peft import LoraConfig, get_peft_model

    from paths import ROOT

    def module(name):
        spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        return loaded

    learn_grpo, gguf_adapter = module("learn_grpo"), module("gguf_adapter")
    base, tokenizer = learn_grpo.load_policy()
    torch.manual_seed(0)
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=4, target_modules=["q_proj", "k_proj"]))
    with torch.no_grad():
        for name, weight in peft_model.named_parameters():
            if "lora_B" in name:
                weight.normal_(0.0, 0.3)
    peft_model.save_pretrained(str(tmp_path / "adapter"))
    heads = {"attn_q": base.config.num_attention_heads, "attn_k": base.config.num_key_value_heads}
    ids = tokenizer("The invoice for March was charged twice, please refund")["input_ids"]
    with torch.no_grad():
        tuned = peft_model(torch.tensor([ids])).logits[0, -1].numpy()
        with peft_model.disable_adapter():
            plain = peft_model(torch.tensor([ids])).logits[0, -1].numpy()

    def served_change(adapter):
        values = []
        for lora in (None, adapter):
            llama = Llama(model_path=str(find_gguf()), n_ctx=256, logits_all=True, verbose=False,
                          **({"lora_path": str(lora)} if lora else {}))
            llama.eval(ids)
            values.append(np.array(llama.scores[llama.n_tokens - 1]))
            llama.close()
        return values[1] - values[0]

    right = gguf_adapter.write_peft_adapter(tmp_path / "adapter", tmp_path / "right.gguf", heads=heads)
    assert right == 4
    gguf_adapter.gguf_order = lambda delta, _heads: delta  # as a converter that forgot it
    gguf_adapter.write_peft_adapter(tmp_path / "adapter", tmp_path / "wrong.gguf", heads=heads)
    change = tuned - plain
    assert np.abs(change).max() > 1.0  # the adapter moves the logits
    fit = np.corrcoef(change, served_change(tmp_path / "right.gguf"))[0, 1]
    unordered = np.corrcoef(change, served_change(tmp_path / "wrong.gguf"))[0, 1]
    # llama.cpp multiplies the quantized base with 8-bit activations: the fit is not exact
    assert fit > 0.8 and unordered < 0.4, (fit, unordered)  # measured: 0.90 and 0.07
