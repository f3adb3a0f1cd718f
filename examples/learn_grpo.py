"""Train the embedded model with GRPO on rlforge's tasks, on the CPU, and save it.

The whole loop a user writes: export the tasks for TRL, load the embedded SmolLM2-135M
from its GGUF file (Transformers reads GGUF; nothing is downloaded), hand TRL's
`GRPOTrainer` the task's own verifier as its reward (`rlforge.export.trl_reward`), and save
the checkpoint. Then score it on held-out tasks with `rlforge run`, served by
`python -m rlforge.hf_server` (see the README's "Training on the tasks").

    rlforge export tasks demo/tasks --format trl --out demo/trl --split all
    python examples/learn_grpo.py demo/trl --out demo/trained \\
        --generators tickets.triage --steps 30 [--warm-up-samples 4 | --warm-up-gold]

Needs `pip install 'rlforge[learn]'` (torch CPU, transformers, trl, gguf).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rlforge.export import trl_reward
from rlforge.local_model import find_gguf


def load_policy(model: str | Path | None = None) -> tuple[Any, Any]:
    """(model, tokenizer): a checkpoint directory, a .gguf file, or the embedded GGUF."""
    from rlforge.hf_server import load

    return load(model or find_gguf())


# The projections a LoRA adapter trains: the ones llama.cpp can serve an adapter over.
LORA_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def with_lora(model: Any, rank: int) -> Any:
    """`model` with a rank-`rank` LoRA adapter (peft) on every projection: only the adapter
    trains, and `examples/gguf_adapter.py` turns it into a file llama.cpp serves exactly."""
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=rank, lora_alpha=rank, lora_dropout=0.0,
                                            target_modules=LORA_MODULES, task_type="CAUSAL_LM"))


def save(trainer: Any, tokenizer: Any, out: str | Path) -> None:
    """Save the trained model to `out` as a whole checkpoint (what `rlforge.hf_server`
    serves); a LoRA model also keeps its adapter alone in `out`/adapter."""
    model = trainer.model
    if hasattr(model, "merge_and_unload"):  # a peft model: merge a copy, train on
        import copy

        model.save_pretrained(str(Path(out) / "adapter"))
        copy.deepcopy(model).merge_and_unload().save_pretrained(str(out))
    else:
        trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))


def train_rows(export_dir: str | Path, generators: list[str] | None) -> Any:
    """The export's train split, only the given generators' rows (all when None)."""
    import datasets

    rows = datasets.load_dataset("parquet", data_files={
        "train": str(Path(export_dir) / "train.parquet")})["train"]
    if generators:
        wanted = set(generators)
        rows = rows.filter(lambda r: r["generator"].split("@")[0] in wanted)
    if len(rows) == 0:
        raise SystemExit(f"no train rows of {generators} in {export_dir}")
    return rows


def sample_passing(rows: Any, model: Any, tokenizer: Any, *, samples: int = 4,
                   max_new_tokens: int = 32, temperature: float = 0.7, seed: int = 0,
                   progress: Any = None, **generate: Any) -> dict[str, Any]:
    """Sample `samples` completions per row from `model` and score each with the task's
    verifier (`trl_reward`): the model's own pass rate on these rows, and its passing
    completions (rejection sampling: what a warm-up can train on). `**generate`: more
    `model.generate` arguments.

    Returns:
        `{"prompts", "completions", "passes", "prompts_passed", "seconds",
        "passing": [{"prompt", "completion", "generator"}], "by_generator":
        {generator: [passes, completions]}}`.
    """
    import torch

    started = time.monotonic()
    passing: list[dict[str, Any]] = []
    by_generator: dict[str, list[int]] = {}
    prompts_passed = 0
    torch.manual_seed(seed)
    for i, row in enumerate(rows):
        inputs = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True,
                                               return_tensors="pt", return_dict=True)
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=True,
                                 temperature=temperature, top_k=0,
                                 num_return_sequences=samples,
                                 pad_token_id=tokenizer.eos_token_id, **generate)
        texts = tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1]:],
                                       skip_special_tokens=True)
        rewards = trl_reward(texts, [row["rlforge_reference"]] * len(texts))
        gen = row["generator"].split("@")[0]
        tally = by_generator.setdefault(gen, [0, 0])
        tally[0] += sum(r >= 1.0 for r in rewards)
        tally[1] += len(rewards)
        kept = {t for t, r in zip(texts, rewards) if r >= 1.0}  # one copy of each text
        prompts_passed += bool(kept)
        passing += [{"prompt": row["prompt"], "completion": [{"role": "assistant", "content": t}],
                     "generator": gen} for t in sorted(kept)]
        if progress:
            progress(i + 1, len(rows), sum(p for p, _ in by_generator.values()))
    return {"prompts": len(rows), "completions": sum(n for _, n in by_generator.values()),
            "passes": sum(p for p, _ in by_generator.values()), "prompts_passed": prompts_passed,
            "seconds": time.monotonic() - started, "passing": passing,
            "by_generator": by_generator}


def gold_completions(rows: Any) -> list[dict[str, Any]]:
    """Each train row's gold answer (the export's `gold_answer`: what the task's gold
    solution writes) as a completion: supervised targets for `warm_up`."""
    return [{"prompt": r["prompt"], "completion": [{"role": "assistant", "content": r["gold_answer"]}],
             "generator": r["generator"].split("@")[0]}
            for r in rows if r.get("gold_answer") is not None]


def warm_up(passing: list[dict[str, Any]], out: str | Path, model: Any, tokenizer: Any, *,
            epochs: float = 2.0, learning_rate: float = 5e-5, batch: int = 8,
            seed: int = 0) -> dict[str, Any]:
    """Supervised fine-tuning (TRL `SFTTrainer`) on completions that pass: the model's own
    (`sample_passing`) or the train tasks' gold answers (`gold_completions`), the loss on
    the completion only. The answer format the verifier accepts becomes more likely, so
    GRPO's groups get some reward spread to learn from. The tuned model is left in `model`
    (and saved to `out`)."""
    import datasets
    from trl import SFTConfig, SFTTrainer

    if not passing:
        raise SystemExit("no passing completion to warm up on: the model never passed a "
                         "train task (sample more, or start from a larger model)")
    rows = datasets.Dataset.from_list([{"prompt": p["prompt"], "completion": p["completion"]}
                                       for p in passing])
    args = SFTConfig(output_dir=str(Path(out) / "trainer"), num_train_epochs=epochs,
                     per_device_train_batch_size=batch, learning_rate=learning_rate,
                     logging_steps=1, report_to=[], use_cpu=True, save_strategy="no",
                     seed=seed, data_seed=seed, completion_only_loss=True,
                     max_length=None)  # a cut would drop the completion, the prompt's end
    trainer = SFTTrainer(model=model, args=args, train_dataset=rows, processing_class=tokenizer)
    started = time.monotonic()
    trainer.train()
    seconds = time.monotonic() - started
    save(trainer, tokenizer, out)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return {"steps": trainer.state.global_step, "seconds": seconds, "rows": len(rows),
            "loss": losses}


def train(export_dir: str | Path, out: str | Path, *, generators: list[str] | None = None,
          steps: int = 30, batch: int = 8, num_generations: int = 4,
          max_completion_length: int = 48, learning_rate: float = 1e-5,
          temperature: float = 0.7, seed: int = 0, model: Any = None,
          tokenizer: Any = None, lora_rank: int = 0, **config: Any) -> dict[str, Any]:
    """GRPO on the export's train rows, the reward the task's verifier; save to `out`.

    Args:
        export_dir: an `rlforge export tasks --format trl` output.
        out: where the trained checkpoint goes (a Transformers directory).
        generators: train only on these generators' tasks.
        steps: optimizer steps; each sees `batch` completions (`batch / num_generations`
            prompts, `num_generations` completions each).
        model, tokenizer: start from these instead of the embedded model.
        lora_rank: with no `model`, train a LoRA adapter of this rank (`with_lora`) instead
            of every weight (0).
        **config: more `GRPOConfig` fields (e.g. `beta`, `generation_kwargs`).

    Returns:
        `{"steps", "seconds", "rows", "curve": [{"step", "reward", "reward_std",
        "completion_length", "zero_std_groups"}]}`.
    """
    from trl import GRPOConfig, GRPOTrainer

    rows = train_rows(export_dir, generators)
    if model is None:
        model, tokenizer = load_policy()
        if lora_rank:
            model = with_lora(model, lora_rank)
    args = GRPOConfig(
        output_dir=str(Path(out) / "trainer"), max_steps=steps, per_device_train_batch_size=batch,
        num_generations=num_generations, max_completion_length=max_completion_length,
        learning_rate=learning_rate, temperature=temperature, logging_steps=1, report_to=[],
        use_cpu=True, save_strategy="no", seed=seed, data_seed=seed, **config)
    trainer = GRPOTrainer(model=model, reward_funcs=[trl_reward], args=args,
                          train_dataset=rows, processing_class=tokenizer)
    started = time.monotonic()
    trainer.train()
    seconds = time.monotonic() - started
    save(trainer, tokenizer, out)
    curve = [{"step": h["step"], "reward": h.get("rewards/trl_reward/mean"),
              "reward_std": h.get("rewards/trl_reward/std"),
              "completion_length": h.get("completions/mean_length"),
              # groups whose completions all scored the same: no advantage, no gradient
              "zero_std_groups": h.get("frac_reward_zero_std")}
             for h in trainer.state.log_history if "rewards/trl_reward/mean" in h]
    return {"steps": trainer.state.global_step, "seconds": seconds, "rows": len(rows),
            "curve": curve}


def warm_up_start(export_dir: str | Path, out: str | Path, *,
                  generators: list[str] | None = None, warm_up_samples: int = 0,
                  warm_up_gold: bool = False, warm_up_learning_rate: float = 5e-5,
                  seed: int = 0, lora_rank: int = 0,
                  max_completion_length: int = 48) -> tuple[Any, Any, dict[str, Any]]:
    """The warm-up alone: (model, tokenizer, what it did). With `warm_up_samples` > 0 the
    base model's passing completions on the train rows (`sample_passing`) are fine-tuned
    on (`warm_up`); with `warm_up_gold`, the train rows' gold answers are. The tuned model
    is also saved to `out`/warm-up. With `lora_rank`, the warm-up trains a LoRA adapter of
    that rank, and the model returned still carries it."""
    model, tokenizer = load_policy()
    rows = train_rows(export_dir, generators)
    found: dict[str, Any] = {}
    if warm_up_samples:
        found = sample_passing(rows, model, tokenizer, samples=warm_up_samples,
                               max_new_tokens=max_completion_length, seed=seed)
    targets = gold_completions(rows) if warm_up_gold else found["passing"]
    if warm_up_gold and not targets:
        raise SystemExit(f"no train row of {export_dir} has a gold_answer: export the tasks "
                         "again with `rlforge export tasks --format trl`")
    if lora_rank:
        model = with_lora(model, lora_rank)
    tuned = warm_up(targets, Path(out) / "warm-up", model, tokenizer, seed=seed,
                    learning_rate=warm_up_learning_rate)
    found.pop("passing", None)
    return model, tokenizer, {"sampled": found or None, "sft": tuned,
                              "source": "gold" if warm_up_gold else "samples"}


def warm_then_train(export_dir: str | Path, out: str | Path, *,
                    generators: list[str] | None = None, warm_up_samples: int = 0,
                    warm_up_gold: bool = False, warm_up_learning_rate: float = 5e-5,
                    seed: int = 0, lora_rank: int = 0, **grpo: Any) -> dict[str, Any]:
    """`train`, after an optional warm-up (`warm_up_start`); GRPO starts from the tuned
    model. The result has a "warm_up" entry (the sampling's pass counts, the SFT's steps
    and loss) when one ran. With `lora_rank`, both train one LoRA adapter of that rank."""
    if not warm_up_samples and not warm_up_gold:
        return train(export_dir, out, generators=generators, seed=seed, lora_rank=lora_rank,
                     **grpo)
    model, tokenizer, warmed = warm_up_start(
        export_dir, out, generators=generators, warm_up_samples=warm_up_samples,
        warm_up_gold=warm_up_gold, warm_up_learning_rate=warm_up_learning_rate, seed=seed,
        lora_rank=lora_rank, max_completion_length=grpo.get("max_completion_length", 48))
    result = train(export_dir, out, generators=generators, seed=seed, model=model,
                   tokenizer=tokenizer, **grpo)
    return {**result, "warm_up": warmed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export_dir", help="an `rlforge export tasks --format trl` output")
    parser.add_argument("--out", required=True, help="directory for the trained checkpoint")
    parser.add_argument("--generators", default=None, help="e.g. tickets.triage,logs.diagnose")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=48)
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warm-up-samples", type=int, default=0, metavar="N",
                        help="before GRPO, sample N completions per train task, keep those "
                        "the verifier passes, and fine-tune on them (SFT); 0: no warm-up")
    parser.add_argument("--warm-up-gold", action="store_true",
                        help="before GRPO, fine-tune on the train tasks' gold answers (SFT)")
    parser.add_argument("--warm-up-learning-rate", type=float, default=5e-5)
    parser.add_argument("--lora", type=int, default=0, metavar="RANK",
                        help="train a LoRA adapter of this rank instead of every weight (kept "
                        "alone in OUT/adapter; examples/gguf_adapter.py makes it a file "
                        "`rlforge run --adapter` serves with the embedded model)")
    a = parser.parse_args()
    gens = [g.strip() for g in a.generators.split(",")] if a.generators else None
    result = warm_then_train(a.export_dir, a.out, generators=gens,
                             warm_up_samples=a.warm_up_samples,
                             warm_up_gold=a.warm_up_gold,
                             warm_up_learning_rate=a.warm_up_learning_rate, lora_rank=a.lora,
                             steps=a.steps, batch=a.batch,
                             num_generations=a.num_generations,
                             max_completion_length=a.max_completion_length,
                             learning_rate=a.learning_rate, seed=a.seed)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
