"""rlforge's tasks in verifiers (0.4, Python >= 3.12): its `HarborTaskset` loads them with
the workspace staged, and rollouts run in rlforge's bubblewrap sandbox, no Docker.

    python -m rlforge.verifiers_env load TASKS
    python -m rlforge.verifiers_env run TASKS --task NAME --model MODEL --base-url URL

verifiers is imported here, so this module runs only in a Python that has it (`pip install
'verifiers[harbor]==0.4.0'` beside rlforge; scripts/setup.sh makes `.venv-verifiers`).
What it adds to verifiers, each a subclass of verifiers' own:

- `RlforgeTaskset` (`HarborTaskset`): reads a local directory of tasks (`rlforge
  build-tasks --out`) instead of a Harbor Hub download; every task goes through verifiers'
  own `parse_task`, with `ignore_dockerfile` (the Dockerfile only copies the workspace).
- `RlforgeHarborTask` (`HarborTask`): stages the task's starting workspace
  (`rlforge.taskdir.WORKSPACE`) at /app (what the Dockerfile's `COPY app/ /app/` does;
  verifiers stages `environment/` only for a task with a pullable image) and the task's
  tests at /tests. Scoring is verifiers' own: `bash /tests/test.sh` in the runtime, then
  its parser reads `/logs/verifier/reward.json`.
- `SandboxRuntime` (`Runtime`): a box made of host directories, each bound into a fresh
  sandbox for every command, as in `rlforge.harbor`: /app, /logs/verifier, /tests (read
  only) and whatever is written elsewhere. No network, the task's memory and CPUs, its
  prepared venv at /opt/venv, every command as the sandbox's unprivileged user, and the
  process tree killed when the command ends. /tmp is private to each command, so what
  verifiers passes through /tmp between commands (artifact archives, the upload of an
  image task's `environment/`) does not work here; rlforge's tasks need neither.
- `SandboxBashHarness` (`Harness`, id `rlforge-sandbox`): a bash tool-calling loop run in
  this process (verifiers' `Harness.launch` allows that when every model call goes
  through the rollout's interception endpoint); each tool call runs in the runtime. The
  built-in harnesses run their program inside the box and reach the model over HTTP, which
  a sandbox without network cannot.

`run_episode` drives one task through verifiers' `Agent.run` (its rollout: setup, the
harness against the interception server, finalize, scoring) in a borrowed
`SandboxRuntime`, and returns the trace.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from verifiers.v1.agent import Agent
from verifiers.v1.configs.agent import AgentConfig
from verifiers.v1.configs.client import EvalClientConfig
from verifiers.v1.configs.harness import HarnessConfig
from verifiers.v1.configs.runtime import NetworkPolicyConfig
from verifiers.v1.errors import SandboxError, TaskError
from verifiers.v1.harness import Harness
from verifiers.v1.harnesses.utils.core import BASH_TOOL
from verifiers.v1.runtimes import BaseRuntimeInfo, ProgramResult, Runtime, SubprocessConfig
from verifiers.v1.tasksets.harbor.taskset import (
    REWARD_JSON,
    REWARD_JSON_ADAPTER,
    HarborConfig,
    HarborTask,
    HarborTaskset,
    parse_task,
    verifier_box_data,
)
from verifiers.v1.utils.compile import resolve_runtime_config

from rlforge.policy import CONTEXT_LENGTH
from rlforge.sandbox import SandboxSpec, copy_tree, read_file
from rlforge.sandbox.mounts import Mounts, grown_past_cap, trusted_fields
from rlforge.sandbox.pool import run_in_thread
from rlforge.sandbox.spec import LOGS_MOUNT, TESTS_MOUNT, WORKSPACE_MOUNT
from rlforge.taskdir import TESTS, WORKSPACE, load_task, task_dirs
from rlforge.verify.scorer import SOCKET_MOUNT, Scorer

__all__ = ["RlforgeHarborTask", "RlforgeTaskset", "RlforgeTasksetConfig", "SandboxBashHarness",
           "SandboxBashHarnessConfig", "SandboxRuntime", "SandboxRuntimeConfig", "run_episode"]

#: verifiers finds a harness or taskset by its id, an importable top-level module: this one
#: answers to `rlforge-sandbox` once imported.
PLUGIN_MODULE = "rlforge_sandbox"
HARNESS_ID = PLUGIN_MODULE.replace("_", "-")
sys.modules.setdefault(PLUGIN_MODULE, sys.modules[__name__])

TOOL_OUTPUT_LIMIT = 30_000
#: the stop condition of an episode ended by a policy reply too deeply nested to take in
REPLY_TOO_DEEP = "policy_reply_too_deep"
#: the stop condition of an episode ended by a tool call that is not a function call
BAD_TOOL_CALL = "policy_tool_call_unreadable"


# --- the runtime ---------------------------------------------------------------------


class SandboxRuntimeConfig(NetworkPolicyConfig):
    type: Literal["rlforge-sandbox"] = "rlforge-sandbox"
    allow: list[str] = []  # pydantic copies the default
    """Nothing: rlforge's sandbox has no network at all."""
    cpu: float | None = None
    """CPUs of each sandbox (a cgroup quota); verifiers fills in the task's."""
    memory: float | None = None
    """Memory of each sandbox in GB; verifiers fills in the task's."""
    timeout_sec: float = 3600.0
    """Wall-clock limit of one command."""


