"""rlforge: turn a company's own records into verifiable RL tasks and run models on them.

Importing rlforge changes nothing in the process; the `rlforge` command's own tuning
(threads, allocator) is in `rlforge.cli.tuning`.
"""

__version__ = "0.1.0"
