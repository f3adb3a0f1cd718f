"""A scripted OpenAI-compatible server whose chance of solving each task is known.

For the difficulty tests and the calibration benchmark: the server is given the task
directories, and answers a request for task T correctly with probability `rate(T)`, a
fixed function of the task id, else wrongly. Which samples pass is decided by a hash of
the task id and the request's `seed` (each sample of a run carries its own), so every turn
of one rollout agrees, a rerun is identical, and a test can recompute every verdict.

- A single-turn task gets its gold answer (the text its `solution/solve.sh` writes) after
  a line of reasoning, or a wrong one;
- a multi-turn task gets one bash call running its gold `solve.sh` (a repair task's with
  its gold patch written inline), or writing a wrong answer, then `submit`.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path
from typing import Any

from test_run_support import SUBMIT, ScriptedPolicy, bash_call


def rate(task_id: str) -> float:
    """The server's chance of solving a task: uniform-looking in [0, 1] over task ids."""
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def solves(task_id: str, seed: int) -> bool:
    """Whether the server solves this task for the sample with this seed."""
    u = int(hashlib.sha256(f"{task_id}:{seed}".encode()).hexdigest()[:16], 16) / 2**64
    return u < rate(task_id)


def gold_text(task_dir: Path) -> str:
    """The text the task's gold solution writes (solution/solve.sh holds it in a heredoc)."""
    script = (task_dir / "solution" / "solve.sh").read_text()
    m = re.search(r"<<'(\w+)'\n(.*)\n\1\n", script, re.S)
    return m.group(2) if m else ""


class RatedPolicy(ScriptedPolicy):
    """The server (see the module docstring); `tasks` maps task id -> task directory."""

    def __init__(self, tasks: dict[str, Path], solved=solves):
        """`solved(task_id, seed)`: whether a sample passes (default: `solves`)."""
        super().__init__({})
        self.tasks = tasks
        self.solved = solved
        self.by_instruction: dict[str, str] = {}
        self.kind: dict[str, str] = {}
        for task_id, path in tasks.items():
            self.by_instruction[(path / "instruction.md").read_text().strip()] = task_id
            meta = tomllib.loads((path / "task.toml").read_text())
            self.kind[task_id] = meta["metadata"]["rlforge"]["kind"]
            self.scripts[task_id] = [self._step(task_id, 0), self._step(task_id, 1)]

    def script_name(self, body: dict[str, Any]) -> str:  # type: ignore[override]
        for m in body["messages"]:
            if m["role"] == "user":
                text = str(m.get("content") or "")
                for instruction, task_id in self.by_instruction.items():
                    if instruction in text:
                        return task_id
        return ""

    def _step(self, task_id: str, turn: int):
        path = self.tasks[task_id]

        def step(body: dict[str, Any]):
            good = self.solved(task_id, int(body.get("seed", 0)))
            if self.kind[task_id] != "terminal":
                return f"Let me think.\nANSWER: {gold_text(path)}" if good else "ANSWER: no idea"
            if turn == 1:
                return SUBMIT
            solve = (path / "solution" / "solve.sh").read_text()
            gold = path / "solution" / "gold.diff"
            if gold.is_file():  # /solution is not the policy's: it writes the patch itself
                solve = ("cat > /tmp/gold.diff <<'RLFORGE_GOLD_EOF'\n" + gold.read_text()
                         + "RLFORGE_GOLD_EOF\n" + solve.replace("/solution/gold.diff", "/tmp/gold.diff"))
            return bash_call(solve if good else "echo 'no idea' > /app/answer.txt")
        return step
