"""The records a run writes, as types: what export, report and trainers read.

- `RunPlan`: a run's frozen plan, `runs/<run_id>/config.json`, with the loop's options
  (`EnvOptions`) and gates (`Gates`);
- `RolloutRecord`: one line of `runs/<run_id>/rollouts.jsonl` (and a `rollouts` row);
- `RolloutSummary`: what statistics need of a rollout, kept in memory for a whole run.

The plan is read once per run, so it is a frozen dataclass (`RunPlan.from_dict`,
`to_dict` its stored form). Rollout lines are many and JSON, so `RolloutRecord` is a
`TypedDict`: it says what a reader may rely on without copying each line into an object.
This module imports only `rlforge.config` (for the settings' defaults).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, TypedDict

from rlforge.config import RunSettings, SandboxSettings

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
    generator_version: int | None  # None: a task rlforge did not build
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
    requests: int  # to the policy's endpoint, and attempts counting retries
    attempts: int
    policy_seconds: float  # waiting for the policy
    seconds: float
    started_at: str
    finished_at: str
    scored_by: Literal["in_process", "sandbox"] | None
    finish_reason: str | None
    messages: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    submission: dict[str, Any] | None
    # Each time the episode continued from a snapshot (`rlforge.run.snapshot`):
    # {"after_turn": N, "at": time}, or, when the snapshot could not be restored and the
    # episode started again from its first turn, {"after_turn": 0, "snapshot_turn": N,
    # "restarted": why}. Empty for an episode played in one go.
    resumed: list[dict[str, Any]]


@dataclass(frozen=True)
class EnvOptions:
    """How the loop runs (the `run.*` settings of the same names, `sandbox.mode`)."""

    tool_protocol: str = RunSettings().tool_protocol  # auto | tools | text
    max_turns: int = RunSettings().max_turns
    command_timeout: float = RunSettings().command_timeout
    observation_chars: int = RunSettings().observation_chars
    sandbox_mode: str = SandboxSettings().mode
    # the reply judge the tasks were built with (TASKS_DIR/judge.json), "" for none; its
    # API key is read from the environment variable named here, never stored
    judge_base_url: str = ""
    judge_model: str = ""
    judge_api_key_env: str = ""

    @classmethod
    def from_settings(cls, run: RunSettings, sandbox_mode: str, **judge: str) -> EnvOptions:
        """The loop of the `run.*` settings (at least one turn, 200 characters of output
        shown), in `sandbox_mode`, with `judge` (the `judge_*` fields) when given."""
        return cls(tool_protocol=run.tool_protocol, max_turns=max(1, run.max_turns),
                   command_timeout=run.command_timeout,
                   observation_chars=max(200, run.observation_chars),
                   sandbox_mode=sandbox_mode, **judge)


@dataclass(frozen=True)
class Gates:
    """A run's CI gate: exit 3 below `min_pass_rate`, 4 above `max_infra_error_rate`."""

    min_pass_rate: float
    max_infra_error_rate: float


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    """A run's frozen plan (`rlforge.run.session.plan_run`); no secrets, only the API
    key's name. `to_dict` is what config.json and the `runs` row hold."""

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
    env: EnvOptions
    policy: dict[str, Any]  # rlforge.policy.PolicyConfig.record()
    embedded: bool
    gates: Gates
    # a LoRA adapter (GGUF, absolute path) served with the embedded model, "" for none
    adapter: str = ""
    sandbox_workers: int
    # rlforge.sandbox.sandbox_settings (a plan from before they were kept ran with the
    # built-in defaults)
    sandbox: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, dict[str, Any]]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunPlan:
        """The plan stored in config.json."""
        return cls(**{**data, "env": EnvOptions(**data["env"]), "gates": Gates(**data["gates"])})

    def to_dict(self) -> dict[str, Any]:
        """The stored form: JSON-ready, keys in field order."""
        return asdict(self)

    def with_overrides(self, concurrency: int | None = None,
                       min_pass_rate: float | None = None,
                       max_infra_error_rate: float | None = None) -> RunPlan:
        """The plan with what may change on a resume or rescore (None: unchanged)."""
        gates = Gates(self.gates.min_pass_rate if min_pass_rate is None else min_pass_rate,
                      self.gates.max_infra_error_rate if max_infra_error_rate is None
                      else max_infra_error_rate)
        return replace(self, gates=gates, concurrency=self.concurrency if concurrency is None
                       else concurrency)

    @property
    def endpoint(self) -> str:
        """The policy the run talks to, as a person would name it."""
        if self.embedded:
            return "the embedded model" + (f" with adapter {self.adapter}" if self.adapter else "")
        return f"{self.policy['base_url']} (model {self.policy['model']!r})"


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
