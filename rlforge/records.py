"""The records a run writes, as types: what export, report and trainers read.

- `RunPlan`: a run's frozen plan, `runs/<run_id>/config.json`;
- `RolloutRecord`: one line of `runs/<run_id>/rollouts.jsonl` (and a `rollouts` row);
- `RolloutSummary`: what statistics need of a rollout, kept in memory for a whole run.

The files are JSON, so the first two are `TypedDict`s: they say what a reader may rely
on without copying each line into an object. This module imports nothing of rlforge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

Outcome = Literal["pass", "fail", "timeout", "invalid"]


def valid_utf8(value: Any) -> Any:
    """`value` (a string, or lists and dicts of them) with every lone surrogate replaced as
    a UTF-8 file read replaces undecodable bytes: what the policy wrote may carry one (a JSON
    "\\ud800", a file name's byte that did not decode), and neither a record's reader nor
    DuckDB takes it."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [valid_utf8(v) for v in value]
    if isinstance(value, dict):
        return {valid_utf8(k): valid_utf8(v) for k, v in value.items()}
    return value


class Reward(TypedDict, total=False):
    total: float
    outcome: str
    components: dict[str, dict[str, Any]]
    detail: str


class RolloutError(TypedDict, total=False):
    type: str
    infra: bool
    message: str


class RolloutRecord(TypedDict, total=False):
    """One rollout, as `rlforge.run.driver.RolloutRunner.rollout` writes it."""

    schema: int
    run_id: str
    rollout_id: str  # "<task_id>#<sample>"
    task_id: str
    sample: int
    seed: int
    generator: str
    generator_version: int
    split: str
    kind: str  # "answer" (one reply) or "terminal" (commands in a sandbox)
    verifier: str
    outcome: Outcome
    reward: Reward | None  # None when the rollout is invalid
    error: RolloutError | None
    ended_by: str
    turns: int
    commands: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    started_at: str
    finished_at: str
    scored_by: Literal["in_process", "sandbox"] | None
    finish_reason: str | None
    messages: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    submission: dict[str, Any] | None


class RunPlan(TypedDict, total=False):
    """A run's frozen plan (`rlforge.run.session.plan_run`); no secrets, only the API
    key's name."""

    schema: int
    run_id: str
    created_at: str
    rlforge_version: str
    tasks_dir: str
    tasks: list[list[str]]  # [task_id, absolute path]
    selection: dict[str, Any]
    samples: int
    seed: int
    concurrency: int
    generator_concurrency: dict[str, int]
    time_budget: float
    env: dict[str, Any]  # rlforge.run.environment.EnvOptions as a dict
    policy: dict[str, Any]  # rlforge.policy.PolicyConfig.record()
    embedded: bool
    gates: dict[str, float]
    sandbox_workers: int
    sandbox: dict[str, Any]  # rlforge.sandbox.sandbox_settings
    settings: dict[str, dict[str, Any]]


@dataclass(slots=True)
class RolloutSummary:
    """What statistics need of a rollout (kept in memory for the whole run)."""

    task_id: str
    sample: int
    generator: str
    split: str
    outcome: str
    reward: float | None  # None for an invalid rollout
    error_type: str | None
    prompt_tokens: int
    completion_tokens: int
    error_message: str | None = None  # the first line of an invalid rollout's error

    @classmethod
    def of(cls, record: RolloutRecord | dict[str, Any]) -> RolloutSummary:
        reward = record.get("reward")
        error = record.get("error")
        return cls(record["task_id"], record["sample"], record["generator"],
                   record.get("split") or "", record["outcome"],
                   None if reward is None or record["outcome"] == "invalid" else reward["total"],
                   error.get("type") if error else None, record.get("prompt_tokens") or 0,
                   record.get("completion_tokens") or 0,
                   str(error.get("message") or "").strip().split("\n", 1)[0][:300] or None
                   if error and record["outcome"] == "invalid" else None)

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "sample": self.sample, "generator": self.generator,
                "split": self.split, "outcome": self.outcome, "reward": self.reward,
                "error_type": self.error_type, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}
