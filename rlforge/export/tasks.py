"""`rlforge export tasks`: task directories as the datasets trainers read.

Four formats, each a directory of files named by split (`train`, `val`, `test`):

- `verl`: veRL's RL parquet schema (`data_source`, `prompt` as chat messages, `ability`,
  `reward_model {style, ground_truth}`, `extra_info` with the task id and lineage), plus
  `rlforge_reward.py` and the text verifier's `rlforge_*.py` for veRL's
  `custom_reward_function.path`;
- `trl`: a conversational prompt dataset for TRL's `GRPOTrainer` (column `prompt`), whose
  `rlforge_reference` column feeds `rlforge.export.trl_reward`, and `gold_answer` the
  answer the task's gold solution writes (a supervised target for a warm-up);
- `jsonl`: one JSON object per task with everything (instruction, prompt, reference,
  lineage), for `jq` and custom loaders, plus `target` (the reference as a JSON string)
  for inspect_ai, and `rlforge_inspect.py` (an inspect_ai task and scorer) with
  `rlforge_reward.py` and the text verifier's files: `inspect eval OUT/rlforge_inspect.py`;
- `hf`: a Hugging Face dataset folder (`README.md` with the split configuration and
  `data/<split>-00000-of-00001.parquet`), loadable with `datasets.load_dataset(PATH)`.

Every row carries the task's measured difficulty when the database holds a calibration
(`rlforge.difficulty`): `difficulty_model`, `pass_rate` (the estimate), `pass_rate_lo`
and `pass_rate_hi` (its 95% Wilson interval) and `pass_samples`, all null for a task never
measured; veRL has them in `extra_info`, TRL, JSONL and HF as columns. `--difficulty
LOW:HIGH` exports only the tasks whose estimate lies in the band.

`verl` and `trl` rows record each prompt's token count (`extra_info.prompt_tokens`, column
`prompt_tokens`), counted with `--tokenizer` or approximated (`rlforge.export.tokens`);
with `max_prompt_length` the report counts and names the rows above it (the trainer would
drop or truncate them), and `filter_overlong` leaves them out.

Rows are sorted by task id, so the same tasks give the same files. veRL and TRL score a
completion in-process, so only tasks whose verifier scores text (answers, replies) go to
those formats; the others are counted as skipped, with the reason.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rlforge import db, difficulty
from rlforge.errors import UserError
from rlforge.export import reward_fn
from rlforge.run.environment import SINGLE_TURN_SYSTEM
from rlforge.taskdir import Task, discover_tasks
from rlforge.tasks.generators.answers import read_gold_answer
from rlforge.verify import kinds, standalone

TASK_FORMATS = ("verl", "trl", "jsonl", "hf")
SPLITS = ("train", "val", "test")
HF_SPLIT_NAMES = {"train": "train", "val": "validation", "test": "test"}
REWARD_FILE = "rlforge_reward.py"
INSPECT_FILE = "rlforge_inspect.py"

MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))

LINEAGE_FIELDS = [
    ("task_id", pa.string()), ("generator", pa.string()), ("generator_version", pa.int64()),
    ("verifier", pa.string()), ("kind", pa.string()), ("split", pa.string()),
    ("source_table", pa.string()), ("source_keys", pa.list_(pa.string())),
    ("source_content_hashes", pa.list_(pa.string())), ("group_key", pa.string()),
    ("template_hash", pa.string()), ("seed", pa.int64()), ("rlforge_version", pa.string()),
]

DIFFICULTY_FIELDS = [
    ("difficulty_model", pa.string()), ("pass_rate", pa.float64()),
    ("pass_rate_lo", pa.float64()), ("pass_rate_hi", pa.float64()), ("pass_samples", pa.int64()),
]

VERL_SCHEMA = pa.schema([
    ("data_source", pa.string()),
    ("prompt", MESSAGES),
    ("ability", pa.string()),
    ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
    ("extra_info", pa.struct([("index", pa.int64()), *LINEAGE_FIELDS,
                              ("metadata", pa.string()), *DIFFICULTY_FIELDS,
                              ("prompt_tokens", pa.int64())])),
])

TRL_SCHEMA = pa.schema([
    ("prompt", MESSAGES),
    ("task_id", pa.string()),
    ("generator", pa.string()),
    ("split", pa.string()),
    ("rlforge_reference", pa.string()),
    ("gold_answer", pa.string()),
    *DIFFICULTY_FIELDS,
    ("prompt_tokens", pa.int64()),
])

HF_SCHEMA = pa.schema([
    *LINEAGE_FIELDS,
    ("category", pa.string()), ("difficulty", pa.string()), ("description", pa.string()),
    ("instruction", pa.string()), ("prompt", MESSAGES), ("reference", pa.string()),
    ("metadata", pa.string()), *DIFFICULTY_FIELDS,
])


def scores_text(task: Task) -> bool:
    """Whether a trainer can score this task from one completion, in-process."""
    return kinds.scored_in_process(task) and task.verifier in reward_fn.TEXT_VERIFIERS and task.kind == "answer"


def lineage(task: Task) -> dict[str, Any]:
    """The task's id, generator and provenance as flat, typed fields."""
    m = rlforge_metadata(task)
    return {"task_id": task.task_id, "generator": task.generator,
            "generator_version": task.generator_version or 0, "verifier": task.verifier,
            "kind": task.kind, "split": task.split, "source_table": str(m.get("source_table", "")),
            "source_keys": [str(k) for k in m.get("source_keys", [])],
            "source_content_hashes": [str(h) for h in m.get("source_content_hashes", [])],
            "group_key": str(m.get("group_key", "")), "template_hash": str(m.get("template_hash", "")),
            "seed": int(m.get("seed", 0)), "rlforge_version": str(m.get("rlforge_version", ""))}


