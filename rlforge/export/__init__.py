"""Exports for trainers: task datasets (veRL, TRL, JSONL, Hugging Face) and rollout datasets.

`rlforge export tasks` turns task directories into the datasets RL trainers read;
`rlforge export rollouts` turns a run's scored trajectories into SFT, DPO and GRPO data.
The reward functions trainers call (`trl_reward`, veRL's `compute_score`) score with the
task's own verifier, so training and `rlforge run` agree on every reward.
"""

from rlforge.export.reward_fn import compute_score, score_completion, trl_reward
from rlforge.export.tasks import TASK_FORMATS, ExportReport, export_tasks

__all__ = ["TASK_FORMATS", "ExportReport", "compute_score", "export_tasks", "score_completion",
           "trl_reward"]
