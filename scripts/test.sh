#!/usr/bin/env bash
# Set up, then run the test suite. Extra arguments go to pytest; a first argument `fast`
# runs the fast subset (no slow, Ray, model or trainer tests).
# Set-up runs when CI=true, on a fresh checkout, or when what it installs changed
# (scripts/setup.sh, pyproject.toml, the constraints files); otherwise it is skipped
# (RLFORGE_SETUP=1 forces it).
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.rlforge-setup
want=$(cat scripts/setup.sh pyproject.toml constraints*.txt | sha256sum | cut -d' ' -f1)
if [ "${CI:-}" = true ] || [ "${RLFORGE_SETUP:-0}" = 1 ] || [ ! -f "$stamp" ] \
        || [ "$(cat "$stamp")" != "$want" ]; then
    RLFORGE_BROWSER=1 ./scripts/setup.sh
    echo "$want" > "$stamp"
else
    echo "test.sh: set-up is current (RLFORGE_SETUP=1 to run it anyway)"
fi
if [ "${1:-}" = fast ]; then
    shift
    set -- -m "not slow and not ray and not llama and not trainers" "$@"
fi
.venv/bin/rlforge sandbox check
./scripts/check.sh
set +e
# the slowest tests in the log, so a CI run that grows shows where
.venv/bin/python -m pytest --durations=25 "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that is a failure, not a pass" >&2
    exit 1
fi
exit "$status"
