"""The rlforge worker on one Ray node: `NodeWorker`, a Ray async actor.

One per node. It owns what belongs to the node: a sandbox pool (`sandbox.workers`; 0
means two per CPU of *this* node), prepared environments (built on first use into the
node's cache directory — the driver's `cache_dir` when it set one explicitly, else the
node's default — by the same `prepare_env` as a local run), a scratch directory, and
the copies of task directories shipped to it. The driver sends it batches of items
(`submit`) and long-polls for what finished (`results`), so one Ray call carries many
rollouts either way. The work itself is the local code: `RolloutRunner.rollout` for a
rollout, `validate_task` for a validation, the commits.repair `Checker` for a build-time
check — so a rollout on Ray is the same rollout, record for record.

Nothing a handler meets in its own work escapes as an exception: a rollout ends as a
record (a task whose files cannot be had is `invalid`, type `task`), a validation as a
failed result. An exception anyway is a bug; it goes back as a `WorkerFailure` with its
traceback and the driver raises it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import io
import os
import shutil
import tarfile
import tempfile
import traceback
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlforge import __version__
from rlforge.errors import UserError
from rlforge.taskdir import Task

if TYPE_CHECKING:
    from rlforge.policy import PolicyClient
    from rlforge.run.driver import RolloutRunner
    from rlforge.records import RolloutRecord
    from rlforge.sandbox import SandboxPool
    from rlforge.tasks.generators.repair.checks import Checker
    from rlforge.verify.runner import TaskRunner

logger = logging.getLogger("rlforge.execution.ray")

TASK_CACHE = 4096  # Task objects (files read once) kept per worker
UNPACKED_BYTES = 4 * 1024 ** 3  # shipped copies kept on a node's disk (packed size) before eviction


@dataclass
class WorkerFailure:
    """A handler raised: a bug in rlforge, reported to the driver with its traceback."""

    traceback: str


class UnavailableTask(Task):
    """A task whose directory could not reach this node: reading it raises the reason, so
    the rollout runner records the rollout as `invalid` (type `task`) like any other
    broken task directory."""

    def __init__(self, base: Task, reason: str):
        super().__init__(base.path, base.task_id, base.generator, base.generator_version,
                         base.verifier, base.kind, base.split)
        self.reason = reason

    @property
    def meta(self) -> dict[str, Any]:
        raise UserError(self.reason)

    @property
    def instruction(self) -> str:
        raise UserError(self.reason)

    @property
    def reference(self) -> dict:
        raise UserError(self.reason)


def _sees(probe: list[tuple[str, str]]) -> bool:
    """Whether this node has the driver's task files at the same paths, byte for byte."""
    if not probe:
        return False
    for path, digest in probe:
        try:
            with open(path, "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() != digest:
                    return False
        except OSError:
            return False
    return True


class NodeWorker:
    """See the module docstring. Created by `rlforge.execution.ray.cluster.start_workers`."""

    def __init__(self) -> None:
        self.pool: SandboxPool | None = None
        self.task_runner: TaskRunner | None = None
        self.scratch: Path | None = None
        self.cache_dir: Path | None = None
        self.sandbox_mode = "bwrap"
        self.sandbox: dict[str, Any] | None = None  # the driver's sandbox settings
        self.use_paths = True
        self.client: PolicyClient | None = None
        self.runner: RolloutRunner | None = None
        self.checker: Checker | None = None
        self._slots = 1  # rollouts that may play at once; more wait in `_turn`
        self._playing = 0
        self._turn = asyncio.Condition()
        self._outbox: dict[str, list] = {}
        self._ready: dict[str, asyncio.Event] = {}
        self._jobs: set[asyncio.Task] = set()
        self._tasks: OrderedDict = OrderedDict()
        self._unpacked: OrderedDict = OrderedDict()  # ref hex -> (directory, packed bytes)
        self._unpacked_bytes = 0
        self._unpacking: dict[str, asyncio.Future] = {}
        self._uses: Counter = Counter()

    # --- set-up ------------------------------------------------------------------------

    async def hello(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Check this node can serve and open its pool; `{"error": ...}` if it cannot."""
        from rlforge.config import Config, default_cache_dir
        from rlforge.sandbox import SandboxPool, ensure_available
        from rlforge.verify.runner import TaskRunner

        if spec["version"] != __version__:
            return {"error": f"it runs rlforge {__version__} and this machine rlforge "
                             f"{spec['version']}; install the same version on every node"}
        try:
            if spec["needs_sandbox"] and spec["sandbox_mode"] == "bwrap":
                await asyncio.to_thread(ensure_available)
        except UserError as exc:
            return {"error": str(exc)}
        # the driver's cache_dir when it set one, else this node's own configuration's
        self.cache_dir = (Path(spec["cache_dir"]) if spec["cache_dir"]
                          else default_cache_dir(Config.load().settings()))
        self.sandbox_mode = spec["sandbox_mode"]
        self.sandbox = spec.get("sandbox")
        self.pool = SandboxPool(spec["sandbox_workers"])
        self.task_runner = TaskRunner(self.pool, self.sandbox_mode, self.sandbox, self.cache_dir)
        self.scratch = Path(tempfile.mkdtemp(prefix="rlforge-ray-"))
        sees = _sees(spec["probe"])
        self.use_paths = sees and spec.get("task_files", "auto") != "ship"
        return {"sandboxes": self.pool.workers, "cpus": len(os.sched_getaffinity(0)),
                "sees_tasks": sees, "pid": os.getpid()}

    async def open_run(self, run: dict[str, Any], policy: dict[str, Any], api_key: str,
                       slots: int) -> None:
        """Open the policy client and the rollout runner of one run (the key is held in
        memory only, as a local run holds it). At most `slots` rollouts play at once; the
        driver hands over more, which wait here (their task files fetched meanwhile), so a
        freed slot starts the next rollout without a round trip to the driver."""
        from rlforge.policy import PolicyClient, PolicyConfig
        from rlforge.run.driver import RolloutRunner
        from rlforge.records import EnvOptions
        from rlforge.run.snapshot import EpisodeSnapshots

        assert self.task_runner is not None and self.scratch is not None, "hello() comes first"
        self.client = PolicyClient(PolicyConfig(**{**policy, "stop": tuple(policy["stop"])}),
                                   api_key=api_key)
        await self.client.open()
        self.runner = RolloutRunner(self.client, EnvOptions(**run["env"]), self.task_runner,
                                    self.scratch, run_id=run["run_id"], run_seed=run["seed"],
                                    time_budget=run["time_budget"],
                                    snapshots=EpisodeSnapshots(Path(run["snapshots"]))
                                    if run.get("snapshots") else None)
        self._slots = slots

    async def open_repair(self, opts: Any) -> None:
        """Hold a commits.repair `Checker` on this node's pool and cache directory."""
        from rlforge.tasks.generators.repair.checks import Checker

        assert self.cache_dir is not None, "hello() comes first"
        self.checker = Checker(None, opts, self.pool, self.cache_dir, self.sandbox_mode,
                               self.sandbox)

    # --- work --------------------------------------------------------------------------

    async def submit(self, kind: str, batch: list[tuple[int, Any]]) -> None:
        """Start every (key, payload) of `batch`; results come back through `results`."""
        handler = {"rollout": self._rollout, "validate": self._validate,
                   "repair": self._repair}[kind]
        for key, payload in batch:
            job = asyncio.create_task(self._serve(kind, key, handler, payload))
            self._jobs.add(job)
            job.add_done_callback(self._jobs.discard)

    async def results(self, kind: str) -> list[tuple[int, Any]]:
        """Every (key, result) of `kind` finished since the last call; waits for one."""
        ready = self._ready.setdefault(kind, asyncio.Event())
        while not self._outbox.get(kind):
            ready.clear()
            await ready.wait()
        out, self._outbox[kind] = self._outbox[kind], []
        return out

    async def _serve(self, kind: str, key: int, handler, payload: Any) -> None:
        try:
            result = await handler(payload)
        except Exception:
            logger.exception("rlforge worker: %s item failed", kind)
            result = WorkerFailure(traceback.format_exc())
        self._outbox.setdefault(kind, []).append((key, result))
        self._ready.setdefault(kind, asyncio.Event()).set()

    async def _rollout(self, payload) -> RolloutRecord:
        fields, files, sample = payload
        directory, problem = await self._task_dir(fields[1], files)
        try:
            async with self._turn:
                await self._turn.wait_for(lambda: self._playing < self._slots)
                self._playing += 1
            try:
                assert self.runner is not None, "open_run() comes before rollouts"
                return await self.runner.rollout(self._task(fields, directory, problem), sample)
            finally:
                async with self._turn:
                    self._playing -= 1
                    self._turn.notify()
        finally:
            self._release(files)

    async def set_slots(self, slots: int) -> None:
        """Play up to `slots` rollouts at once from now on (another worker was lost)."""
        async with self._turn:
            self._slots = slots
            self._turn.notify_all()

    async def _validate(self, payload):
        from rlforge.verify.validate import ValidationResult, validate_task

        path, given, files = payload  # absolute path, the caller's spelling of it, files
        directory, problem = await self._task_dir(path, files)
        try:
            if problem:
                raise UserError(problem)
            result = await validate_task(directory, self.task_runner, self.scratch)
        except UserError as exc:  # as validate_many records a directory that is no task
            result = ValidationResult(Path(given).name, given, "?", False,
                                      reason=str(exc).replace(str(directory), given))
        finally:
            self._release(files)
        return result

    async def _repair(self, payload):
        snap, settings, requirements, rules = payload
        return await self.checker.run_check(snap, settings, requirements, rules)

    # --- task directories ----------------------------------------------------------------

    def _task(self, fields: tuple, directory: Path, problem: str | None) -> Task:
        task_id, _, generator, version, verifier, kind, split = fields
        task = Task(directory, task_id, generator, version, verifier, kind, split)
        if problem:
            return UnavailableTask(task, problem)
        key = (task_id, str(directory))
        cached = self._tasks.get(key)
        if cached is None:
            self._tasks[key] = cached = task
            if len(self._tasks) > TASK_CACHE:
                self._tasks.popitem(last=False)
        else:
            self._tasks.move_to_end(key)
        return cached

    async def _task_dir(self, path: str, files: Any) -> tuple[Path, str | None]:
        """(directory, None), or (the driver's path, why the task cannot be had here)."""
        if files is None or self.use_paths:
            return Path(path), None
        if isinstance(files, str):
            return Path(path), files
        key = files.hex()
        self._uses[key] += 1
        if key in self._unpacked:
            self._unpacked.move_to_end(key)
            return self._unpacked[key][0], None
        if key not in self._unpacking:
            self._unpacking[key] = asyncio.ensure_future(self._unpack(key, path, files))
        try:
            return await asyncio.shield(self._unpacking[key]), None
        except Exception as exc:
            return Path(path), f"{path}: its copy from the driver could not be unpacked ({exc})"

    async def _unpack(self, key: str, path: str, files: Any) -> Path:
        try:
            assert self.scratch is not None, "hello() comes first"
            data = await files
            dest = self.scratch / "tasks" / key[:24] / Path(path).name
            await asyncio.to_thread(unpack_task, data, dest)
            self._unpacked[key] = (dest, len(data))
            self._unpacked_bytes += len(data)
            return dest
        finally:
            del self._unpacking[key]

    def _release(self, files: Any) -> None:
        if files is None or isinstance(files, str) or self.use_paths:
            return
        key = files.hex()
        self._uses[key] -= 1
        if self._uses[key] <= 0:
            del self._uses[key]
        while self._unpacked_bytes > UNPACKED_BYTES:
            idle = next((k for k in self._unpacked if k not in self._uses), None)
            if idle is None:
                break
            directory, size = self._unpacked.pop(idle)
            self._unpacked_bytes -= size
            shutil.rmtree(directory.parent, ignore_errors=True)

    # --- the end -----------------------------------------------------------------------

    async def close(self) -> None:
        """Stop what is running, close the client and the pool, remove the scratch."""
        for job in list(self._jobs):
            job.cancel()
        await asyncio.gather(*list(self._jobs), return_exceptions=True)
        if self.client is not None:
            await self.client.close()
        if self.checker is not None:
            self.checker.close()
        if self.pool is not None:
            await asyncio.to_thread(self.pool.close)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def unpack_task(data: bytes, dest: Path) -> Path:
    """Unpack `rlforge.execution.ray.cluster.pack_task` bytes into the new directory `dest`
    (nothing lands outside it)."""
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(dest, filter="tar")
    return dest
