"""The `Backend` protocol: everything a backend does, in one face.

Each layer that runs sandboxed work states what it needs of a backend, next to the code
that calls it: `rlforge.run.session.RolloutBackend` (rollouts), `rlforge.verify.validate.
ValidationBackend` (task validation), `rlforge.tasks.generators.repair.checks.CheckerBackend` (the
commits.repair build-time checks). A backend of `rlforge.execution.BACKENDS` does all
three; those layers never import this package.
"""

from __future__ import annotations

from typing import Protocol

from rlforge.run.session import RolloutBackend
from rlforge.tasks.generators.repair.checks import CheckerBackend
from rlforge.verify.validate import ValidationBackend


class Backend(RolloutBackend, ValidationBackend, CheckerBackend, Protocol):
    """Runs the sandboxed work of rlforge somewhere; see the module docstring."""

    name: str
