#!/usr/bin/env bash
# Static checks: ruff, with the rules in pyproject.toml ([tool.ruff]). Extra arguments go
# to `ruff check` (e.g. --fix). scripts/test.sh runs this before the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
ruff=.venv/bin/ruff
if [ ! -x "$ruff" ]; then
    echo "check.sh: $ruff is missing; ./scripts/setup.sh installs it (the dev extra)" >&2
    exit 1
fi
"$ruff" check "$@" .
