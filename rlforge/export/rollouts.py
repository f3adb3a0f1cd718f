"""`rlforge export rollouts`: a run's scored trajectories as SFT, DPO and GRPO datasets.

Every format is one parquet file per split (`train`, `val`, `test`, from each task's split)
in TRL's conversational layout, so `datasets.load_dataset("parquet", ...)` feeds TRL's
trainers directly:

- `sft`: the passing rollouts, whole conversations in `messages` (system, instruction,
  the policy's turns, tool calls and observations) — TRL `SFTTrainer`;
- `dpo`: preference pairs within a task's sample group: `prompt` (the messages every
  sample of the task starts from), `chosen` and `rejected` (the rest of a higher- and a
  lower-reward rollout) — TRL `DPOTrainer`;
- `grpo`: every valid rollout with its reward and group-normalised advantage, `prompt`
  and `completion` split the same way — offline policy-gradient or filtering.

Rows of tool-using episodes carry a `tools` column (the JSON tool definitions the policy was
offered, which TRL passes to the chat template), and a tool call's `arguments` is a JSON
object (Arrow's JSON type, which `datasets` loads as a dict), so a chat template that
writes `arguments | tojson` renders it once, not as an encoded string. Arguments the policy
wrote that are not a JSON object are kept as the string it wrote.

Rollouts whose outcome is `invalid` (the infrastructure failed, not the policy) carry no
signal about the policy: they are left out and counted (`excluded_invalid`). A rollout
that never got a reply out of the policy has nothing to train on and is counted too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from rlforge import db
from rlforge.errors import UserError
from rlforge.export.tasks import ExportReport, _prepare_out, _write_parquet
from rlforge.records import RolloutSummary
from rlforge.run.environment import BASH_TOOL, SUBMIT_TOOL
from rlforge.run.store import load_rollouts, open_run, with_advantages

ROLLOUT_FORMATS = ("sft", "dpo", "grpo")
TOOLS = [BASH_TOOL, SUBMIT_TOOL]  # what `rlforge run` offers a multi-turn policy
PROMPT_MESSAGES = 2  # system + instruction: what every sample of a task starts from



def _messages_type(arguments: pa.DataType) -> pa.DataType:
    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", arguments)]))])
    return pa.list_(pa.struct([("role", pa.string()), ("content", pa.string()),
                               ("tool_calls", pa.list_(call)), ("tool_call_id", pa.string())]))


MESSAGES = _messages_type(pa.json_())  # as written: arguments are JSON values
_MESSAGES_TEXT = _messages_type(pa.string())  # as rows are built, then cast to MESSAGES

_ROLLOUT_FIELDS = [("run_id", pa.string()), ("task_id", pa.string()), ("generator", pa.string()),
                   ("split", pa.string()), ("tools", pa.string())]

SFT_SCHEMA = pa.schema([("messages", MESSAGES), *_ROLLOUT_FIELDS, ("rollout_id", pa.string()),
                        ("sample", pa.int64()), ("reward", pa.float64())])
DPO_SCHEMA = pa.schema([("prompt", MESSAGES), ("chosen", MESSAGES), ("rejected", MESSAGES),
                        *_ROLLOUT_FIELDS, ("chosen_rollout_id", pa.string()),
                        ("rejected_rollout_id", pa.string()), ("chosen_reward", pa.float64()),
                        ("rejected_reward", pa.float64())])
GRPO_SCHEMA = pa.schema([("prompt", MESSAGES), ("completion", MESSAGES), *_ROLLOUT_FIELDS,
                         ("rollout_id", pa.string()), ("sample", pa.int64()), ("seed", pa.int64()),
                         ("outcome", pa.string()), ("reward", pa.float64()),
                         ("advantage", pa.float64()), ("group_size", pa.int64()),
                         ("components", pa.string())])


@dataclass
class RolloutExportReport(ExportReport):
    """An export of a run: rows written, and the rollouts it read and left out."""

    run_id: str = ""
    rollouts: int = 0
    excluded_invalid: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, **super().to_dict(), "rollouts": self.rollouts,
                "excluded_invalid": self.excluded_invalid}


def _message(m: dict[str, Any]) -> dict[str, Any]:
    calls = m.get("tool_calls") or None
    if calls:
        calls = [{"id": str(c.get("id", "")), "type": str(c.get("type", "function")),
                  "function": {"name": str((c.get("function") or {}).get("name", "")),
                               "arguments": _arguments((c.get("function") or {}).get("arguments"))}}
                 for c in calls]
    content = m.get("content")
    if content is not None and not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    return {"role": str(m.get("role", "")), "content": content, "tool_calls": calls,
            "tool_call_id": m.get("tool_call_id")}


def _arguments(value: Any) -> str:
    """A tool call's arguments as JSON text: the object it encodes, or, when the policy
    wrote something that is not a JSON object, that text as a JSON string."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        return value if isinstance(parsed, dict) else json.dumps(value, ensure_ascii=False)
    return json.dumps(value or {}, ensure_ascii=False)