def rlforge_metadata(task: Task) -> dict[str, Any]:
    """The task's `[metadata.rlforge]` table, as written."""
    return dict(task.meta.get("metadata", {}).get("rlforge", {}))


def _card(task: Task) -> dict[str, str]:
    meta = task.meta.get("metadata", {})
    return {"category": str(meta.get("category", "")), "difficulty": str(meta.get("difficulty", "")),
            "description": str(task.meta.get("task", {}).get("description", ""))}


@dataclass
class ExportReport:
    """What an export wrote: files, rows per split, and what it left out and why."""

    format: str
    out: str
    files: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    prompt_tokens: dict[str, Any] = field(default_factory=dict)  # counted by, max, overlong

    def to_dict(self) -> dict[str, Any]:
        out = {"format": self.format, "out": self.out, "files": self.files, "rows": self.rows,
               "total_rows": sum(self.rows.values()), "skipped": self.skipped}
        return {**out, "prompt_tokens": self.prompt_tokens} if self.prompt_tokens else out


def prompt_messages(task: Task) -> list[dict[str, str]]:
    """The chat prompt a single-turn policy sees in `rlforge run`: system, then instruction."""
    return [{"role": "system", "content": SINGLE_TURN_SYSTEM},
            {"role": "user", "content": task.instruction}]


def parse_splits(text: str) -> list[str]:
    """`train`, `train,val` or `all` into split names."""
    if text.strip() == "all":
        return list(SPLITS)
    splits = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in splits if s not in SPLITS]
    if bad or not splits:
        raise UserError(f"--split {text!r}: use train, val, test, a comma-separated list, or all")
    return splits


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def difficulty_fields(e: difficulty.Estimate | None) -> dict[str, Any]:
    """A task's measured pass rate as row fields (null when never measured)."""
    if e is None:
        return {name: None for name, _ in DIFFICULTY_FIELDS}
    return {"difficulty_model": e.model, "pass_rate": e.estimate, "pass_rate_lo": e.lo,
            "pass_rate_hi": e.hi, "pass_samples": e.samples}


def _verl_row(task: Task, index: int, e: difficulty.Estimate | None,
              tokens: int | None = None) -> dict[str, Any]:
    return {"data_source": f"rlforge/{task.generator}", "prompt": prompt_messages(task),
            "ability": _card(task)["category"] or task.generator,
            "reward_model": {"style": "rule", "ground_truth": _json(task.reference)},
            "extra_info": {"index": index, **lineage(task), "metadata": _json(rlforge_metadata(task)),
                           **difficulty_fields(e), "prompt_tokens": tokens}}


def _trl_row(task: Task, index: int, e: difficulty.Estimate | None,
             tokens: int | None = None) -> dict[str, Any]:
    return {"prompt": prompt_messages(task), "task_id": task.task_id,
            "generator": task.generator, "split": task.split,
            "rlforge_reference": _json(task.reference), "gold_answer": read_gold_answer(task.path),
            **difficulty_fields(e), "prompt_tokens": tokens}


