"""A task as an environment, for trainers that run their own policy loop.

`rlforge run` drives tasks against an HTTP endpoint; a trainer (TRL, veRL, a notebook)
has the policy in its own process instead. `load` gives it the same environment `rlforge
run` uses — the same prompts, tools, sandboxed commands, submission handling and
verifiers (`rlforge.run.environment.Environment`) — behind a small gym-like face:

    import rlforge.envs

    with rlforge.envs.load("tasks/tickets-triage-0ffceb5d3034") as env:
        messages = env.reset()                      # the chat so far (system + instruction)
        done = False
        while not done:
            reply = my_policy(messages, env.tools)  # an assistant message, or its text
            messages, reward, done, info = env.step(reply)
        print(reward, info["outcome"], info["reward"]["components"])

    env.verify("ANSWER: billing")                   # score a submission directly

Actions are OpenAI-style assistant messages (`{"role": "assistant", "content": ...,
"tool_calls": [...]}`) or plain strings. On multi-turn (terminal) tasks, `env.tools`
holds the `bash` and `submit` tool definitions; each `bash` call runs in the task's
sandbox and its output comes back as a `tool` message. The reward is 0.0 until the
episode ends, then the verifier's total. Async trainers use `areset`, `astep`, `averify`.

A terminal episode under way can be saved after any turn and continued later, in another
process or on another machine that has the same task directory:

    env.save("ckpt/ep-17")                          # conversation, steps, counters, workspace
    ...
    with rlforge.envs.load(task_dir) as env:
        messages = env.restore("ckpt/ep-17")        # the workspace rebuilt byte for byte
        messages, reward, done, info = env.step(reply)

The workspace is stored as its difference from the task's starting workspace (files by
content hash, `rlforge.run.snapshot`); `restore` checks the rebuilt workspace's hash and
raises `SnapshotMismatch` rather than continue from anything else. The turn counter comes
back with the episode, so `run.max_turns` counts the turns before the save.

This module is an entry point, as the CLI is: given no configuration, `load` resolves the
flag-less one (RLFORGE_* env > rlforge.toml > default) once and hands its typed settings
down; nothing below it reads the configuration again.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from rlforge.config import Config, default_cache_dir
from rlforge.errors import SnapshotMismatch, SubmissionTooLarge
from rlforge.records import EnvOptions
from rlforge.run import snapshot
from rlforge.run.environment import Environment
from rlforge.sandbox import SandboxPool, sandbox_settings
from rlforge.taskdir import Task, check_whole, load_task
from rlforge.verify.runner import TaskRunner

__all__ = ["SnapshotMismatch", "TaskEnv", "load"]


def load(task_dir: str | Path, *, config: Config | None = None,
         sandbox: str | None = None) -> "TaskEnv":
    """The environment of one task directory.

    Args:
        task_dir: a task directory (made by `rlforge build-tasks`, or any Harbor task).
        config: settings for the loop (`run.tool_protocol`, `run.max_turns`,
            `run.command_timeout`, `run.observation_chars`, `sandbox.mode`); default: the
            resolved configuration (flag-less: RLFORGE_* env > rlforge.toml > default).
        sandbox: "bwrap" (default) or "none" (no isolation; only if you mean it).
    """
    settings = (config or Config.load()).settings()
    sandbox_given = sandbox_settings(settings.sandbox, sandbox)
    options = EnvOptions.from_settings(settings.run, sandbox_given["mode"])
    task = load_task(task_dir)  # refuses a task that is not whole
    check_whole(task_dir)  # and one a build-tasks has not published yet
    return TaskEnv(task, options, sandbox_given, default_cache_dir(settings))


class TaskEnv:
    """One task's environment; see the module docstring. Close it (or use `with`)."""

    def __init__(self, task: Task, options: EnvOptions, settings: dict[str, Any] | None = None,
                 cache_dir: Path | None = None):
        """`settings`: the user's sandbox settings (`rlforge.sandbox.sandbox_settings`;
        None: the built-in defaults). `cache_dir`: where the task's prepared environment is
        built (None: the flag-less configuration's)."""
        self.task = task
        self.options = options
        self._scratch = Path(tempfile.mkdtemp(prefix="rlforge-env-"))
        self._pool = SandboxPool(2)
        self._env = Environment(task, options,
                                TaskRunner(self._pool, options.sandbox_mode, settings, cache_dir),
                                self._scratch, track_workspace=task.kind == "terminal")
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """OpenAI tool definitions to offer the policy (None on single-turn tasks)."""
        return self._env.tools

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation so far."""
        return self._env.messages

    @property
    def done(self) -> bool:
        return self._env.done

    # Async API: the truth ------------------------------------------------------------

    async def areset(self) -> list[dict[str, Any]]:
        """Start an episode; returns the messages to send to the policy."""
        return await self._env.reset()

    async def astep(self, action: dict[str, Any] | str
                    ) -> tuple[list[dict[str, Any]], float, bool, dict[str, Any]]:
        """Apply the policy's reply; returns (messages, reward, done, info)."""
        return await self._env.step(action)

    async def averify(self, submission: str | dict[str, Any]) -> dict[str, Any]:
        """Score a submission: a reply text, or files `{path: str | bytes}` written into
        the starting workspace. Returns the reward (components, total, outcome)."""
        return await self._env.verify(submission)

    async def asave(self, directory: str | Path) -> snapshot.SaveCost:
        """Save the episode under way (a terminal one, not done) into `directory`."""
        try:
            return await asyncio.to_thread(snapshot.save, self._env, Path(directory))
        except SubmissionTooLarge as exc:
            raise SnapshotMismatch(f"the workspace cannot be saved: {exc}") from None

    async def arestore(self, directory: str | Path) -> list[dict[str, Any]]:
        """Continue the episode saved in `directory`; the messages to send next."""
        doc = await asyncio.to_thread(snapshot.load, Path(directory))
        if doc is None:
            raise SnapshotMismatch(f"no episode saved in {directory}")
        return await snapshot.restore(self._env, doc, Path(directory))

    # Sync API --------------------------------------------------------------------------

    def reset(self) -> list[dict[str, Any]]:
        """Start an episode; returns the messages to send to the policy."""
        return self._run(self.areset())

    def step(self, action: dict[str, Any] | str
             ) -> tuple[list[dict[str, Any]], float, bool, dict[str, Any]]:
        """Apply the policy's reply (an assistant message or its text).

        Returns:
            (messages, reward, done, info): the conversation to send next; 0.0, or the
            verifier's total once done; whether the episode ended; `info` with `turns`,
            `steps` (commands run) and, once done, `outcome`, `reward`, `submission`,
            `ended_by`.
        """
        return self._run(self.astep(action))

    def verify(self, submission: str | dict[str, Any]) -> dict[str, Any]:
        """Score a submission without an episode; see `averify`."""
        return self._run(self.averify(submission))

    def save(self, directory: str | Path) -> snapshot.SaveCost:
        """Save the terminal episode under way into `directory` (made if missing; a save
        there before is replaced whole): the conversation, the steps, the counters and the
        workspace as its difference from the task's start. Returns what it cost (seconds,
        bytes written, bytes hashed).

        Raises:
            SnapshotMismatch: the episode is not a terminal one under way, or its
                workspace holds what no snapshot rebuilds.
        """
        return self._run(self.asave(directory))

    def restore(self, directory: str | Path) -> list[dict[str, Any]]:
        """Continue the episode saved in `directory` by `save` (in this process or
        another); returns the messages to send to the policy.

        Raises:
            SnapshotMismatch: nothing is saved there, it is another task's, or the
                workspace rebuilt from it does not hash to the one saved (the episode is
                then left as `reset` starts it).
        """
        return self._run(self.arestore(directory))

    def close(self) -> None:
        """Remove the workspace and stop the sandbox threads."""
        self._env.close()
        self._pool.close()
        if self._loop is not None:
            self._loop.close()
            self._loop = None
        shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> "TaskEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError("TaskEnv's blocking methods cannot run inside an event loop; "
                               "use `await env.areset()`, `astep`, `averify` there")
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)