class SandboxRuntimeInfo(SandboxRuntimeConfig, BaseRuntimeInfo):
    pass


class SandboxRuntime(Runtime):
    """verifiers' `Runtime` on rlforge's sandbox (see the module docstring)."""

    def __init__(self, config: SandboxRuntimeConfig | None = None, name: str | None = None):
        super().__init__(name)
        self.config = config or SandboxRuntimeConfig()
        self.info = SandboxRuntimeInfo(**self.config.model_dump())
        self._root: Path | None = None
        self._mounts: Mounts | None = None
        self._fields: dict[str, Any] = {}
        self._ran = False  # whether a command of the episode has run in a sandbox
        self.agent_timeout: float | None = None  # the task's `[agent] timeout_sec`

    async def start(self) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="rlforge-verifiers-"))
        self._root.chmod(0o755)
        self.info.id = str(self._root)
        self._mounts = Mounts(self._root)
        for path in (WORKSPACE_MOUNT, LOGS_MOUNT):
            self._mounts.add(path)
        if self.config.memory:
            self._fields["memory_mb"] = max(1, int(self.config.memory * 1024))
        if self.config.cpu:
            self._fields["cpus"] = float(self.config.cpu)

    def cleanup(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root, self._mounts = None, None

    # --- where a path lives on the host ----------------------------------------------

    def locate(self, path: str, create: str | None = None) -> tuple[Path, str]:
        """The host directory mounted where `path` lives and `path` relative to it (a
        relative path is taken from /app); `create` names the directory to mount when no
        mounted directory holds `path` yet."""
        if self._mounts is None:
            raise SandboxError("the rlforge sandbox runtime is not started")
        try:
            root, relative = self._mounts.find(PurePosixPath(WORKSPACE_MOUNT, path), create)
        except (OSError, ValueError) as e:
            raise SandboxError(str(e)) from None
        return root, str(relative)

    def host_path(self, path: str, create: str | None = None) -> Path:
        root, relative = self.locate(path, create)
        return root / relative

    def stage(self, source: Path, target: str, replace: bool = False) -> None:
        """Copy a host directory's contents to `target` (readable by the sandbox's user)."""
        host = self.host_path(target, create=target)
        if replace:
            shutil.rmtree(host, ignore_errors=True)
        shutil.copytree(source, host, dirs_exist_ok=True, symlinks=True)
        for p in [host, *host.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | (0o755 if p.is_dir() else 0o644))

    def use_task(self, task_dir: Path) -> None:
        """Sandbox fields the task asks for in [metadata.rlforge]: its prepared venv."""
        from rlforge.config import Config, default_cache_dir
        from rlforge.verify.runner import prepared_env_hook

        # an entry point (verifiers loads it): the flag-less configuration's cache
        cache_dir = default_cache_dir(Config.load().settings())
        task = load_task(task_dir)
        self._fields.update(prepared_env_hook(task_dir, task.meta, cache_dir))
        self.agent_timeout = task.agent_timeout  # a rollout's budget, as `rlforge run` reads it

    # --- files -----------------------------------------------------------------------

    async def write(self, path: str, data: bytes) -> None:
        target = self.host_path(path, create=str(PurePosixPath(WORKSPACE_MOUNT, path).parent))
        target.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(target.write_bytes, data)
        target.chmod(0o644)

    async def _read(self, path: str, max_bytes: int | None = None) -> bytes:
        root, relative = self.locate(path)
        try:  # never follows links the sandbox may have planted
            return await asyncio.to_thread(read_file, root, relative, max_bytes=max_bytes or 1_000_000_000)
        except (OSError, ValueError) as e:
            raise SandboxError(f"read {path!r}: {e}") from e

    # --- commands --------------------------------------------------------------------

    def _spec(self, env: dict[str, str], trusted: bool = False) -> SandboxSpec:
        if self._mounts is None:
            raise SandboxError("the rlforge sandbox runtime is not started")
        variables = {**self.process_env(env), "RLFORGE_SANDBOXED": "1"}
        variables.pop("PATH", None)
        return SandboxSpec(**self._mounts.binds(trusted=trusted), env=variables, cwd=WORKSPACE_MOUNT,
                           timeout_sec=self.config.timeout_sec,
                           **(trusted_fields(self._fields) if trusted else self._fields))

    async def run(self, argv: list[str], env: dict[str, str]) -> ProgramResult:
        """Run a command of the agent's (or of verifiers' own machinery) in a fresh sandbox
        that sees neither /tests nor /logs/verifier. Once a command has run, a workspace
        that no longer fits a sandbox is what the commands left (copy-out makes sparse files
        dense): the command is not run and says so, as in `rlforge run`, and the episode
        goes on to be graded."""
        try:
            return await self._run(argv, self._spec(env), grown=self._ran)
        finally:
            self._ran = True

    async def run_trusted(self, argv: list[str], env: dict[str, str]) -> ProgramResult:
        """Run the task's verifier (test.sh) in a sandbox of its own that alone sees /tests
        and /logs/verifier; the verifier there asks this process's scorer
        (`rlforge.verify.scorer`), which runs policy code in sandboxes apart from both."""
        spec = self._spec(env, trusted=True)
        assert self._mounts is not None
        tests, workspace = self._mounts.host(TESTS_MOUNT), self._mounts.host(WORKSPACE_MOUNT)
        if tests is None or workspace is None:
            raise SandboxError("the task's tests are not staged")
        async with Scorer(tests, workspace, self._fields).serving() as (where, variables):
            return await self._run(argv, dataclasses.replace(
                spec, env={**spec.env, **variables}, ro_binds={**spec.ro_binds, SOCKET_MOUNT: where}))

    async def _run(self, argv: list[str], spec: SandboxSpec, grown: bool = False) -> ProgramResult:
        # the rollout's timeout cancels this: the process tree is killed, its thread ends
        result = await run_in_thread(argv, spec)
        not_run = grown_past_cap(result, grown)
        if not_run is not None:
            return ProgramResult(exit_code=126, stdout="", stderr=f"[{not_run}]")
        if result.failure is not None:
            raise SandboxError(f"rlforge sandbox: {result.failure}")
        code = result.exit_code if result.exit_code is not None else 137
        return ProgramResult(exit_code=code, stdout=result.stdout_text, stderr=result.stderr_text)


# --- the task and taskset ------------------------------------------------------------


class RlforgeHarborTask(HarborTask):
    """verifiers' Harbor task with the starting workspace staged at /app."""

    async def setup(self, runtime: Runtime) -> None:
        await super().setup(runtime)
        sandbox = _sandbox(runtime)
        task_dir = Path(self.data.task_dir)
        sandbox.use_task(task_dir)
        app = task_dir / WORKSPACE
        if app.is_dir():
            sandbox.stage(app, WORKSPACE_MOUNT)

    async def stage_tests(self, runtime: Runtime, wipe: bool = False) -> None:
        """The task's tests at /tests (read-only inside, and seen only by the verifier's
        own sandbox), /logs/verifier emptied; verifiers does this with a tarball in /tmp,
        which is private to each sandbox here."""
        sandbox = _sandbox(runtime)
        logs = sandbox.host_path(str(PurePosixPath(REWARD_JSON).parent))
        shutil.rmtree(logs)  # whatever stood there (no agent command can write it)
        logs.mkdir()
        logs.chmod(0o777)
        sandbox.stage(Path(self.data.task_dir) / TESTS, TESTS_MOUNT, replace=True)

    async def finalize(self, trace: Any, runtime: Runtime, sidecars: Any = None) -> None:
        """Nothing to collect: the one artifact of rlforge's tasks, /app, goes to the
        verifier's runtime host directory to host directory (`run_episode`); verifiers'
        collection passes it through /tmp, which is private to each sandbox here."""

    async def run_verifier(self, runtime: Runtime, trace: Any) -> float | dict[str, float]:
        """verifiers' Harbor grading, with test.sh run as the runtime's trusted command."""
        return await super().run_verifier(_Trusted(_sandbox(runtime)), trace)

    async def read_reward_json(self, runtime: Runtime) -> dict[str, float] | None:
        """reward.json read on the host, never following links (None when it is absent)."""
        sandbox = runtime.sandbox if isinstance(runtime, _Trusted) else _sandbox(runtime)
        try:
            data = await sandbox._read(REWARD_JSON, max_bytes=1_000_000)
        except SandboxError:
            return None
        try:
            return REWARD_JSON_ADAPTER.validate_json(data)
        except ValueError as exc:
            raise TaskError("rlforge's verifier wrote an unreadable reward.json") from exc


class _Trusted:
    """The runtime as the verifier's grading sees it: its commands are the trusted ones."""

    def __init__(self, sandbox: "SandboxRuntime"):
        self.sandbox = sandbox

    async def run(self, argv: list[str], env: dict[str, str]) -> ProgramResult:
        return await self.sandbox.run_trusted(argv, env)

    async def read(self, path: str, max_bytes: int | None = None) -> bytes:
        return await self.sandbox._read(path, max_bytes)


def _sandbox(runtime: Runtime) -> SandboxRuntime:
    if not isinstance(runtime, SandboxRuntime):
        raise TaskError(f"rlforge tasks run in rlforge's sandbox runtime, not {type(runtime).__name__}")
    return runtime


class RlforgeTasksetConfig(HarborConfig):
    path: Path = Path("tasks")
    """A directory of task directories (`rlforge build-tasks --out`)."""
    ignore_dockerfile: bool = True
    """rlforge's Dockerfiles only copy the starting workspace, which the task stages itself."""


class RlforgeTaskset(HarborTaskset):
    """`HarborTaskset` over a local directory of rlforge tasks."""

    def __init__(self, config: RlforgeTasksetConfig):
        super().__init__(config)

    def load(self) -> Iterator[HarborTask]:
        config = self.config
        assert isinstance(config, RlforgeTasksetConfig)
        dirs = [d for d in task_dirs(config.path.expanduser())
                if config.tasks is None or d.name in config.tasks]
        if not dirs:
            raise ValueError(f"no tasks named {', '.join(config.tasks or ())} in {config.path}")
        for idx, task_dir in enumerate(dirs):
            yield RlforgeHarborTask(parse_task(task_dir, idx, config), config.task)


# --- the harness ---------------------------------------------------------------------


class SandboxBashHarnessConfig(HarnessConfig):
    id: str = HARNESS_ID
    max_turns: int = 30
    """Model calls in one segment before the loop gives up."""


class SandboxBashHarness(Harness[SandboxBashHarnessConfig]):
    """A bash tool loop in this process; commands run in the runtime (see the docstring)."""

    APPENDS_SYSTEM_PROMPT = True
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data,
                     tool_interception_url=None) -> ProgramResult:
        system, prompt = self.resolve_text_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt or ""})
        # The task's agent timeout, kept here: verifiers' Harbor taskset drops a task's
        # timeouts by default, and with them kept it cannot size a runtime of this type.
        # Without one a rollout has no bound (a command that sleeps held one for 413 s of
        # a 60 s task); at the limit the running command is killed and the episode graded.
        limit = runtime.agent_timeout if isinstance(runtime, SandboxRuntime) else None
        try:
            async with asyncio.timeout(limit) as deadline:
                await self._loop(ctx, trace, runtime, endpoint, secret, messages)
        except TimeoutError:
            if not deadline.expired():
                raise  # a timeout of the endpoint's, not the agent's: not the policy's doing
            trace.record_timeout("agent")
        return ProgramResult(exit_code=0, stdout="", stderr="")

    async def _loop(self, ctx, trace, runtime: Runtime, endpoint: str, secret: str,
                    messages: list[dict[str, Any]]) -> None:
        for _ in range(self.config.max_turns):
            body = {"model": ctx.model, "messages": messages, "tools": [BASH_TOOL]}
            try:
                reply = await asyncio.to_thread(_post, f"{endpoint.rstrip('/')}/chat/completions", body, secret)
            except urllib.error.HTTPError:
                if not reply_too_deep(trace):
                    raise
                trace.stop(REPLY_TOO_DEEP)  # the policy's doing: the episode ends and is graded
                break
            message = reply["choices"][0]["message"]
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list) or not all(_function(call) for call in calls):
                # a call of another shape (a `custom` call has no `function`): sent back, an
                # endpoint may refuse the conversation, and the episode would end ungraded
                trace.stop(BAD_TOOL_CALL)
                break
            if any(nesting(str(_function(call).get("arguments") or "")) > MAX_NESTING for call in calls):
                trace.stop(REPLY_TOO_DEEP)  # sent on, it fails a hook of verifiers' own
                break
            messages.append({k: v for k, v in message.items() if v is not None})
            if not calls:
                break
            for call in calls:
                output = await self._tool(runtime, _function(call))
                messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": output})

    async def _tool(self, runtime: Runtime, function: dict[str, Any]) -> str:
        if function.get("name") != "bash":
            return f"error: unknown tool {function.get('name')!r}"
        try:
            args = json.loads(function.get("arguments") or "{}")
        except (ValueError, RecursionError) as e:  # bad JSON, a 5,000-digit number, depth
            return f"error: invalid JSON in tool arguments ({e})"
        if not isinstance(args, dict) or not isinstance(args.get("command"), str):
            return "error: give the command as {\"command\": \"...\"}"
        result = await runtime.run(["bash", "-c", args["command"]], {})
        return (result.stdout + result.stderr)[-TOOL_OUTPUT_LIMIT:]


