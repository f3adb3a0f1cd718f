"""Process-wide tuning for an `rlforge` command, applied before pyarrow or polars load.

It lives with the command line, not in `import rlforge`: a program that imports a part of
rlforge (a trainer importing `rlforge.envs`, a notebook) keeps its own environment, while
every `rlforge` command (the console script and `python -m rlforge`) gets the settings
below. Each only sets a default: a value the user set wins. Sandboxed code gets a clean
environment either way.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping


def tune_environment(environ: MutableMapping[str, str] | None = None,
                     cpus: int | None = None) -> None:
    """Set the thread and allocator defaults an rlforge command runs best with.

    OpenBLAS: rlforge calls no BLAS routine, but pyarrow imports numpy, whose OpenBLAS
    starts a worker thread per extra core that spins for its first fraction of a second:
    ~0.15 CPU-seconds of a 2-core machine taken from the ingest that imported pyarrow. With
    one thread OpenBLAS starts no workers.

    jemalloc: polars allocates through jemalloc, with four arenas per core by default. A
    log ingest allocates a chunk's memory on one thread and frees it on another (parser,
    main thread, polars' pool), and each arena grows to its own peak; with one shared arena
    each thread reuses what the others freed. Measured on 2 cores, BGL 1M: page faults -12%
    and CPU -0.05 to -0.07 s (3-4%) in each of four batches of runs; wall time -6% to +2%,
    within the machine's noise; no change on a polars-heavy group-by/join. On more than 4
    cores polars keeps its own arenas, where one would make its threads queue for it. The
    variable is read when polars is loaded (polars adds its own settings in front).

    Args:
        environ: the environment to change (default: this process's).
        cpus: the core count to decide by (default: `os.cpu_count()`).
    """
    env = os.environ if environ is None else environ
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    if (cpus if cpus is not None else os.cpu_count() or 1) <= 4:
        env.setdefault("_RJEM_MALLOC_CONF", "narenas:1")
