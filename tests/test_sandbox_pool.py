"""SandboxPool: bounded concurrency from asyncio, and cancellation that kills the sandbox."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest

from rlforge.sandbox import SandboxPool, SandboxSpec, default_workers

pytestmark = pytest.mark.sandbox


def test_default_is_two_per_cpu():
    assert default_workers() == 2 * len(os.sched_getaffinity(0))
    assert SandboxPool().workers == default_workers()
    with pytest.raises(ValueError):
        SandboxPool(-1)


def test_never_more_than_workers_at_once_and_results_in_order(tmp_path):
    # Each run records its start and end with the shared clock; overlaps are counted after.
    async def main():
        async with SandboxPool(workers=2) as pool:
            spec = SandboxSpec(workspace=tmp_path, timeout_sec=20)
            script = "date +%s.%N >> /app/spans.$0; sleep 0.3; date +%s.%N >> /app/spans.$0; echo $0"
            return await asyncio.gather(*(pool.run(["sh", "-c", script, str(i)], spec) for i in range(6)))

    results = asyncio.run(main())
    assert [r.stdout_text.strip() for r in results] == [str(i) for i in range(6)]
    spans = [tuple(map(float, (tmp_path / f"spans.{i}").read_text().split())) for i in range(6)]
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    assert peak == 2


def test_cancelling_the_awaiting_task_kills_the_sandbox(tmp_path):
    marker = f"8{uuid.uuid4().int % 10**8}"

    def sleepers() -> list[int]:
        return [int(p) for p in os.listdir("/proc") if p.isdigit()
                and _cmdline(p) == f"sleep\0{marker}\0".encode()]

    async def main():
        pool = SandboxPool(workers=1)
        task = asyncio.ensure_future(pool.run(["sh", "-c", f"sleep {marker} & sleep {marker}"],
                                              SandboxSpec(timeout_sec=60)))
        for _ in range(100):
            await asyncio.sleep(0.05)
            if len(sleepers()) == 2:
                break
        assert len(sleepers()) == 2
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sleepers() == []  # killed before the cancellation reached us
        pool.close()

    asyncio.run(main())


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
