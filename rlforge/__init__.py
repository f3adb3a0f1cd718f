"""rlforge: turn a company's own records into verifiable RL tasks and run models on them."""

import os

__version__ = "0.1.0"

# rlforge calls no BLAS routine, but pyarrow imports numpy, whose OpenBLAS starts a worker
# thread per extra core that spins for its first fraction of a second: ~0.15 CPU-seconds of
# a 2-core machine taken from the ingest that imported pyarrow. With one thread OpenBLAS
# starts no workers. A value set by the user wins; sandboxed code gets a clean environment.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