def _function(call: Any) -> dict[str, Any]:
    """A tool call's `function` part, or {} where the call has none."""
    function = call.get("function") if isinstance(call, dict) else None
    return function if isinstance(function, dict) else {}


MAX_NESTING = 500  # brackets deep in a tool call's arguments: more is the policy's fail


def nesting(text: str) -> int:
    """How deep JSON-like brackets nest in `text`, outside strings (read without recursion)."""
    depth = deepest = 0
    quoted = escaped = False
    for ch in text:
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def reply_too_deep(trace: Any) -> bool:
    """Whether the interception server failed the last model call on what the policy wrote:
    its reply reached the server (parsed, a finish reason recorded) and taking it in then
    hit Python's recursion limit (verifiers hashes a tool call's arguments by decoding them
    as JSON; arguments nested ~1,000 deep exceed it and the server answers 502). The
    nesting is the policy's output, so the episode is graded as `rlforge run` grades it; a
    transport or provider fault is recorded as a `ProviderError` and is not this."""
    calls = list(getattr(trace, "calls", None) or [])
    last = calls[-1] if calls else None
    error = getattr(last, "error", None)
    return (error is not None and getattr(error, "type", "") == "RecursionError"
            and getattr(last, "finish_reason", None) is not None)


def _post(url: str, body: dict[str, Any], secret: str) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {secret}"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


