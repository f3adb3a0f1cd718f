"""The environment loop: one task, one policy conversation, one scored submission.

A rollout resets a task's environment, shows the policy the instruction, executes what the
policy does, and scores what it leaves behind. `Environment` is that loop with the policy
left out, so `rlforge run` (which calls an OpenAI-compatible endpoint) and trainers that
bring their own policy (`rlforge.envs`) walk the very same code:

    env = Environment(task, EnvOptions(), runner, scratch)
    messages = await env.reset()
    while not env.done:
        reply = await policy(messages, env.tools)          # an assistant message
        messages, reward, done, info = await env.step(reply)

Two kinds of task (`[metadata.rlforge] kind` in task.toml):

- **answer** (single turn): the policy's one reply is the submission. Answer and reply
  verifiers only compare strings, so they are scored in-process from
  `tests/reference.json` with the functions `tests/test.sh` runs (the text goes through
  the same decoding as the verifier's file read, so both paths give the same reward);
  any other verifier gets the reply written to the task's answer file and runs
  `tests/test.sh` in the sandbox.
- **terminal** (multi-turn): the policy runs shell commands in the task's sandbox
  (workspace at /app, a fresh process per command, no network) through a `bash` tool —
  OpenAI tool calls, or fenced ```bash blocks for servers without tool calling — and ends
  with `submit` (or by running out of turns). The final workspace is the submission:
  its answer file is scored in-process for answer/reply verifiers; otherwise
  `tests/test.sh` runs in the sandbox over it. A task that names a search command
  (`search_command` in its metadata) also gets a `search` tool that runs it, with the
  query, in the sandbox like any command.

Infrastructure failures (a sandbox could not start, the task's verifier data is broken)
raise `InfraError`; they make a rollout `invalid`, never a failure of the policy. Once the
policy's code has run, whatever it did (crashed, hung, killed its own processes, left no
result) is scored by the host as a `fail` with a typed reason (see
`rlforge.verify.boundary`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rlforge.errors import RlforgeError, SnapshotMismatch, UserError
from rlforge.records import EnvOptions, valid_utf8
from rlforge.run.submission import (SUBMISSION_CHARS, as_file, as_read, read_prefix,
                                    rebuild_workspace, score_read, score_text,
                                    workspace_changes)
from rlforge.run.workspace import WorkspaceTracker, rebuild
from rlforge.sandbox import FailureReason, SandboxResult, SandboxSpec
from rlforge.taskdir import WORKSPACE, Task
from rlforge.verify import kinds
from rlforge.verify.boundary import bad_path_reward, too_large_reward, unreadable_reward
from rlforge.verify.runner import BadSubmissionPath, TaskRunner, fresh_workspace

SINGLE_TURN_SYSTEM = (
    "You are answering in this chat: you cannot run commands or write files. Where the "
    "task says how to answer in chat, do exactly that.")
TOOLS_SYSTEM = (
    "You are working in a Linux sandbox without network access. The task's files are in "
    "/app. Run shell commands with the `bash` tool: each runs in a new shell in /app and is "
    "stopped after {timeout:g} seconds; files persist between commands, shell state does "
    "not. When the task is done, call the `submit` tool.")
TEXT_SYSTEM = (
    "You are working in a Linux sandbox without network access. The task's files are in "
    "/app. To run a shell command, reply with one fenced block:\n```bash\n<command>\n```\n"
    "You will then see its output. Each command runs in a new shell in /app and is stopped "
    "after {timeout:g} seconds; files persist between commands, shell state does not. When "
    "the task is done, reply with SUBMIT on a line by itself.")
NO_ACTION = ("No command found. Run a command with the bash tool (or a ```bash block), or "
             "submit when you are done.")

BASH_TOOL = {"type": "function", "function": {
    "name": "bash",
    "description": "Run a shell command in /app and return its exit code and output.",
    "parameters": {"type": "object", "properties": {
        "command": {"type": "string", "description": "the command line to run"}},
        "required": ["command"]}}}
SEARCH_TOOL = {"type": "function", "function": {
    "name": "search",
    "description": "Search the task's knowledge base (files under /app/kb); returns the "
                   "best-matching files, ranked, with snippets.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "description": "words to look for"}},
        "required": ["query"]}}}
SUBMIT_TOOL = {"type": "function", "function": {
    "name": "submit", "description": "Finish: the workspace in /app is your submission.",
    "parameters": {"type": "object", "properties": {}}}}

logger = logging.getLogger(__name__)

_BASH_BLOCK = re.compile(r"```(?:bash|sh|shell)?[ \t]*\n(.*?)```", re.S)
_SUBMIT_LINE = re.compile(r"^[ \t]*SUBMIT[ \t]*$", re.M)


class InfraError(RlforgeError):
    """The environment, not the policy, failed: the sandbox broke or the verifier crashed.

    `kind` names it for the rollout record (sandbox, verifier, task); the rollout's
    outcome is `invalid`.
    """

    infra = True

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message

    def record(self) -> dict[str, Any]:
        """A JSON-ready description for the rollout record."""
        return {"type": self.kind, "infra": True, "message": self.message}


# --- observations ----------------------------------------------------------------------

def clip(text: str, limit: int) -> tuple[str, bool]:
    """At most `limit` characters of `text`, keeping its head and tail."""
    if len(text) <= limit:
        return text, False
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:] if tail else ''}", True


def describe_result(result: SandboxResult, limit: int, timeout: float) -> tuple[str, bool]:
    """A command's outcome as the policy sees it: exit code, then output (clipped)."""
    if result.timed_out:
        head = f"[killed: still running after {timeout:g}s]"
    elif result.exit_code is None:
        head = "[did not run]"
    else:
        head = f"[exit code {result.exit_code}]"
    out, err = result.stdout_text, result.stderr_text
    body = out + (("\n[stderr]\n" + err) if err.strip() else "")
    body, clipped = clip(body, limit)
    clipped = clipped or result.stdout_truncated or result.stderr_truncated
    return (head + ("\n" + body if body else "")), clipped


