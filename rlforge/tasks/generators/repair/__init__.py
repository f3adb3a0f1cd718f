"""Code-repair tasks from commits: the parts behind the `commits.repair` generator.

- `options`: settings (rlforge.toml `[tasks.repair]`, per-repository test command);
- `gitrepo`: a commit read from its repository (parent tree, hidden test changes, gold diff);
- `envs`: the repository's test dependencies, found in its dependency files;
- `checks`: build-time fail-to-pass / pass-to-pass validation in the sandbox, cached in DuckDB;
- `adversarial`: submissions that must score 0;
- `score`: scoring a workspace or a diff, the API `rlforge run` calls.

The verifier itself is `rlforge/verify/standalone/repair.py` and the modules it imports
(standard library only).
"""