# --- one episode ---------------------------------------------------------------------


async def run_episode(task: HarborTask, model: str, base_url: str,
                      api_key_var: str = "OPENAI_API_KEY", max_turns: int = 30):
    """One rollout of `task` through verifiers' `Agent.run`, in a fresh sandbox runtime
    sized by verifiers for the task; returns verifiers' trace. A task whose verifier is to
    run apart (`[verifier] environment_mode = "separate"`, as rlforge's tasks ask) is
    graded in a second runtime holding only the agent's /app, as Harbor does."""
    config = AgentConfig(model=model, client=EvalClientConfig(base_url=base_url, api_key_var=api_key_var),
                         harness=SandboxBashHarnessConfig(max_turns=max_turns),
                         runtime=SubprocessConfig())  # a policy never used: the box is borrowed
    runtime = SandboxRuntime(resolve_runtime_config(SandboxRuntimeConfig(), task))
    separate = task.data.verifier is not None
    async with Agent(config) as agent:
        try:
            await runtime.start()
            trace = await agent.run(task.defer_scoring() if separate else task, runtime=runtime)
            if separate and (trace.ok or outgrew_context(trace)):
                await _grade_apart(task, runtime, trace)
            return trace
        finally:
            await runtime.stop()


def outgrew_context(trace: Any) -> bool:
    """Whether an episode that did not end ok ended only because the endpoint said the
    conversation outgrew the model's context: the policy's doing, which `rlforge run`
    scores as a fail (`ended_by` context_length). Such an episode is graded like any
    other, or a policy that bloats its context on tasks it would fail is never scored."""
    errors = list(getattr(trace, "errors", None) or [])
    return bool(errors) and all(
        getattr(e, "type", "") == "ProviderError"
        and getattr(e, "status_code", None) in (400, 413, 422)
        and CONTEXT_LENGTH.search(str(getattr(e, "message", ""))) for e in errors)


