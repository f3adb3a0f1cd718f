"""rlforge: turn a company's own records into verifiable RL tasks and run models on them."""

__version__ = "0.1.0"