def _tools(*conversations: list[dict[str, Any]]) -> str | None:
    """The tool definitions the policy was offered, as JSON, when it used tools."""
    used = any(m.get("tool_calls") or m["role"] == "tool" for c in conversations for m in c)
    return json.dumps(TOOLS, ensure_ascii=False) if used else None


def split_conversation(record: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    """(prompt, completion): the task's opening messages, then what followed, ending on
    the policy's last reply (observations after it taught it nothing)."""
    messages = [_message(m) for m in record.get("messages") or []]
    prompt, rest = messages[:PROMPT_MESSAGES], messages[PROMPT_MESSAGES:]
    while rest and rest[-1]["role"] != "assistant":
        rest.pop()
    return prompt, rest


def _reward(record: dict[str, Any]) -> float:
    return float(RolloutSummary.of(record).reward or 0.0)


def _base(record: dict[str, Any], *conversations: list[dict[str, Any]]) -> dict[str, Any]:
    return {"run_id": record.get("run_id", ""), "task_id": record["task_id"],
            "generator": record.get("generator", ""), "split": record.get("split") or "",
            "tools": _tools(*conversations)}


def sft_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Passing rollouts as whole conversations."""
    rows = []
    for r in records:
        prompt, completion = split_conversation(r)
        if r["outcome"] == "pass" and completion:
            rows.append({"messages": prompt + completion, **_base(r, prompt, completion), "rollout_id": r["rollout_id"],
                         "sample": r["sample"], "reward": _reward(r)})
    return rows


def dpo_rows(records: list[dict[str, Any]], max_pairs_per_task: int | None = None,
             min_margin: float = 0.0) -> list[dict[str, Any]]:
    """Pairs within each task's group whose rewards differ by more than `min_margin`.

    Every sample is paired with every lower-reward sample; a task keeps its
    `max_pairs_per_task` widest pairs (default: as many as it has samples).
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if split_conversation(r)[1]:
            groups.setdefault(r["task_id"], []).append(r)
    rows = []
    for task_id, members in sorted(groups.items()):
        members.sort(key=lambda r: (-_reward(r), r["sample"]))
        pairs = [(a, b) for i, a in enumerate(members) for b in members[i + 1:]
                 if _reward(a) - _reward(b) > min_margin]
        pairs.sort(key=lambda p: (-(_reward(p[0]) - _reward(p[1])), p[0]["sample"], p[1]["sample"]))
        cap = max_pairs_per_task if max_pairs_per_task is not None else len(members)
        for chosen, rejected in pairs[:cap]:
            prompt, good = split_conversation(chosen)
            _, bad = split_conversation(rejected)
            rows.append({"prompt": prompt, "chosen": good, "rejected": bad,
                         **_base(chosen, prompt, good, bad),
                         "chosen_rollout_id": chosen["rollout_id"],
                         "rejected_rollout_id": rejected["rollout_id"],
                         "chosen_reward": _reward(chosen), "rejected_reward": _reward(rejected)})
    return rows


def grpo_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every valid rollout with its reward and group advantage."""
    advantages = with_advantages(records)
    sizes: dict[str, int] = {}
    for r in records:
        sizes[r["task_id"]] = sizes.get(r["task_id"], 0) + 1
    rows = []
    for r in records:
        prompt, completion = split_conversation(r)
        if not completion:
            continue
        rows.append({"prompt": prompt, "completion": completion, **_base(r, prompt, completion),
                     "rollout_id": r["rollout_id"], "sample": r["sample"], "seed": r.get("seed"),
                     "outcome": r["outcome"], "reward": _reward(r),
                     "advantage": advantages[r["rollout_id"]], "group_size": sizes[r["task_id"]],
                     "components": json.dumps((r.get("reward") or {}).get("components") or {},
                                              sort_keys=True)})
    return rows


def _as_built(schema: pa.Schema) -> pa.Schema:
    """The schema rows are built in: JSON-typed message lists as text (then cast)."""
    return pa.schema([pa.field(f.name, _MESSAGES_TEXT if f.type == MESSAGES else f.type)
                      for f in schema])


def export_rollouts(run: str | Path, fmt: str, out: Path, *, runs_dir: str | Path = "runs",
                    splits: list[str] | None = None, force: bool = False,
                    max_pairs_per_task: int | None = None,
                    db_path: Path | None = None) -> RolloutExportReport:
    """Write a run's rollouts as an SFT, DPO or GRPO dataset.

    Args:
        run: a run id under `runs_dir`, or a run's directory.
        fmt: one of `ROLLOUT_FORMATS`.
        out: the directory to write (`<split>.parquet`; must be empty unless `force`).
        runs_dir: where runs live (`run.runs_dir`).
        splits: the task splits to export (default: all).
        force: replace the contents of a non-empty `out`.
        max_pairs_per_task: DPO only: pairs kept per task (default: its sample count).
        db_path: record the export in this database (`exports`), for `rlforge forget`.

    Returns:
        Rows per split, the rollouts read, the invalid ones left out, other skips.
    """
    if fmt not in ROLLOUT_FORMATS:
        raise UserError(f"unknown format {fmt!r}; valid: {', '.join(ROLLOUT_FORMATS)}")
    store = open_run(run, runs_dir)
    records = load_rollouts(store)
    if not records:
        raise UserError(f"run {store.run_id} has no rollouts yet ({store.dir}/rollouts.jsonl)")
    report = RolloutExportReport(format=fmt, out=str(out), run_id=store.run_id,
                                 rollouts=len(records))
    wanted = set(splits or ("train", "val", "test"))
    valid = []
    for r in records:
        if r["outcome"] == "invalid":
            report.excluded_invalid += 1
        elif (r.get("split") or "") in wanted:
            if not split_conversation(r)[1]:
                reason = "no reply from the policy (nothing to train on)"
                report.skipped[reason] = report.skipped.get(reason, 0) + 1
            valid.append(r)
    rows = {"sft": sft_rows, "dpo": lambda rs: dpo_rows(rs, max_pairs_per_task),
            "grpo": grpo_rows}[fmt](valid)
    schema = {"sft": SFT_SCHEMA, "dpo": DPO_SCHEMA, "grpo": GRPO_SCHEMA}[fmt]
    _prepare_out(out, force, keep=store.dir)
    for split in [s for s in ("train", "val", "test") if s in wanted]:
        chosen = [row for row in rows if row["split"] == split]
        report.rows[split] = len(chosen)
        if chosen:
            path = out / f"{split}.parquet"
            _write_parquet(chosen, _as_built(schema), path, cast_to=schema)
            report.files.append(str(path))
    if db_path is not None:
        db.record_export(db_path, "rollouts", fmt, out, store.dir,
                         [r["task_id"] for r in valid if (r.get("split") or "") in wanted],
                         report.files)
    return report
