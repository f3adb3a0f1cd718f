#!/usr/bin/env bash
# Static checks: ruff, with the rules in pyproject.toml ([tool.ruff]), then mypy on the
# package ([tool.mypy]), then pytest's collection (an import error in one test module
# stops the whole run); any failing fails the check. Extra arguments go to
# `ruff check` (e.g. --fix). scripts/test.sh runs this before the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
ruff=.venv/bin/ruff
mypy=.venv/bin/mypy
for tool in "$ruff" "$mypy"; do
    if [ ! -x "$tool" ]; then
        echo "check.sh: $tool is missing; ./scripts/setup.sh installs it (the dev extra)" >&2
        exit 1
    fi
done
"$ruff" check "$@" .
"$mypy"
"$(dirname "$mypy")/python" -m pytest --collect-only -q tests >/dev/null \
    || { echo "check.sh: pytest cannot collect the tests; run: .venv/bin/python -m pytest --collect-only tests" >&2; exit 1; }
