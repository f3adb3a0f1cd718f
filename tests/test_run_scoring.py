"""In-process scoring of answer and reply tasks gives the reward `tests/test.sh` gives in the sandbox.

`rlforge run` scores single-turn answer and reply tasks in-process (no sandbox: nothing the
policy wrote is executed). These tests write the same reply to the answer file of a fresh
workspace, run the task's own `tests/test.sh` under bubblewrap, and compare the two rewards
component by component, on real tasks built from sample_data/.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlforge.taskdir import load_task
from rlforge.run.submission import as_file, score_text
from rlforge.sandbox import SandboxPool, SandboxSpec
from rlforge.verify.standalone.rewards import REWARD_PREFIX
from rlforge.verify.runner import fresh_workspace
from test_run_support import built_tasks

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    out = built_tasks(tmp_path_factory.mktemp("scoring"), limit=4)
    loaded = [load_task(p) for p in sorted(out.iterdir()) if p.is_dir()]
    assert {t.verifier for t in loaded} == {"answer", "reply"}
    return loaded


async def in_sandbox(task, texts: list[str]) -> list[dict]:
    """Each text written to the answer file and scored by tests/test.sh in bwrap, as a
    runner without rlforge would (the reward it prints)."""
    root = Path(tempfile.mkdtemp(prefix="scoring-"))
    async with SandboxPool(4) as pool:

        async def one(text):
            ws = fresh_workspace(task.path, root, {task.answer_file: as_file(text)})
            logs = Path(tempfile.mkdtemp(dir=root))
            logs.chmod(0o777)
            spec = SandboxSpec(workspace=ws, tests=task.path / "tests", logs=logs, timeout_sec=60,
                               env={"RLFORGE_SANDBOXED": "1"})
            result = await pool.run(["bash", "/tests/test.sh"], spec)
            line = next((x for x in result.stdout_text.splitlines() if x.startswith(REWARD_PREFIX)), None)
            assert line is not None, result.stderr_text[-500:]
            return json.loads(line[len(REWARD_PREFIX):])

        return await asyncio.gather(*(one(t) for t in texts))


def gold_reply(task) -> str:
    """The text the task's gold solution writes (solution/solve.sh holds it in a heredoc)."""
    script = (task.path / "solution" / "solve.sh").read_text()
    return re.search(r"<<'(\w+)'\n(.*)\n\1\n", script, re.S).group(2)


def cases_for(task) -> list[str]:
    ref = task.reference
    if task.verifier == "answer":
        right, labels = ref["answer"], ref["labels"]
        wrong = next(x for x in labels if x != right)
        return [f"ANSWER: {right}", right, f"  {right.upper()} ", f"`{right}`",
                f"Thinking...\r\nANSWER: {right}\r\n", f"first line\rANSWER: {right}\r",
                f"ANSWER: {wrong}\nANSWER: {right}", f"ANSWER: {right}\nanswer = {right}",
                f"Final answer: {right.replace('_', ' ')}", ", ".join(labels), "",
                " \n\t ", "x" * 500, f"ANSWER: {right}\x00", "ANSWER: \ud800" + right,
                f"ANSWER: {wrong}", f"ＡＮＳＷＥＲ: {right}", f"ANSWER: {right}" + "\n" * 3000]
    facts = ref.get("required", [])
    body = "Hello, thanks for reaching out. " + " ".join(f"Note: {f}." for f in facts)
    gold = gold_reply(task)
    return [gold, gold.replace("\n", "\r\n"), gold + "\x00", "\ufeff" + gold,
            body + " We are on it and will follow up shortly with more details.",
            body, "Thanks!", "", body.replace("\n", "\r\n") + " " + "word " * 20,
            body + " " + " ".join(ref.get("forbidden", [])[:1]) + " extra words " * 5,
            (task.path / "instruction.md").read_text(), "ok " * 1000]


def test_fixed_cases_agree(tasks):
    for task in tasks:
        texts = cases_for(task)
        sandboxed = asyncio.run(in_sandbox(task, texts))
        for text, expected in zip(texts, sandboxed):
            got = score_text(task, text)
            assert json.loads(json.dumps(got)) == expected, (task.task_id, text[:80])
        # The cases are not all alike: both outcomes are covered.
        assert {r["outcome"] for r in sandboxed} == {"pass", "fail"}, task.task_id


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_replies_agree(tasks, data):
    task = data.draw(st.sampled_from(tasks))
    ref = task.reference
    words = [ref["answer"]] + ref.get("labels", []) if task.verifier == "answer" else \
        ref.get("required", []) + ["thanks", "the"]
    piece = st.one_of(st.text(st.characters(exclude_categories=()), max_size=30),
                      st.sampled_from(words), st.sampled_from(["ANSWER: ", "\n", "\r\n", "\r",
                                                               " ", "`", "answer="]))
    text = "".join(data.draw(st.lists(piece, max_size=25)))
    (expected,) = asyncio.run(in_sandbox(task, [text]))
    assert json.loads(json.dumps(score_text(task, text))) == expected