def _hf_row(task: Task, index: int, e: difficulty.Estimate | None,
            tokens: int | None = None) -> dict[str, Any]:
    return {**lineage(task), **_card(task), "instruction": task.instruction,
            "prompt": prompt_messages(task), "reference": _json(task.reference),
            "metadata": _json(rlforge_metadata(task)), **difficulty_fields(e)}


def _jsonl_row(task: Task, index: int, e: difficulty.Estimate | None,
               tokens: int | None = None) -> dict[str, Any]:
    return {**lineage(task), **_card(task), "path": str(task.path),
            "instruction": task.instruction, "prompt": prompt_messages(task),
            "reference": task.reference, "target": _json(task.reference),
            "metadata": rlforge_metadata(task), **difficulty_fields(e)}


def _write_parquet(rows: list[dict[str, Any]], schema: pa.Schema, path: Path,
                   cast_to: pa.Schema | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=schema)
    if cast_to is not None:  # e.g. text to Arrow's JSON type, which from_pylist cannot build
        table = table.cast(cast_to)
    pq.write_table(table, path, compression="zstd", write_statistics=False)


def _hf_card(splits: dict[str, int]) -> str:
    lines = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split in splits:
        name = HF_SPLIT_NAMES[split]
        lines += [f"  - split: {name}", f"    path: data/{name}-*"]
    lines += ["---", "", "# rlforge tasks", "",
              "Tasks exported by `rlforge export tasks --format hf`: one row per task with its",
              "instruction, chat prompt, reference data (`reference`, JSON) and lineage.", "",
              "| split | rows |", "|---|---|"]
    lines += [f"| {HF_SPLIT_NAMES[s]} | {n} |" for s, n in splits.items()]
    return "\n".join(lines) + "\n"


