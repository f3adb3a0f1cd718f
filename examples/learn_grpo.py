"""Train the embedded model with GRPO on rlforge's tasks, on the CPU, and save it.

The whole loop a user writes: export the tasks for TRL, load the embedded SmolLM2-135M
from its GGUF file (Transformers reads GGUF; nothing is downloaded), hand TRL's
`GRPOTrainer` the task's own verifier as its reward (`rlforge.export.trl_reward`), and save
the checkpoint. Then score it on held-out tasks with `rlforge run`, served by
`python -m rlforge.hf_server` (see the README's "Training on the tasks").

    rlforge export tasks demo/tasks --format trl --out demo/trl --split all
    python examples/learn_grpo.py demo/trl --out demo/trained \\
        --generators tickets.triage --steps 30

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


def train(export_dir: str | Path, out: str | Path, *, generators: list[str] | None = None,
          steps: int = 30, batch: int = 8, num_generations: int = 4,
          max_completion_length: int = 48, learning_rate: float = 1e-5,
          temperature: float = 0.7, seed: int = 0, model: Any = None,
          tokenizer: Any = None, **config: Any) -> dict[str, Any]:
    """GRPO on the export's train rows, the reward the task's verifier; save to `out`.

    Args:
        export_dir: an `rlforge export tasks --format trl` output.
        out: where the trained checkpoint goes (a Transformers directory).
        generators: train only on these generators' tasks.
        steps: optimizer steps; each sees `batch` completions (`batch / num_generations`
            prompts, `num_generations` completions each).
        model, tokenizer: start from these instead of the embedded model.
        **config: more `GRPOConfig` fields (e.g. `beta`, `generation_kwargs`).

    Returns:
        `{"steps", "seconds", "rows", "curve": [{"step", "reward", "reward_std",
        "completion_length", "zero_std_groups"}]}`.
    """
    from trl import GRPOConfig, GRPOTrainer

    rows = train_rows(export_dir, generators)
    if model is None:
        model, tokenizer = load_policy()
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
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    curve = [{"step": h["step"], "reward": h.get("rewards/trl_reward/mean"),
              "reward_std": h.get("rewards/trl_reward/std"),
              "completion_length": h.get("completions/mean_length"),
              # groups whose completions all scored the same: no advantage, no gradient
              "zero_std_groups": h.get("frac_reward_zero_std")}
             for h in trainer.state.log_history if "rewards/trl_reward/mean" in h]
    return {"steps": trainer.state.global_step, "seconds": seconds, "rows": len(rows),
            "curve": curve}


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
    a = parser.parse_args()
    gens = [g.strip() for g in a.generators.split(",")] if a.generators else None
    result = train(a.export_dir, a.out, generators=gens, steps=a.steps, batch=a.batch,
                   num_generations=a.num_generations,
                   max_completion_length=a.max_completion_length,
                   learning_rate=a.learning_rate, seed=a.seed)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
