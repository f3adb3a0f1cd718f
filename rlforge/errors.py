"""One exception hierarchy for rlforge.

A `UserError` is something the user can fix (bad input, missing file, wrong flag value):
the CLI prints its message on one line and exits 1. Anything that is not an
`RlforgeError` is a bug and keeps its traceback.
"""

from __future__ import annotations


class RlforgeError(Exception):
    """Base class of every error rlforge raises on purpose."""

    exit_code = 1


class UserError(RlforgeError):
    """Bad input or configuration; the message says what is wrong and how to fix it."""


class ConfigError(UserError):
    """A configuration value is missing or invalid."""


class InputFileError(UserError):
    """An input file cannot be read at all (binary, truncated, not the declared format)."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class SandboxUnavailable(UserError):
    """The sandbox cannot be set up; untrusted code will not run."""


class UnknownName(UserError):
    """A registry lookup failed; the message lists the valid names."""

    def __init__(self, kind: str, name: str, valid: list[str]):
        self.name = name
        self.valid = sorted(valid)
        super().__init__(f"unknown {kind} {name!r}; valid: {', '.join(self.valid) or '(none)'}")


class PolicyError(RlforgeError):
    """The policy endpoint failed; recorded on the rollout as an infrastructure error."""


class GateFailed(RlforgeError):
    """A CI gate (pass rate, infra error rate) was not met; carries its own exit code."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code