async def _grade_apart(task: HarborTask, agent_box: SandboxRuntime, trace: Any) -> None:
    """Score the agent's /app in a fresh runtime (the task's verifier box), onto `trace`."""
    box = SandboxRuntime(resolve_runtime_config(SandboxRuntimeConfig(),
                                                HarborTask(verifier_box_data(task.data))))
    await box.start()
    try:
        box.use_task(Path(task.data.task_dir))
        app = box.host_path(WORKSPACE_MOUNT)
        app.rmdir()
        try:
            await asyncio.to_thread(copy_tree, agent_box.host_path(WORKSPACE_MOUNT), app)  # no links
        except OSError:  # what the agent left cannot be copied (a path past PATH_MAX): its fail
            trace.record_reward("reward", 0.0)
            return
        await asyncio.to_thread(_open_tree, app)
        assert isinstance(task, RlforgeHarborTask)
        await task.stage_tests(box)
        scores = await task.run_verifier(box, trace)
        for name, value in (scores.items() if isinstance(scores, dict) else [("solved", scores)]):
            trace.record_reward(name, value)
    finally:
        await box.stop()


def _open_tree(root: Path) -> None:
    """A copied tree readable and writable by the sandbox's user."""
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o777 if p.is_dir() else 0o666 | (p.stat().st_mode & 0o111))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlforge.verifiers_env", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    load = sub.add_parser("load", help="parse every task with verifiers' HarborTaskset; print them as JSON")
    load.add_argument("tasks", type=Path)
    episode = sub.add_parser("run", help="one episode of one task; print its reward as JSON")
    episode.add_argument("tasks", type=Path)
    episode.add_argument("--task", required=True, help="the task's directory name")
    episode.add_argument("--model", required=True)
    episode.add_argument("--base-url", required=True, help="an OpenAI-compatible endpoint")
    episode.add_argument("--api-key-var", default="OPENAI_API_KEY")
    episode.add_argument("--max-turns", type=int, default=30)
    args = parser.parse_args(argv)
    if args.command == "run":  # the task by its directory, or by the name `load` prints
        tasks = [t for t in RlforgeTaskset(RlforgeTasksetConfig(path=args.tasks)).load()
                 if args.task in (Path(t.data.task_dir).name, t.data.name)]
        if not tasks:
            print(f"error: no task {args.task!r} in {args.tasks}; `load` lists them (its name "
                  "or its dir)", file=sys.stderr)
            return 2
    else:
        tasks = list(RlforgeTaskset(RlforgeTasksetConfig(path=args.tasks)).load())
    if args.command == "load":
        print(json.dumps([{"name": t.data.name, "dir": Path(t.data.task_dir).name, "image": t.data.image,
                           "workdir": t.data.workdir, "network_allow": t.data.network_allow}
                          for t in tasks]))
        return 0
    trace = asyncio.run(run_episode(tasks[0], args.model, args.base_url, args.api_key_var, args.max_turns))
    print(json.dumps({"task": tasks[0].data.name, "reward": trace.reward, "ok": trace.ok,
                      "outgrew_context": outgrew_context(trace), "stop_condition": trace.stop_condition,
                      "metrics": trace.metrics, "turns": trace.num_turns,
                      "errors": [e.model_dump(mode="json") for e in trace.errors]}))
    return 0 if trace.ok or outgrew_context(trace) else 1


if __name__ == "__main__":
    sys.exit(main())
