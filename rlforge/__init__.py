"""rlforge: turn a company's own records into verifiable RL tasks and run models on them."""

import os

__version__ = "0.1.0"

# rlforge calls no BLAS routine, but pyarrow imports numpy, whose OpenBLAS starts a worker
# thread per extra core that spins for its first fraction of a second: ~0.15 CPU-seconds of
# a 2-core machine taken from the ingest that imported pyarrow. With one thread OpenBLAS
# starts no workers. A value set by the user wins; sandboxed code gets a clean environment.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# polars allocates through jemalloc, with four arenas per core by default. A log ingest
# allocates a chunk's memory on one thread and frees it on another (parser, main thread,
# polars' pool), and each arena grows to its own peak; with one shared arena each thread
# reuses what the others freed. Measured on 2 cores, BGL 1M: page faults -12% and CPU
# -0.05 to -0.07 s (3-4%) in each of four batches of runs; wall time -6% to +2%, within
# the machine's noise; no change on a polars-heavy group-by/join. On more than 4 cores
# polars keeps its own arenas, where one would make its threads queue for it. Read when
# polars is imported; a value the user set is kept (polars adds its settings in front).
if (os.cpu_count() or 1) <= 4:
    os.environ.setdefault("_RJEM_MALLOC_CONF", "narenas:1")
