#!/usr/bin/env bash
# Set up, then run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
RLFORGE_BROWSER=1 ./scripts/setup.sh
.venv/bin/rlforge sandbox check
./scripts/check.sh
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that is a failure, not a pass" >&2
    exit 1
fi
exit "$status"