def _prepare_out(out: Path, force: bool, keep: Path) -> None:
    """Make `out` an empty directory; never one that holds `keep` (the input)."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a directory")
    if keep.resolve().is_relative_to(out.resolve()):
        raise UserError(f"--out {out} holds the input {keep}; choose a directory outside it")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise UserError(f"--out {out} is not empty; choose a new directory or pass --force "
                            "to replace its contents")
        for p in out.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)


def _count_prompts(by_split: dict[str, list[Task]], report: ExportReport, tokenizer: str | None,
                   max_prompt_length: int | None, filter_overlong: bool) -> dict[str, int]:
    """Each task's prompt tokens; rows over `max_prompt_length` are named in the report
    and, with `filter_overlong`, taken out of `by_split`."""
    from rlforge.export.tokens import prompt_counter

    counted_by, count = prompt_counter(tokenizer)
    tokens = {t.task_id: count(prompt_messages(t)) for chosen in by_split.values() for t in chosen}
    info: dict[str, Any] = {"counted_by": counted_by, "max": max(tokens.values(), default=0)}
    if max_prompt_length is not None:
        over = sorted(tid for tid, n in tokens.items() if n > max_prompt_length)
        info.update(max_prompt_length=max_prompt_length, overlong=len(over),
                    overlong_tasks=over, filtered=filter_overlong)
        if over and filter_overlong:
            reason = f"prompt longer than --max-prompt-length {max_prompt_length} tokens"
            report.skipped[reason] = len(over)
            for split, chosen in by_split.items():
                by_split[split] = [t for t in chosen if tokens[t.task_id] <= max_prompt_length]
    report.prompt_tokens = info
    return tokens


def export_tasks(tasks_dir: Path, fmt: str, out: Path, splits: list[str] | None = None,
                 force: bool = False, selection: difficulty.Selection | None = None, *,
                 db_path: Path | None = None, model: str | None = None,
                 tokenizer: str | None = None, max_prompt_length: int | None = None,
                 filter_overlong: bool = False) -> ExportReport:
    """Write the tasks in `tasks_dir` of the given splits to `out` in format `fmt`.

    Args:
        tasks_dir: a task directory or a directory of them (a build-tasks output).
        fmt: one of `TASK_FORMATS`.
        out: the directory to write (created; must be empty unless `force`).
        splits: the splits to export (default: train).
        force: replace the contents of a non-empty `out`.
        selection: keep only the tasks it selects by their measured pass rates.
        db_path, model: where those rates are (`rlforge calibrate`), and whose (None: the
            only model calibrated); each task's latest one is written into its row. The
            export is recorded in that database (`exports`) for `rlforge forget`.
        tokenizer: `verl`/`trl`: count prompt tokens with this tokenizer (a Hugging Face
            name or directory, or a .gguf file); default: the documented approximation.
        max_prompt_length: `verl`/`trl`: report the rows whose prompt has more tokens.
        filter_overlong: leave those rows out (counted in `skipped`).

    Returns:
        What was written and what was skipped, with reasons.
    """
    if fmt not in TASK_FORMATS:
        raise UserError(f"unknown format {fmt!r}; valid: {', '.join(TASK_FORMATS)}")
    splits = splits or ["train"]
    tasks = sorted(discover_tasks(tasks_dir), key=lambda t: t.task_id)
    report = ExportReport(format=fmt, out=str(out))
    active = selection is not None and selection.active
    if active and db_path is None:
        raise UserError("a selection by difficulty reads the measured pass rates: give db_path")
    estimates = difficulty.measured(db_path, model, required=active) if db_path else {}
    if selection is not None and selection.active:
        tasks, dropped = difficulty.select(tasks, lambda t: t.task_id, lambda t: t.generator,
                                           estimates, selection)
        for reason, n in dropped.items():
            report.skipped[reason] = n
    by_split: dict[str, list[Task]] = {s: [] for s in splits}
    for task in tasks:
        if task.split not in by_split:
            continue
        if fmt in ("verl", "trl") and not scores_text(task):
            reason = (f"{task.generator}: verifier {task.verifier!r} ({task.kind} task) runs in "
                      "the sandbox, not on one completion; train on it with rlforge.envs")
            report.skipped[reason] = report.skipped.get(reason, 0) + 1
            continue
        by_split[task.split].append(task)
    if not any(by_split.values()):
        found = sorted({t.split for t in tasks})
        raise UserError(f"{tasks_dir}: no {fmt} rows for split {', '.join(splits)} "
                        f"(splits present: {', '.join(found) or 'none'})"
                        + (f"; skipped: {'; '.join(report.skipped)}" if report.skipped else ""))
    tokens: dict[str, int] = {}
    if fmt in ("verl", "trl"):
        tokens = _count_prompts(by_split, report, tokenizer, max_prompt_length, filter_overlong)
    elif tokenizer or max_prompt_length is not None:
        raise UserError("--tokenizer and --max-prompt-length apply to --format verl and trl")
    _prepare_out(out, force, keep=tasks_dir)
    row_of = {"verl": _verl_row, "trl": _trl_row, "hf": _hf_row, "jsonl": _jsonl_row}[fmt]
    for split, chosen in by_split.items():
        rows = [row_of(t, i, estimates.get(t.task_id), tokens.get(t.task_id))
                for i, t in enumerate(chosen)]
        report.rows[split] = len(rows)
        if not rows:
            continue  # an empty split gets no file (Hugging Face cannot load an empty one)
        if fmt == "jsonl":
            path = out / f"{split}.jsonl"
            path.write_text("".join(_json(r) + "\n" for r in rows), encoding="utf-8")
        elif fmt == "hf":
            path = out / "data" / f"{HF_SPLIT_NAMES[split]}-00000-of-00001.parquet"
            _write_parquet(rows, HF_SCHEMA, path)
        else:
            path = out / f"{split}.parquet"
            _write_parquet(rows, VERL_SCHEMA if fmt == "verl" else TRL_SCHEMA, path)
        report.files.append(str(path))
    if fmt == "hf":
        (out / "README.md").write_text(_hf_card({s: n for s, n in report.rows.items() if n}), encoding="utf-8")
        report.files.append(str(out / "README.md"))
    if fmt in ("verl", "jsonl"):  # what veRL's workers and `inspect eval` load by path
        copies = {REWARD_FILE: Path(reward_fn.__file__).read_bytes(),
                  **standalone.files_of(*reward_fn.TEXT_MODULES)}
        if fmt == "jsonl":
            copies[INSPECT_FILE] = Path(reward_fn.__file__).with_name("inspect_task.py").read_bytes()
        for name, data in copies.items():
            (out / name).write_bytes(data)
            report.files.append(str(out / name))
    if db_path is not None:  # so that `rlforge forget` can say it needs writing again
        db.record_export(db_path, "tasks", fmt, out, tasks_dir,
                         [t.task_id for chosen in by_split.values() for t in chosen], report.files)
    return report