# --- the environment -------------------------------------------------------------------

@dataclass
class Command:
    """One shell command the policy asked for."""

    command: str
    tool_call_id: str | None = None


def _arguments(text: Any, key: str) -> str | None:
    """`key` of a tool call's JSON arguments when it is a non-blank string, else None.
    The arguments are the policy's bytes: nothing in them may raise (a RecursionError from
    deeply nested JSON included)."""
    try:
        args = json.loads(text or "{}")
    except (ValueError, TypeError, RecursionError):
        return None
    value = args.get(key) if isinstance(args, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def _assistant(message: dict[str, Any] | str) -> dict[str, Any]:
    """The policy's reply as it goes back into the conversation (content never null)."""
    if isinstance(message, str):
        return {"role": "assistant", "content": valid_utf8(message)}
    out = {"role": "assistant", "content": valid_utf8(message.get("content") or "")}
    if message.get("tool_calls"):
        out["tool_calls"] = valid_utf8(message["tool_calls"])
    return out


class Environment:
    """One task's environment for one rollout; see the module docstring.

    Args:
        task: the task.
        options: loop settings.
        runner: runs sandboxed commands and verifiers (may be None for answer tasks that
            are scored in-process).
        scratch: a directory for workspaces and verifier logs (removed by `close`).
    """

    def __init__(self, task: Task, options: EnvOptions, runner: TaskRunner | None,
                 scratch: Path, *, track_workspace: bool = False):
        self.task = task
        self.options = options
        self.runner = runner
        self.scratch = scratch
        self.multi_turn = task.kind == "terminal"
        protocol = options.tool_protocol
        self.search_command = self._search_command() if self.multi_turn else ""
        tools = [BASH_TOOL, SEARCH_TOOL, SUBMIT_TOOL] if self.search_command else [BASH_TOOL, SUBMIT_TOOL]
        self.tools = tools if self.multi_turn and protocol != "text" else None
        self.messages: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.turns = 0
        self.done = False
        self.ended_by = ""
        self.submission: dict[str, Any] | None = None
        self.reward: dict[str, Any] | None = None
        self.workspace: Path | None = None
        self._idle = 0
        self._too_large: str | None = None  # a command's copy-out passed a cap: why
        self._dir: Path | None = None
        #: With `track_workspace`, a terminal episode's workspace is hashed at reset and
        #: can be snapshotted after any turn (`rlforge.run.snapshot`).
        self.track_workspace = track_workspace
        self.tracker: WorkspaceTracker | None = None
        #: Called once the episode ends, before scoring (the run driver stops the
        #: rollout's time budget there: verifying is not the policy's time).
        self.on_scoring: Callable[[], None] | None = None

    # The loop ----------------------------------------------------------------------

    async def reset(self) -> list[dict[str, Any]]:
        """Start (or restart) the episode; returns the messages to send to the policy."""
        self._cleanup()
        self.steps, self.turns, self.done, self.ended_by = [], 0, False, ""
        self.submission = self.reward = None
        self._idle = 0
        self._too_large = None
        if self.multi_turn:
            if self.runner is None:
                raise UserError("a terminal task needs a sandbox runner")
            self._dir = Path(tempfile.mkdtemp(prefix="rollout-", dir=self.scratch))
            self.workspace = await asyncio.to_thread(fresh_workspace, self.task.path, self._dir)
            if self.track_workspace:
                self.tracker = await asyncio.to_thread(WorkspaceTracker, self.workspace,
                                                       self._spec().copy_limits)
            template = TEXT_SYSTEM if self.tools is None else TOOLS_SYSTEM
            system = template.format(timeout=self.options.command_timeout)
        else:
            system = SINGLE_TURN_SYSTEM
        self.messages = [{"role": "system", "content": system},
                         {"role": "user", "content": self.task.instruction}]
        return self.messages

    async def step(self, message: dict[str, Any] | str
                   ) -> tuple[list[dict[str, Any]], float, bool, dict[str, Any]]:
        """Take the policy's reply (an assistant message, or its text).

        Returns:
            (messages, reward, done, info): the conversation to send next; the reward total
            once done (0.0 before); whether the episode ended; and `info` with `outcome`,
            `reward` (components), `submission` and `ended_by` once done.
        """
        if self.done:
            raise UserError("the episode is over; call reset() to start another")
        self.turns += 1
        try:
            await self._step(message)
        except (InfraError, UserError):
            raise
        except Exception as exc:  # raised on the policy's own bytes: its fail, never invalid
            self.done, self.ended_by = True, "unreadable"
            self.reward = _unreadable(exc, "reply")
        return self.messages, self.total, self.done, self.info()

    async def _step(self, message: dict[str, Any] | str) -> None:
        reply = _assistant(message)
        self.messages.append(reply)
        if not self.multi_turn:
            await self.finish(reply["content"], "answered")
        else:
            commands, submitted = self._parse_actions(reply)
            full = None  # why the workspace no longer fits a sandbox, once it does not
            for cmd in commands:
                if full is None:
                    full = await self._execute(cmd)
                else:
                    self._answer(cmd, f"[not run: {full}]")
            if full is not None:
                await self.finish(None, "workspace_full")
            elif submitted:
                await self.finish(None, "submitted")
            elif not commands and not reply.get("tool_calls"):
                self._idle += 1
                if self._idle >= 2:
                    await self.finish(None, "no_action")
                else:
                    self.messages.append({"role": "user", "content": NO_ACTION})
            else:
                self._idle = 0
            if not self.done and self.turns >= self.options.max_turns:
                await self.finish(None, "max_turns")

    async def finish(self, text: str | None, ended_by: str) -> dict[str, Any]:
        """End the episode now and score it (`text` is a single-turn task's reply). Whatever
        raises on what the policy left (a path past PATH_MAX, say) is its fail."""
        try:
            return await self._finish(text, ended_by)
        except (InfraError, UserError):
            raise
        except Exception as exc:
            self.done, self.ended_by = True, ended_by
            self.reward = _unreadable(exc, "workspace")
            return self.reward

    async def _finish(self, text: str | None, ended_by: str) -> dict[str, Any]:
        self.done = True
        self.ended_by = ended_by
        if self.on_scoring is not None:
            self.on_scoring()
        if self.multi_turn:
            ws = self.workspace
            assert ws is not None, "a multi-turn episode has its workspace from reset()"
            caps = self._spec().copy_limits
            submission = await asyncio.to_thread(
                workspace_changes, self.task.path / WORKSPACE, ws, caps=caps)
            self.submission = submission
            too_large = submission.get("error") and submission.get("detail") or self._too_large
            if too_large:  # the policy's own doing: a fail, never scored further
                self.reward = too_large_reward(too_large)
                return self.reward
            if kinds.get(self.task.verifier).submission == "patch":  # as trainers read it
                from rlforge.tasks.generators.repair.score import workspace_diff

                submission["diff"] = await asyncio.to_thread(workspace_diff, self.task.path, ws)
            # Once the policy's commands ran, the workspace is theirs: if it no longer fits
            # the verifier's sandbox, that is the policy's fail.
            self.reward = await self._score_workspace(ws, by_policy=bool(self.steps))
        else:
            self.submission = {"type": "text", "text": text or ""}
            self.reward = await self.verify(text or "")
        return self.reward

    async def verify(self, submission: str | dict[str, Any] | None) -> dict[str, Any]:
        """Score a submission without running an episode.

        Args:
            submission: a reply text (as a single-turn answer), or a workspace submission
                as stored on a rollout (`{"type": "workspace", "files": ..., "deleted": ...}`),
                or `{path: str | bytes}` files written into the starting workspace.

        Returns:
            The reward: `components`, `total`, `outcome` (pass or fail).

        Raises:
            InfraError: the sandbox or the verifier failed.
        """
        try:
            return await self._verify(submission)
        except (InfraError, UserError):
            raise
        except Exception as exc:  # raised on the submission's bytes: its fail, never invalid
            return _unreadable(exc, "submission")

    async def _verify(self, submission: str | dict[str, Any] | None) -> dict[str, Any]:
        if isinstance(submission, dict) and submission.get("type") == "text":
            submission = submission.get("text", "")
        if submission is None or isinstance(submission, str):
            if kinds.scored_in_process(self.task):
                return await self._judged(score_text(self.task, submission),
                                         as_read(as_file(submission)))
            files = {self.task.answer_file: {"base64": base64.b64encode(as_file(submission)).decode()}}
            submission = {"type": "workspace", "files": files, "deleted": []}
        elif submission.get("type") != "workspace":
            submission = {"type": "workspace", "deleted": [], "files": {
                rel: ({"text": v} if isinstance(v, str) else
                      {"base64": base64.b64encode(v).decode()}) for rel, v in submission.items()}}
        root = Path(tempfile.mkdtemp(prefix="verify-", dir=self.scratch))
        try:
            try:
                ws = await asyncio.to_thread(rebuild_workspace, self.task, submission, root)
            except BadSubmissionPath as exc:  # the submission names a file outside /app
                return bad_path_reward(str(exc))
            # The starting workspace fit the verifier's sandbox when the task was validated:
            # if it no longer fits, the submission's files did it, and that is its fail.
            return await self._score_workspace(ws, by_policy=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    # Snapshots ---------------------------------------------------------------------

    def episode_state(self) -> dict[str, Any]:
        """What the episode holds besides its workspace, JSON-ready: the conversation, the
        commands run, the turns taken and the counters that end an episode."""
        if self.done or not self.multi_turn:
            raise SnapshotMismatch("only a terminal episode under way can be snapshotted")
        return {"task_id": self.task.task_id, "messages": self.messages, "steps": self.steps,
                "turns": self.turns, "idle": self._idle, "too_large": self._too_large}

    async def resume(self, state: dict[str, Any], workspace: dict[str, Any],
                     blobs: Path) -> list[dict[str, Any]]:
        """Continue an episode from a snapshot (`episode_state` and a workspace difference
        of `rlforge.run.workspace`); returns the messages to send to the policy.

        Raises:
            SnapshotMismatch: the snapshot is of another task, or its workspace cannot be
                rebuilt byte for byte. Nothing of it is kept: the episode is left as
                `reset` starts it.
        """
        if not self.multi_turn:
            raise SnapshotMismatch("only terminal episodes are snapshotted")
        if state.get("task_id") != self.task.task_id:
            raise SnapshotMismatch(f"the snapshot is of task {state.get('task_id')}, "
                                   f"not {self.task.task_id}")
        track, self.track_workspace = self.track_workspace, False
        try:  # the starting tree comes from the rebuild
            await self.reset()
        finally:
            self.track_workspace = track
        assert self._dir is not None and self.workspace is not None, "reset made them"
        caps = self._spec().copy_limits
        try:
            ws, start = await asyncio.to_thread(rebuild, self.task.path, workspace, blobs,
                                                self._dir, caps)
        except SnapshotMismatch:
            await self.reset()
            raise
        remove_tree(self.workspace)
        self.workspace = ws
        if self.track_workspace:
            self.tracker = await asyncio.to_thread(WorkspaceTracker, ws, caps, start)
        try:
            self.messages = list(state["messages"])
            self.steps = list(state["steps"])
            self.turns, self._idle = int(state["turns"]), int(state["idle"])
            self._too_large = state["too_large"]
        except (KeyError, TypeError, ValueError) as exc:
            await self.reset()
            raise SnapshotMismatch(f"the snapshot's episode is not readable ({exc})") from None
        return self.messages

    @property
    def total(self) -> float:
        return float(self.reward["total"]) if self.reward else 0.0

    def info(self) -> dict[str, Any]:
        """The episode's state: outcome and reward once done, the steps run so far."""
        out: dict[str, Any] = {"turns": self.turns, "steps": self.steps}
        if self.done:
            out.update(outcome=self.reward["outcome"] if self.reward else "invalid",
                       reward=self.reward, submission=self.submission, ended_by=self.ended_by)
        return out

    def close(self) -> None:
        """Remove the workspace."""
        self._cleanup()

    # Internals -----------------------------------------------------------------------

    def _cleanup(self) -> None:
        if self._dir is not None:
            remove_tree(self._dir)
            self._dir = None
            self.workspace = None

    def _parse_actions(self, reply: dict[str, Any]) -> tuple[list[Command], bool]:
        """The commands in a reply and whether it submits; answers bad tool calls at once."""
        commands: list[Command] = []
        submitted = False
        calls = reply.get("tool_calls") or []
        if calls and self.tools is not None:
            for call in calls:
                call_id = call.get("id") or f"call_{self.turns}_{len(commands)}"
                function = call.get("function") or {}
                name = function.get("name")
                if submitted:
                    self._tool_reply(call_id, "[ignored: already submitted]")
                    continue
                if name == "submit":
                    submitted = True
                    self._tool_reply(call_id, "[submitted]")
                    continue
                if name == "search" and self.search_command:
                    command = self._search(function.get("arguments"))
                    if command is None:
                        self._tool_reply(call_id, '[error: arguments must be JSON like '
                                                  '{"query": "refund for a damaged parcel"}]')
                    else:
                        commands.append(Command(command, call_id))
                    continue
                if name != "bash":
                    names = "bash, search or submit" if self.search_command else "bash or submit"
                    self._tool_reply(call_id, f"[error: no tool named {name!r}; use {names}]")
                    continue
                command = _arguments(function.get("arguments"), "command")
                if command is None:
                    self._tool_reply(call_id, '[error: arguments must be JSON like '
                                              '{"command": "ls -la"}]')
                    continue
                commands.append(Command(command, call_id))
            return commands, submitted
        if self.options.tool_protocol == "tools":
            return [], False
        text = reply.get("content") or ""
        block = _BASH_BLOCK.search(text)
        if block and block.group(1).strip():
            commands.append(Command(block.group(1).strip()))
        submitted = bool(_SUBMIT_LINE.search(text)) and not commands
        return commands, submitted

    def _search_command(self) -> str:
        """The task's search command (`[metadata.rlforge] search_command`, run in the sandbox
        like any command; the `search` tool runs it with the query), or "". A task.toml that
        cannot be read gives none here: `reset` reads it again and reports it."""
        try:
            meta = self.task.meta
        except UserError:
            return ""
        return str(meta.get("metadata", {}).get("rlforge", {}).get("search_command") or "")

    def _search(self, arguments: str | None) -> str | None:
        """The shell command a `search` call runs (None: its arguments are not a query)."""
        query = _arguments(arguments, "query")
        if query is None:
            return None
        return f"{self.search_command} {shlex.quote(query.strip())}"

    def _tool_reply(self, call_id: str, content: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})

    async def _execute(self, cmd: Command) -> str | None:
        """Run one command and answer it; why it could not run when the workspace the
        policy's earlier commands left no longer fits the sandbox (None: it ran)."""
        opts = self.options
        spec = self._spec(workspace=self.workspace, timeout_sec=opts.command_timeout)
        result = await self._runner().pool.run(["bash", "-c", cmd.command], spec)
        failure = result.failure
        if failure is not None and failure.reason is FailureReason.TOO_LARGE and self.steps:
            # Earlier commands grew the workspace past what a sandbox holds (copy-out makes
            # sparse files dense and hard links separate files): the policy's doing.
            self._too_large = f"the workspace no longer fits the sandbox: {failure.detail}"
            self._answer(cmd, f"[not run: {self._too_large}]")
            return self._too_large
        if failure is not None:
            raise InfraError("sandbox", str(failure))
        if result.submission_too_large and not self._too_large:
            self._too_large = result.submission_too_large
        text, clipped = describe_result(result, opts.observation_chars, opts.command_timeout)
        self.steps.append({"turn": self.turns, "command": cmd.command,
                           "exit_code": result.exit_code, "timed_out": result.timed_out,
                           "seconds": round(result.duration_sec, 4),
                           "output_chars": len(result.stdout) + len(result.stderr),
                           "clipped": clipped})
        self._answer(cmd, text)
        return None

    def _answer(self, cmd: Command, text: str) -> None:
        """What the policy sees of one of its commands."""
        if cmd.tool_call_id is not None:
            self._tool_reply(cmd.tool_call_id, text)
        else:
            self.messages.append({"role": "user", "content": "Output:\n" + text})

    def _spec(self, **fields: Any) -> SandboxSpec:
        """A sandbox for this task: the runner's hook (e.g. a prepared venv) and its mode."""
        return self._runner().spec(self.task.path, self.task.meta, **fields)

    def _runner(self) -> TaskRunner:
        """The sandbox runner; a task that runs anything in a sandbox always has one
        (`reset` refuses to start one without it)."""
        assert self.runner is not None, "a sandboxed step of a task scored in-process"
        return self.runner

    async def _score_workspace(self, ws: Path, by_policy: bool = False) -> dict[str, Any]:
        """The verifier's reward for `ws`; `by_policy`: the policy's commands wrote it, so
        a workspace too large for the verifier's sandbox is its fail, not infra."""
        task = self.task
        if kinds.scored_in_process(task):
            try:  # 1M characters take at most 4 bytes each
                data = read_prefix(ws, task.answer_file, 4 * SUBMISSION_CHARS + 4)
            except OSError:
                data = b""
            reply = as_read(data)
            return await self._judged(score_read(task, reply), reply)
        if self.runner is None:
            raise UserError(f"task {task.task_id}: its verifier runs in the sandbox; no runner given")
        run = await self.runner.verify(task.path, task.meta, ws, self.scratch)
        if run.reward is None and run.too_large and by_policy:
            return too_large_reward(f"the workspace does not fit the verifier's sandbox: "
                                    f"{run.too_large}")
        if run.reward is None:
            raise InfraError("verifier", run.error or "no reward")
        reward = run.reward
        reward.setdefault("outcome", "pass" if reward.get("total", 0) >= 1.0 - 1e-9 else "fail")
        return reward

    async def _judged(self, reward: dict[str, Any], reply: str) -> dict[str, Any]:
        """`reward` with the reply judge's component (`rlforge.tasks.judge`) when the run
        has one and this is a reply task: it moves the total, never the outcome, which the
        verifier's own components decide. The judge is called from the host, on the reply
        the verifier read. A judge that fails on a reply the verifier passed is an
        infrastructure error; on a reply it failed, the fail stands without the judge's
        component, so no reply (one too long for the judge, say) turns its fail into an
        infrastructure error."""
        opts = self.options
        if not (opts.judge_base_url and self.task.verifier == "reply" and reward.get("components")):
            return reward
        import os

        from rlforge.tasks.judge import Judge, with_judge

        key = os.environ.get(opts.judge_api_key_env) if opts.judge_api_key_env else None
        judge = Judge(opts.judge_base_url, opts.judge_model, api_key=key)
        try:
            components, total, _ = await asyncio.to_thread(
                with_judge, reward["components"], judge, self.task.instruction, reply)
        except UserError as exc:
            if reward.get("outcome") != "pass":
                return reward
            raise InfraError("judge", str(exc)) from None
        return {**reward, "components": components, "total": total}


def _unreadable(exc: Exception, what: str) -> dict[str, Any]:
    """The fail of a reply or submission rlforge raised on. Whatever raises once the
    policy's bytes are in hand was reached through them, so it is the policy's fail
    (DESIGN: invalid is proven, not presumed); the traceback is logged in full, since it
    is also a bug to fix."""
    logger.exception("an error on the policy's %s; scored as its fail", what)
    return unreadable_reward(f"{type(exc).__name__}: {exc}"[:300])


def remove_tree(path: Path) -> None:
    """Remove a directory the policy wrote into, however deep it nested it (shutil.rmtree
    recurses once per level and stops with RecursionError past ~1,000)."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], check=False,
                       stdin=subprocess.DEVNULL, capture_output=True)

