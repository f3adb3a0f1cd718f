"""What tests/test.sh runs, for every entry: keep the verifier to itself, get the reward, write it.

In rlforge's environments the scorer outside the sandbox test.sh runs in gives the reward
(rlforge.verify.scorer); elsewhere (Harbor's own container) the entry scores here, with
the tests made readable by root alone and every other process of the container stopped.
Code the policy wrote never runs in this process: see `policy_code`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.entry
    from .policy_code import SandboxBroken, stop_other_processes
    from .rewards import REWARD_PREFIX, claim_logs, unscorable_reward, write_reward
else:  # tests/rlforge_entry.py: its siblings by their copied names
    from rlforge_policy_code import SandboxBroken, stop_other_processes
    from rlforge_rewards import REWARD_PREFIX, claim_logs, unscorable_reward, write_reward


def protect_inputs(tests_dir):
    """As root, make the tests directory readable by root alone before policy code runs."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        try:
            os.chmod(tests_dir, 0o700)
        except OSError:
            pass


def harden():
    """What every verifier does first: stop what else runs in the container, refuse to be
    traced, ignore signals, and keep the tests to itself."""
    _ignore_signals()
    _no_core_access()
    stop_other_processes()


def _no_core_access():
    """Make this process non-dumpable so code of the same uid cannot trace it or reach its
    file descriptors through /proc."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def _ignore_signals():
    """Survive signals from code of the same uid: ignore every catchable one we can."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                signal.SIGUSR2, signal.SIGPIPE, signal.SIGALRM, signal.SIGTSTP, signal.SIGTTIN,
                signal.SIGTTOU, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGVTALRM,
                signal.SIGPROF):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError):
            pass


#: Set by rlforge's environments (Harbor's, verifiers') in the trusted sandbox test.sh runs
#: in: the socket of the scorer that scores outside it (rlforge.verify.scorer).
SCORER_ENV = "RLFORGE_SCORER"
SCORER_ANSWER_LIMIT = 64 * 1024 * 1024


def ask_scorer(address):
    """The reward from the scorer this verifier's environment runs outside its sandbox;
    SandboxBroken when there is none to give (the scorer could not score at all)."""
    import socket

    data = b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(address)
            conn.sendall(b'{"score": "/app"}\n')
            while len(data) <= SCORER_ANSWER_LIMIT:
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
    except OSError as exc:
        raise SandboxBroken(f"the scorer at {address} cannot be reached: {exc}") from None
    try:
        answer = json.loads(data)
    except ValueError:
        raise SandboxBroken(f"the scorer at {address} gave no answer") from None
    if not isinstance(answer, dict) or "result" not in answer:
        raise SandboxBroken(str(answer.get("error") if isinstance(answer, dict) else answer))
    return answer["result"]


def verifier_main(ref_path, logs_dir, score_here):
    """What test.sh runs: the reward of the submission in /app, written to `logs_dir`.

    In rlforge's environments the scorer outside this sandbox gives it; elsewhere
    `score_here(ref, tests_dir)` computes it with the tests made readable by root alone.
    Exits 2, writing no reward, when no reward can be given without running policy code
    beside the scorer, or the sandbox for it could not start (an infrastructure failure).
    """
    harden()
    try:
        claim_logs(logs_dir)  # before any policy code runs: nothing of its can be the reward
    except OSError as exc:
        sys.stderr.write(f"rlforge verifier: {logs_dir}: {exc}\n")
    address = os.environ.get(SCORER_ENV)
    try:
        if address:
            result = ask_scorer(address)
        else:
            with open(ref_path, encoding="utf-8") as fh:  # unreadable: the task is broken
                ref = json.load(fh)
            tests_dir = os.path.dirname(os.path.abspath(ref_path))
            protect_inputs(tests_dir)
            try:
                result = score_here(ref, tests_dir)
            except SandboxBroken:
                raise
            except Exception as exc:  # raised on what the policy left: its fail, with a reward
                sys.stderr.write(f"rlforge verifier: {type(exc).__name__}: {exc}\n")
                result = unscorable_reward(f"{type(exc).__name__}: {exc}"[:300])
    except SandboxBroken as exc:
        sys.stderr.write(f"rlforge verifier: {exc}\n")
        return 2
    write_reward(result, logs_dir)
    sys.stdout.write(REWARD_PREFIX + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0
