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


class DatabaseInUse(UserError):
    """Another process holds the database file (DuckDB allows one writer, and no reader
    beside it); the message says which process and since when."""


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


class PolicyRequestError(PolicyError):
    """One request to the policy endpoint failed for good (after any retries).

    `kind` names the failure for the rollout record; `infra` is True when the endpoint,
    not the model's own output, caused it, so a run counts the rollout as `invalid`
    rather than against the policy; `transient` when trying again may succeed (the
    client retries those). `status` is the HTTP status if one arrived,
    `retry_after` the server's requested wait in seconds, `attempts` how many requests
    were sent and `latency` the seconds spent including backoff.
    """

    kind = "policy"
    infra = True
    transient = False

    def __init__(self, message: str, *, status: int | None = None,
                 retry_after: float | None = None, attempts: int = 1, latency: float = 0.0,
                 transient: bool | None = None):
        super().__init__(message)
        self.message = message
        if transient is not None:
            self.transient = transient
        self.status = status
        self.retry_after = retry_after
        self.attempts = attempts
        self.latency = latency

    def __str__(self) -> str:
        tries = f" (after {self.attempts} attempts)" if self.attempts > 1 else ""
        return f"{self.kind}: {self.message}{tries}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status}, attempts={self.attempts})"

    def record(self) -> dict:
        """A JSON-ready description for the rollout record."""
        return {"type": self.kind, "infra": self.infra, "transient": self.transient,
                "status": self.status, "message": self.message, "attempts": self.attempts,
                "latency": round(self.latency, 6)}


class PolicyTimeout(PolicyRequestError):
    """No complete response within the request timeout (or the server answered 408)."""

    kind = "timeout"
    transient = True


class PolicyConnectionError(PolicyRequestError):
    """The connection failed: refused, reset, closed mid-response, TLS or DNS failure."""

    kind = "connection"
    transient = True


class PolicyRateLimited(PolicyRequestError):
    """The endpoint answered 429 and kept doing so."""

    kind = "rate_limited"
    transient = True


class PolicyServerError(PolicyRequestError):
    """The endpoint answered 5xx (or 409) and kept doing so."""

    kind = "server_error"
    transient = True


class PolicyBadRequest(PolicyRequestError):
    """The endpoint rejected the request (4xx other than 401/403/408/409/429)."""

    kind = "bad_request"


class PolicyContextLength(PolicyBadRequest):
    """The conversation no longer fits the model's context: the rollout's own doing."""

    kind = "context_length"
    infra = False


class PolicyAuthError(PolicyRequestError):
    """The endpoint refused the credentials (401/403)."""

    kind = "auth"


class PolicyMalformedResponse(PolicyRequestError):
    """The endpoint answered 2xx with a body that is not a chat completion."""

    kind = "malformed_response"


class LocalModelUnavailable(UserError):
    """The embedded local model cannot start (extra not installed, server failed to start)."""


class SubmissionTooLarge(RlforgeError):
    """What sandboxed code left behind is over a copy-out cap (bytes per file, total
    bytes, file count). A fail for the policy, never an infrastructure error."""

    reason = "submission too large"

    def __init__(self, detail: str):
        self.detail = detail
        super().__init__(f"{self.reason}: {detail}")


class SnapshotMismatch(UserError):
    """An episode snapshot cannot be restored as it was taken: a piece is missing or
    damaged, or the workspace rebuilt from it does not hash to the one snapshotted. The
    episode is never continued from a partial state: the run restarts it from its first
    turn (and records that); `rlforge.envs` raises this to the caller."""
