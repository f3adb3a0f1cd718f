"""Statistics of a run: pass@k, mean reward, group-normalised advantages, summaries.

Rollouts whose outcome is `invalid` (the infrastructure failed, not the policy) are left
out of every policy statistic and counted separately, as the infrastructure error rate.
A `timeout` (the rollout overran its time budget) is the policy's doing: it counts as not
passed, with reward 0.

- **pass@k** is the unbiased estimator of Chen et al. (2021), "Evaluating Large Language
  Models Trained on Code": for a task with n valid samples of which c pass,
  pass@k = 1 - C(n-c, k) / C(n, k), computed as a stable product; the run's pass@k is the
  mean over tasks with at least k valid samples.
- **Advantages** are GRPO's group-normalised rewards: within one task's samples,
  (r - mean) / std (population std); a group whose rewards are all equal gets 0.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

OUTCOMES = ("pass", "fail", "timeout", "invalid")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn from n (c of them passing) passes.

    Args:
        n: samples of the task.
        c: passing samples, 0 <= c <= n.
        k: 1 <= k <= n.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i)  ==  1 - C(n-c, k) / C(n, k)
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def pass_at_k_curve(groups: Iterable[tuple[int, int]], max_k: int) -> dict[int, float | None]:
    """pass@k for k = 1..max_k, averaged over tasks given as (n, c); None where no task
    has k valid samples."""
    groups = list(groups)
    curve: dict[int, float | None] = {}
    for k in range(1, max_k + 1):
        values = [pass_at_k(n, c, k) for n, c in groups if n >= k]
        curve[k] = sum(values) / len(values) if values else None
    return curve


def group_advantages(rewards: Sequence[float | None], eps: float = 1e-6) -> list[float | None]:
    """GRPO advantages of one task's samples: (r - mean) / std over the non-None rewards.

    None (an invalid rollout) stays None; a group with equal rewards (std below `eps`)
    gets 0 for everyone.
    """
    valid = [r for r in rewards if r is not None]
    if not valid:
        return [None] * len(rewards)
    if len(valid) == 1:  # one sample per task (an eval run): nothing to compare against
        return [None if r is None else 0.0 for r in rewards]
    mean = sum(valid) / len(valid)
    std = math.sqrt(sum((r - mean) ** 2 for r in valid) / len(valid))
    if std < eps:
        return [None if r is None else 0.0 for r in rewards]
    return [None if r is None else (r - mean) / std for r in rewards]


@dataclass
class Tally:
    """Counters for one slice of a run (all of it, one generator, one split)."""

    rollouts: int = 0
    outcomes: Counter = field(default_factory=Counter)
    reward_sum: float = 0.0

    def add(self, outcome: str, reward: float | None) -> None:
        self.rollouts += 1
        self.outcomes[outcome] += 1
        if outcome != "invalid":
            self.reward_sum += reward or 0.0

    @property
    def valid(self) -> int:
        return self.rollouts - self.outcomes["invalid"]

    @property
    def pass_rate(self) -> float | None:
        return self.outcomes["pass"] / self.valid if self.valid else None

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.valid if self.valid else None

    @property
    def infra_error_rate(self) -> float:
        return self.outcomes["invalid"] / self.rollouts if self.rollouts else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"rollouts": self.rollouts, "valid": self.valid,
                **{o: self.outcomes[o] for o in OUTCOMES},
                "pass_rate": _round(self.pass_rate), "mean_reward": _round(self.mean_reward),
                "infra_error_rate": _round(self.infra_error_rate)}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def summarize(rollouts: Iterable[dict[str, Any]], samples: int) -> dict[str, Any]:
    """The summary of a run from its rollouts' facts.

    Each rollout is a mapping with `task_id`, `sample`, `generator`, `split`, `outcome`,
    `reward` (the total, None when invalid), `error_type`, `prompt_tokens` and
    `completion_tokens`.

    Returns:
        Overall counts and rates, pass@k for k = 1..samples, errors by type, tokens, and
        the same tallies per generator and per split.
    """
    total = Tally()
    by_generator: dict[str, Tally] = defaultdict(Tally)
    by_split: dict[str, Tally] = defaultdict(Tally)
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    group_generator: dict[str, str] = {}
    errors: Counter = Counter()
    prompt_tokens = completion_tokens = 0
    for r in rollouts:
        outcome, reward = r["outcome"], r.get("reward")
        total.add(outcome, reward)
        by_generator[r["generator"]].add(outcome, reward)
        by_split[r.get("split") or "-"].add(outcome, reward)
        if r.get("error_type"):
            errors[r["error_type"]] += 1
        prompt_tokens += r.get("prompt_tokens") or 0
        completion_tokens += r.get("completion_tokens") or 0
        if outcome != "invalid":
            group = groups[r["task_id"]]
            group[0] += 1
            group[1] += outcome == "pass"
        group_generator[r["task_id"]] = r["generator"]
    curve = pass_at_k_curve(((n, c) for n, c in groups.values()), max(1, samples))
    per_gen_curve = {}
    for gen in by_generator:
        per_gen_curve[gen] = pass_at_k_curve(
            ((n, c) for t, (n, c) in groups.items() if group_generator[t] == gen), max(1, samples))
    return {
        **total.to_dict(),
        "tasks": len(group_generator),
        "pass_at_k": {str(k): _round(v) for k, v in curve.items()},
        "errors": dict(errors.most_common()),
        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "by_generator": {g: {**t.to_dict(), "pass_at_k": {str(k): _round(v)
                                                          for k, v in per_gen_curve[g].items()}}
                         for g, t in sorted(by_generator.items())},
        "by_split": {s: t.to_dict() for s, t in sorted(by_split.items())},
    }
