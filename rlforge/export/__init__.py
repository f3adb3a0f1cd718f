"""Exports for trainers: task datasets (veRL, TRL, JSONL, Hugging Face) and rollout datasets.

`rlforge export tasks` turns task directories into the datasets RL trainers read;
`rlforge export rollouts` turns a run's scored trajectories into SFT, DPO and GRPO data.
The reward functions trainers call (`trl_reward`, veRL's `compute_score`) score with the
task's own verifier, so training and `rlforge run` agree on every reward. They need only
the standard library, so importing them here stays cheap inside a trainer's workers; the
export functions load on first use.
"""

from rlforge.export.reward_fn import compute_score, score_completion, trl_reward

__all__ = ["compute_score", "export_rollouts", "export_tasks", "score_completion", "trl_reward"]


def __getattr__(name: str):
    if name == "export_tasks":
        from rlforge.export.tasks import export_tasks
        return export_tasks
    if name == "export_rollouts":
        from rlforge.export.rollouts import export_rollouts
        return export_rollouts
    raise AttributeError(f"module 'rlforge.export' has no attribute {name!r}")
