"""Connecting to Ray, one rlforge worker per node, and how task directories reach them.

**Where Ray is** (`ray.address`, `--ray-address`):

- empty (the default): a private Ray instance started for this command on this machine
  and stopped at its end. Every Ray process of it listens on 127.0.0.1 only: Ray keeps a
  single-machine instance on the loopback interface when `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`
  is in the environment before Ray is imported, which rlforge sets for it;
- `HOST:PORT`: the head (GCS) of a running cluster (`ray start --head --port PORT`); a
  loopback host gets the same loopback-only treatment, so a cluster started on one
  machine with that variable (see the README) is reachable at `127.0.0.1:PORT`;
- `auto`: Ray's own discovery (`RAY_ADDRESS`, or the cluster `ray start` runs here).

A process that is already connected (a trainer that called `ray.init`) is used as it is,
and left connected.

**Workers.** Every alive node gets one `NodeWorker` actor (or, when some nodes offer the
custom resource `rlforge` — `ray start --resources '{"rlforge": 1}'` — only those do). It
takes no Ray CPU (its sandboxes are its own processes, bounded by `sandbox.workers` per
node), checks that the node runs the same rlforge version, that it can build sandboxes
when the work needs them, and whether it sees the driver's task directories.

**Task directories** reach a worker by path when its node has them — the same directory
on a shared filesystem (NFS, a mounted bucket) or the same machine; the worker checks a
few task.toml files byte for byte before relying on it. Otherwise (or always, with
`ray.task_files = "ship"`) the driver packs each task directory (tar.gz) when its first
item is dispatched, puts it into Ray's object store once, and each node unpacks it once
into its worker's scratch directory. Limits: a packed task may be at most
`MAX_SHIPPED_BYTES` (512 MB); the driver keeps at most `SHIP_CACHE_BYTES` (1 GB) of packed
tasks referenced at a time (a task's samples are dispatched together, so older ones are
done); the object store must have room for them (Ray's default is 30% of a node's memory,
spilling to disk beyond it).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import logging
import os
import socket
import sys
import tarfile
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from rlforge import __version__
from rlforge.errors import UserError

if TYPE_CHECKING:
    from rlforge.config import Settings

logger = logging.getLogger("rlforge.execution.ray")

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
INSTALL_HINT = "pip install 'rlforge[ray]'"
NODE_RESOURCE = "rlforge"
START_TIMEOUT = 180.0  # seconds for every worker to start and answer
MAX_SHIPPED_BYTES = 512 * 1024 * 1024
SHIP_CACHE_BYTES = 1024 * 1024 * 1024
PROBES = 3  # task.toml files a worker compares to decide it sees the task directories


@dataclass(frozen=True)
class RayOptions:
    """What a command needs to run its work on Ray (the `ray.*` settings)."""

    address: str = ""
    task_files: str = "auto"
    cache_dir: str | None = None  # the driver's cache_dir when set explicitly, else per node

    @classmethod
    def from_settings(cls, settings: Settings) -> "RayOptions":
        cache_dir = settings.general.cache_dir
        explicit = "cache_dir" in settings.general.given
        return cls(settings.ray.address, settings.ray.task_files,
                   str(Path(cache_dir).resolve()) if cache_dir and explicit else None)


# --- connecting --------------------------------------------------------------------------

def is_loopback(address: str) -> bool:
    """Whether a Ray address names this machine's loopback interface (empty: a private
    instance, which is kept on loopback too)."""
    if not address:
        return True
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def import_ray(loopback: bool, private: bool = False):
    """`import ray`, first asking Ray to stay on 127.0.0.1 when `loopback`, and for a
    `private` instance to use token auth as Ray does for a local instance anyway, without
    its warning (both variables only work if set before Ray's first import)."""
    if "ray" not in sys.modules:
        if loopback:
            os.environ.setdefault(LOOPBACK_ENV, "0")
        if private:
            os.environ.setdefault("RAY_AUTH_MODE", "token")
    try:
        import ray
    except ImportError:
        raise UserError(f"executor \"ray\" needs Ray: {INSTALL_HINT}") from None
    if loopback and not ray.is_initialized():
        from ray._private import ray_constants

        if ray_constants.ENABLE_RAY_CLUSTER:
            raise UserError(f"Ray was imported in this process before rlforge could keep it on "
                            f"127.0.0.1; set {LOOPBACK_ENV}=0 in the environment (or give "
                            "--ray-address of a cluster on a private interface)")
    return ray


def first_line(exc: BaseException) -> str:
    """An exception's message in one line (Ray's come with tracebacks and hints)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _check_reachable(address: str) -> None:
    """A clear error at once when nothing listens at HOST:PORT (Ray itself retries for
    minutes)."""
    if "://" in address or address == "auto" or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            pass
    except (OSError, ValueError) as exc:
        raise UserError(f"no Ray cluster answers at {address} ({exc}); start one with "
                        "`ray start --head` there, or leave ray.address empty for a private "
                        "instance on this machine") from None


@contextlib.contextmanager
def connected(address: str) -> Iterator[Any]:
    """The `ray` module, connected to `address` (see the module docstring) for the block.

    Raises:
        UserError: Ray is not installed, or the cluster cannot be reached.
    """
    already = sys.modules.get("ray")
    if already is not None and already.is_initialized():
        yield already
        return
    ray = import_ray(is_loopback(address), private=not address)
    options = dict(logging_level=logging.WARNING, log_to_driver=False)
    if address:
        _check_reachable(address)
        try:
            ray.init(address=address, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UserError(f"cannot connect to the Ray cluster at {address}: "
                            f"{first_line(exc)}") from None
    else:
        try:
            ray.init(address="local", include_dashboard=False, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UserError(f"cannot start a private Ray instance on this machine: "
                            f"{first_line(exc)}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


# --- workers -----------------------------------------------------------------------------

@dataclass(eq=False)
class Worker:
    """The driver's view of one node's `NodeWorker`."""

    handle: Any
    node_id: str
    host: str
    sandboxes: int
    cpus: int
    sees_tasks: bool
    alive: bool = True
    done: int = 0  # items it finished (for reports and tests)

    @property
    def name(self) -> str:
        return f"{self.host} ({self.node_id[:8]})"


def worker_nodes(ray) -> list[dict[str, Any]]:
    """The alive nodes that get a worker (those offering `rlforge` if any do)."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    marked = [n for n in nodes if n.get("Resources", {}).get(NODE_RESOURCE)]
    return marked or nodes


def probe_files(paths: list[Path]) -> list[tuple[str, str]]:
    """(task.toml path, sha256 of its bytes) of a few task directories, for workers to
    compare with what they see at the same paths."""
    picks = paths if len(paths) <= PROBES else [paths[0], paths[len(paths) // 2], paths[-1]]
    out = []
    for p in picks:
        toml = Path(p) / "task.toml"
        try:
            out.append((str(toml.resolve()), hashlib.sha256(toml.read_bytes()).hexdigest()))
        except OSError:
            continue
    return out


async def start_workers(ray, *, sandbox_workers: int, sandbox_mode: str, needs_sandbox: bool,
                        cache_dir: str | None, probe: list[tuple[str, str]],
                        task_files: str = "auto",
                        sandbox: dict[str, Any] | None = None) -> list[Worker]:
    """One `NodeWorker` per node, started and checked; a UserError naming the node if any
    cannot serve (another rlforge version, no sandbox, did not start). `sandbox`: the
    driver's sandbox settings (`rlforge.sandbox.sandbox_settings`) for every sandbox of
    the workers; None: the built-in defaults."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from rlforge.execution.ray.worker import NodeWorker

    nodes = worker_nodes(ray)
    if not nodes:
        raise UserError("the Ray cluster has no alive node")
    actor = ray.remote(NodeWorker)
    handles = [actor.options(num_cpus=0, max_concurrency=1000, max_restarts=0,
                             scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
                             ).remote() for n in nodes]
    hello = {"version": __version__, "sandbox_workers": sandbox_workers,
             "sandbox_mode": sandbox_mode, "needs_sandbox": needs_sandbox,
             "cache_dir": cache_dir, "probe": probe, "task_files": task_files,
             "sandbox": sandbox}
    try:
        answers = await asyncio.wait_for(
            asyncio.gather(*(h.hello.remote(hello) for h in handles), return_exceptions=True),
            START_TIMEOUT)
    except TimeoutError:
        answers = [TimeoutError(f"no answer within {START_TIMEOUT:g}s")] * len(handles)
    workers, problems = [], []
    for node, handle, answer in zip(nodes, handles, answers):
        host = node.get("NodeManagerAddress", "?")
        if isinstance(answer, BaseException):
            problems.append(f"{host}: the rlforge worker did not start ({first_line(answer)})")
        elif answer.get("error"):
            problems.append(f"{host}: {answer['error']}")
        else:
            workers.append(Worker(handle, node["NodeID"], host, answer["sandboxes"],
                                  answer["cpus"], answer["sees_tasks"]))
    if problems:
        kill_workers(ray, handles)
        raise UserError("Ray node " + "; node ".join(problems))
    return workers


async def close_workers(ray, workers: list[Worker], timeout: float = 30.0) -> None:
    """Let every worker close its clients and pools and remove its scratch, then end it."""
    alive = [w for w in workers if w.alive]
    try:
        await asyncio.wait_for(asyncio.gather(*(w.handle.close.remote() for w in alive),
                                              return_exceptions=True), timeout)
    except TimeoutError:
        logger.warning("Ray workers did not close within %gs; ending them", timeout)
    kill_workers(ray, [w.handle for w in workers])


def kill_workers(ray, handles: list[Any]) -> None:
    for handle in handles:
        with contextlib.suppress(Exception):
            ray.kill(handle, no_restart=True)


def describe_cluster(options: RayOptions, *, sandbox_workers: int = 0, sandbox_mode: str = "bwrap",
                     tasks_dir: Path | None = None) -> list[dict[str, Any]]:
    """Start a worker on every node as a run would (same checks: rlforge version, sandboxes)
    and say what each offers; with `tasks_dir`, whether it sees those task directories."""
    if tasks_dir and not Path(tasks_dir).is_dir():
        raise UserError(f"{tasks_dir}: no such directory")
    paths = sorted(p for p in Path(tasks_dir).iterdir() if (p / "task.toml").is_file()) \
        if tasks_dir else []
    if tasks_dir and not paths:
        raise UserError(f"{tasks_dir}: no task directories (folders with a task.toml) found")

    async def look(ray) -> list[dict[str, Any]]:
        workers = await start_workers(ray, sandbox_workers=sandbox_workers,
                                      sandbox_mode=sandbox_mode,
                                      needs_sandbox=sandbox_mode == "bwrap", cache_dir=None,
                                      probe=probe_files([p.resolve() for p in paths]))
        try:
            return [{"host": w.host, "node_id": w.node_id, "cpus": w.cpus,
                     "sandboxes": w.sandboxes, "sees_tasks": w.sees_tasks if paths else None}
                    for w in workers]
        finally:
            await close_workers(ray, workers)

    with connected(options.address) as ray:
        return asyncio.run(look(ray))


# --- task directories --------------------------------------------------------------------

def pack_task(path: Path) -> bytes:
    """A task directory as tar.gz bytes (links kept as links)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        tar.add(str(path), arcname=".")
    return buf.getvalue()


@dataclass
class TaskFiles:
    """The driver's side of how task directories reach workers (see the module docstring).

    `ref(path)` is what goes with an item: None when every worker reads the path itself
    (or there is no directory to ship), else an object-store reference to the packed
    directory (a worker that sees the path ignores it without fetching), or a string
    saying why the task cannot be shipped.
    """

    ray: Any
    ship: bool
    cache_bytes: int = SHIP_CACHE_BYTES
    max_bytes: int = MAX_SHIPPED_BYTES
    shipped: int = 0  # tasks packed and put so far
    _refs: OrderedDict = field(default_factory=OrderedDict)  # path -> (ref, size)
    _size: int = 0
    _busy: dict = field(default_factory=dict)  # path -> future of the ref being made

    @classmethod
    def for_workers(cls, ray, workers: list[Worker], mode: str) -> "TaskFiles":
        return cls(ray, ship=mode == "ship" or not all(w.sees_tasks for w in workers))

    async def ref(self, path: Path) -> Any:
        if not self.ship:
            return None
        key = str(path)
        if key in self._refs:
            self._refs.move_to_end(key)
            return self._refs[key][0]
        if key in self._busy:
            return await asyncio.shield(self._busy[key])
        future = asyncio.get_running_loop().create_future()
        self._busy[key] = future
        try:
            made = await asyncio.to_thread(self._put, path)
            if made is not None and not isinstance(made, str):
                ref, size = made
                self._refs[key] = (ref, size)
                self._size += size
                self.shipped += 1
                while self._size > self.cache_bytes and len(self._refs) > 1:
                    _, (_, dropped) = self._refs.popitem(last=False)
                    self._size -= dropped
                made = ref
            future.set_result(made)
            return made
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters get it through shield
            raise
        finally:
            del self._busy[key]

    def _put(self, path: Path):
        if not path.is_dir():  # nothing to ship: the worker reports it as a local run would
            return None
        try:
            data = pack_task(path)
        except OSError as exc:
            return f"{path}: cannot pack the task directory to ship it to Ray workers ({exc})"
        if len(data) > self.max_bytes:
            return (f"{path}: the task directory is {len(data) / 1e6:,.0f} MB packed, more than "
                    f"the {self.max_bytes / 1e6:,.0f} MB shipped through Ray's object store; "
                    "put the tasks on a path every node sees (ray.task_files = \"auto\")")
        return self.ray.put(data), len(data)
