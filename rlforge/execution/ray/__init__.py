"""Scale-out on Ray: rollouts, validation and build-time checks in workers across nodes.

RL trainers (veRL, NeMo-RL, SkyRL) already run on Ray, so rlforge scales out on the same
engine instead of a cluster of its own. With `executor = "ray"` (`--executor ray`) the
work that runs untrusted code moves into one rlforge worker per Ray node — a Ray actor
that keeps that node's sandbox pool, its prepared environments and its copies of task
directories — while the driver (the `rlforge` process) keeps everything that is written:
the scheduler, the single append-only rollouts.jsonl, DuckDB, resume and rescore.

- `backend`: `RayBackend`, the `ray` row of `rlforge.execution.BACKENDS`;
- `cluster`: connecting (a private loopback-only instance, or a cluster's address), one
  worker per node, and how task directories reach them (a shared path, or a copy through
  Ray's object store);
- `worker`: the actor itself (`NodeWorker`), run on every node;
- `dispatch`: hands items to workers in batches, collects their results, moves the work
  of a worker that died to the others;
- `rollouts`: `rlforge run` on Ray (a runner with the local runner's `rollout` face, so the
  run driver is the same code);
- `validation`: `rlforge validate`, build-tasks' validation and the commits.repair
  fail-to-pass / pass-to-pass check on Ray.

Ray is an optional dependency (`pip install 'rlforge[ray]'`); nothing here is imported
unless a command's executor is `ray`.
"""
