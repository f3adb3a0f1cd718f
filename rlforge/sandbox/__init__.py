"""bubblewrap isolation for every piece of untrusted code rlforge runs.

Verifiers run the policy's patches, scripts and shell commands. A model under RL will use
any hole that raises its reward, and a deployment runs that code next to the company's data
and API keys. This package runs such code with no network, a read-only system, the task's
directories at Harbor's paths, a clean environment, resource limits, a whole-tree kill on
timeout and capped output — and proves it (`rlforge sandbox check`).

The API other modules use:

    from rlforge.sandbox import SandboxSpec, run, SandboxPool, prepare_env, read_file

    spec = SandboxSpec(workspace=ws, tests=task / "tests", logs=logs, timeout_sec=120,
                       venv=prepare_env(["pytest==8.3.3"], default_cache_dir(settings)))
    result = run(["bash", "/tests/test.sh"], spec)       # or: await pool.run(...)
    if result.failure:          # the sandbox broke: an infrastructure error
        ...
    reward = json.loads(read_file(logs, "reward.json"))  # never follows planted links

`run` raises `SandboxUnavailable` (a UserError with the fix in its message) when
bubblewrap is missing or cannot build namespaces; it never falls back to running
unsandboxed. Only `SandboxSpec(mode="none")` does that, and it warns on every run.
"""

from rlforge.sandbox.check import Check, run_checks
from rlforge.sandbox.envs import prepare_env
from rlforge.sandbox.files import CopyReport, copy_tree, read_file
from rlforge.sandbox.pool import SandboxPool, default_workers
from rlforge.sandbox.runner import ensure_available, run
from rlforge.sandbox.support import HostSupport
from rlforge.sandbox.spec import (LOGS_MOUNT, TESTS_MOUNT, VENV_MOUNT, WORKSPACE_MOUNT,
                                  FailureReason, SandboxFailure, SandboxResult, SandboxSpec,
                                  sandbox_settings, settings_with_mode, spec_from_settings,
                                  spec_of)

__all__ = [
    "Check", "CopyReport", "FailureReason", "HostSupport", "LOGS_MOUNT", "SandboxFailure",
    "SandboxPool", "SandboxResult", "SandboxSpec", "TESTS_MOUNT", "VENV_MOUNT",
    "WORKSPACE_MOUNT", "copy_tree", "default_workers", "ensure_available", "prepare_env",
    "read_file", "run", "run_checks", "sandbox_settings", "settings_with_mode",
    "spec_from_settings", "spec_of",
]
