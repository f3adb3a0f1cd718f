"""An inspect_ai evaluation of rlforge's tasks, scored by each task's own verifier.

`rlforge export tasks DIR --format jsonl --out OUT` copies this file into OUT as
`rlforge_inspect.py`, with `rlforge_reward.py` and the text verifier's `rlforge_*.py` beside
it, so it runs where only inspect_ai is installed:

    inspect eval OUT/rlforge_inspect.py --model openai/MODEL [-T split=val]

Each JSONL row is a sample: `prompt` (the system line and instruction `rlforge run` sends)
is the input, `target` (the task's reference data as a JSON string) the target, `task_id`
the id. The scorer gives the verifier's total reward as the score (its mean is the
metric), the pass/fail outcome and each component in the score's metadata. Only tasks whose
verifier scores one reply (answers and replies) are evaluated; the others need the
sandbox and are left out of the dataset.
"""

import importlib
import os
import sys

from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.scorer import Score, mean, scorer, stderr
from inspect_ai.solver import generate

HERE = os.path.dirname(os.path.abspath(__file__))


def _reward_module():
    """rlforge_reward.py beside this file, else rlforge's own (the same source)."""
    if os.path.isfile(os.path.join(HERE, "rlforge_reward.py")):
        if HERE not in sys.path:
            sys.path.insert(0, HERE)
        return importlib.import_module("rlforge_reward")
    from rlforge.export import reward_fn
    return reward_fn


reward = _reward_module()


@scorer(metrics=[mean(), stderr()])
def rlforge_verifier():
    """The task's verifier on the model's reply: the total reward in [0, 1]."""

    async def score(state, target):
        result = reward.score_completion(target.text, state.output.completion)
        return Score(value=float(result["total"]), answer=state.output.completion[-400:],
                     explanation=result.get("reason") or result.get("detail") or result["outcome"],
                     metadata={"outcome": result["outcome"],
                               "components": {n: c["value"] for n, c in result["components"].items()}})

    return score


def scorable(sample) -> bool:
    meta = sample.metadata or {}
    return meta.get("kind") == "answer" and meta.get("verifier") in reward.TEXT_VERIFIERS


@task
def rlforge(split: str = "train") -> Task:
    """The exported tasks of one split (`-T split=val`)."""
    dataset = json_dataset(os.path.join(HERE, f"{split}.jsonl"), FieldSpec(
        input="prompt", target="target", id="task_id",
        metadata=["generator", "verifier", "kind", "split", "category", "difficulty"]))
    return Task(dataset=dataset.filter(scorable), solver=generate(), scorer=rlforge_verifier())
