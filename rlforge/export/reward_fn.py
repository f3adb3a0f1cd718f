"""Reward functions for trainers: score a completion with the task's own verifier.

Trainers call a reward function with the model's text and whatever the dataset row
carries; rlforge's rows carry the task's `tests/reference.json` (as a JSON string), so the
score is exactly what the task's `tests/test.sh` would give for the same answer. Two
entry points, one per trainer:

- veRL: `compute_score(data_source, solution_str, ground_truth, extra_info=None)`, with
  `ground_truth` the reference JSON (veRL's `custom_reward_function.path/name`);
- TRL: `trl_reward(completions, rlforge_reference, **kwargs)` for `GRPOTrainer`'s
  `reward_funcs`; each dataset column arrives as a keyword argument.

This file needs nothing but the standard library. `rlforge export tasks --format verl`
copies it next to the parquet files as `rlforge_reward.py`, with the text verifier's files
beside it (`rlforge_answers.py`, `rlforge_replies.py` and what they import, as a task's
tests/ carries them), so veRL's workers can load it by path without rlforge installed.
Only verifiers that score a single piece of text can run here (`TEXT_VERIFIERS`); tasks
whose verifier runs code in a sandbox are not exported for these trainers.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import sys

# Verifier kinds that score one text answer in-process (no sandbox, no workspace), and the
# verifier modules that score them (rlforge.verify.standalone).
TEXT_VERIFIERS = ("answer", "reply")
TEXT_MODULES = ("answers", "replies")


def _load_verifier():
    """{module: the verifier module}: the copies beside this file (their directory put
    first on the path, so they import each other), else rlforge's own (the same source)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if all(os.path.isfile(os.path.join(here, f"rlforge_{m}.py")) for m in TEXT_MODULES):
        sys.path.insert(0, here)
        return {m: importlib.import_module(f"rlforge_{m}") for m in TEXT_MODULES}
    return {m: importlib.import_module(f"rlforge.verify.standalone.{m}") for m in TEXT_MODULES}


_verify = _load_verifier()


def completion_text(completion):
    """The text of a completion: a string, or chat messages (the assistant turns, joined)."""
    if completion is None:
        return ""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content") or "")
    parts = [str(m.get("content") or "") for m in completion
             if isinstance(m, dict) and m.get("role", "assistant") == "assistant"]
    return "\n".join(parts)


def as_read(text):
    """The text as the verifier reads it back from the answer file: UTF-8 with undecodable
    bytes replaced, universal newlines, at most 1,000,000 characters (as `rlforge run`)."""
    data = text.encode("utf-8", "surrogatepass")
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read(1_000_000)


def score_completion(reference, completion):
    """The verifier's full result for one completion: components, total and outcome.

    Args:
        reference: the task's reference data (a dict, or its JSON text).
        completion: the model's reply, as text or as chat messages.

    Returns:
        `{"components": {...}, "total": float, "outcome": "pass" | "fail", "detail": str}`.

    Raises:
        ValueError: the task's verifier does not score text (it needs the sandbox).
    """
    ref = json.loads(reference) if isinstance(reference, (str, bytes)) else reference
    text = as_read(completion_text(completion))
    kind = ref.get("verifier")
    if kind == "answer":
        return _verify["answers"].score_answer(ref, text)
    if kind == "reply":
        return _verify["replies"].score_reply(ref, text)
    raise ValueError(f"verifier {kind!r} cannot score a text completion; "
                     f"only {', '.join(TEXT_VERIFIERS)} can")


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """veRL's custom reward function: `score` is the task's total reward, `acc` 1 on a pass."""
    result = score_completion(ground_truth, solution_str)
    return {"score": float(result["total"]), "acc": 1.0 if result["outcome"] == "pass" else 0.0}


def trl_reward(completions, rlforge_reference, **kwargs):
    """TRL `GRPOTrainer` reward function: the total reward of each completion, in order.

    Args:
        completions: one completion per row, text or chat messages.
        rlforge_reference: the dataset's `rlforge_reference` column for the same rows.
        **kwargs: the other dataset columns and trainer arguments (ignored).

    Returns:
        A list of floats in [0, 1].
    """
    if len(completions) != len(rlforge_reference):
        raise ValueError(f"{len(completions)} completions but {len(rlforge_reference)} references")
    return [float(score_completion(ref, c)["total"]) for c, ref in zip(completions, rlforge_reference)]
