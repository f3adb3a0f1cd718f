"""The scorer a sandboxed `tests/test.sh` asks, for environments where every command is a
sandbox of one unprivileged uid.

Under Harbor with rlforge's environment (`rlforge.harbor`) and in verifiers' runtime
(`rlforge.verifiers_env`), test.sh runs in a sandbox like the agent's commands do. There
its verifier has no other uid to run policy code as, so scoring in place would run the
submitted program, or the repository's tests that import the patch, beside the reference
and the reward. Instead those environments run their trusted commands (Harbor's verifier
user `root`) in a sandbox of their own that alone sees /tests and /logs/verifier, with a
unix socket to a `Scorer` in their own process. The verifier there (`rlforge_verify.py`,
`rlforge_repair.py`) sends one request over the socket; the scorer scores the workspace on
the host exactly as `rlforge run` does (`rlforge.verify.boundary`: the reference read here,
policy code in fresh sandboxes that see neither /tests nor the reward, results over
channels this process owns) and answers with the reward, which the verifier writes.

Only the standard library and rlforge's sandbox and verifiers are used, as in the
environments that use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from rlforge.sandbox import SandboxPool
from rlforge.verify.standalone import entry, rewards
from rlforge.verify.boundary import (SandboxBroken, SandboxPolicy, TreeTooLarge, score_tree,
                                     too_large_reward)

#: Where the scorer's socket appears inside the trusted sandbox, and the variable naming it.
SOCKET_MOUNT = "/run/rlforge-scorer"
SOCKET_NAME = "scorer.sock"
SCORER_ENV = entry.SCORER_ENV
REQUEST_LIMIT = 65536

logger = logging.getLogger(__name__)


class Scorer:
    """Scores the submission in `workspace` against the task's tests in `tests`, once asked
    over its socket (see the module docstring).

    Args:
        tests: Host directory of the task's tests as uploaded (/tests inside).
        workspace: Host directory of the submission (/app inside).
        fields: SandboxSpec fields every launch of policy code gets (the task's venv,
            memory, CPUs), as the environment runs its commands with.
    """

    def __init__(self, tests: Path, workspace: Path, fields: Mapping[str, Any] | None = None):
        self.tests, self.workspace = tests, workspace
        self.fields = dict(fields or {})
        self.results: list[dict[str, Any]] = []

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[tuple[Path, dict[str, str]]]:
        """Serve while the block runs; yields (host directory to bind read-only at
        `SOCKET_MOUNT`, variables for the trusted command's environment)."""
        where = Path(tempfile.mkdtemp(prefix="rlforge-scorer-"))
        where.chmod(0o755)
        pool = SandboxPool(2)
        server = await asyncio.start_unix_server(
            lambda r, w: self._answer(r, w, pool), path=str(where / SOCKET_NAME),
            limit=REQUEST_LIMIT)
        (where / SOCKET_NAME).chmod(0o666)  # the trusted sandbox's uid connects to it
        try:
            yield where, {SCORER_ENV: f"{SOCKET_MOUNT}/{SOCKET_NAME}"}
        finally:
            server.close()
            await server.wait_closed()
            pool.close()
            shutil.rmtree(where, ignore_errors=True)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      pool: SandboxPool) -> None:
        try:
            with contextlib.suppress(ValueError, asyncio.IncompleteReadError):
                await reader.readline()  # the request says nothing this scorer does not know
            answer = await self.score(pool)
            writer.write(json.dumps(answer, sort_keys=True).encode() + b"\n")
            await writer.drain()
        finally:
            writer.close()

    async def score(self, pool: SandboxPool) -> dict[str, Any]:
        """{"result": reward} or {"error": why no reward can be given (infrastructure)}."""
        try:
            reference = json.loads((self.tests / "reference.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return {"error": f"the task's tests/reference.json cannot be read: {exc}"}
        policy = SandboxPolicy(pool, asyncio.get_running_loop(), "bwrap", self.fields)
        try:
            result = await asyncio.to_thread(score_tree, self.tests, reference, self.workspace,
                                             policy)
        except TreeTooLarge as exc:  # the agent's commands left it so: the policy's fail
            result = too_large_reward(f"the workspace does not fit the verifier's sandbox: {exc}")
        except SandboxBroken as exc:
            return {"error": str(exc)}
        except Exception as exc:  # raised on what the agent left: its fail, never no reward
            logger.exception("scoring %s raised; scored as the policy's fail", self.workspace)
            result = rewards.unscorable_reward(f"{type(exc).__name__}: {exc}"[:300])
        self.results.append(result)
        return {"result": result}


__all__ = ["SCORER_ENV", "SOCKET_MOUNT", "Scorer"]
