"""Rollouts: the environment loop and the run driver (`rlforge run`, `--resume`, `rescore`).

The modules, in the order a run meets them:

- `environment`: the loop around one task — reset, the policy's turns, commands in the
  sandbox, the submission, the verifier (`Environment`; `rlforge.envs` wraps it for
  trainers, so both walk the same code);
- `submission`: in-process scoring that agrees with `tests/test.sh`, and workspace
  submissions stored so they can be re-scored;
- `schedule`: per-generator quotas and longest-first ordering;
- `driver`: one rollout against the policy endpoint (`RolloutRunner`) and many at once
  (`drive`), each record stored as it ends;
- `store`: `runs/<run_id>/` (config.json, rollouts.jsonl, summary.json, groups.jsonl) and
  the `runs` / `rollouts` tables;
- `session`: the library calls behind `rlforge run` (`start`, `resume`), the summary and
  the CI gate; `rescore`: `rlforge rescore`.
"""

from rlforge.records import EnvOptions
from rlforge.run.driver import Progress, RolloutRunner, sample_seed
from rlforge.run.environment import Environment, InfraError
from rlforge.run.rescore import rescore
from rlforge.run.session import RunReport, gate, resume, start

__all__ = ["EnvOptions", "Environment", "InfraError", "Progress", "RolloutRunner", "RunReport",
           "gate", "rescore", "resume", "sample_seed", "start"]
