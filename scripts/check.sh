#!/usr/bin/env bash
# Static checks: ruff, with the rules in pyproject.toml ([tool.ruff]), then mypy on the
# package ([tool.mypy]). Extra arguments go to `ruff check` (e.g. --fix). scripts/test.sh
# runs this before the tests.
#   RLFORGE_MYPY  fail (any type error fails the check) or report (default for now: print
#                 the errors and their count, fail only when mypy itself cannot run)
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

mode="${RLFORGE_MYPY:-report}"
case "$mode" in
    fail|report) ;;
    *) echo "check.sh: RLFORGE_MYPY must be fail or report, not '$mode'" >&2; exit 1 ;;
esac
set +e
out=$("$mypy" 2>&1)
status=$?
set -e
# mypy exits 1 when it found type errors and 2 when it could not check (bad config, a
# crash): the latter always fails. Report mode prints the errors per file, not each one.
if [ "$status" -eq 1 ] && [ "$mode" = report ]; then
    grep -oE '^[^:]+\.py:[0-9]+: error:' <<<"$out" | cut -d: -f1 | sort | uniq -c | sort -rn || true
    echo "$(tail -n 1 <<<"$out") (reported, not failing: RLFORGE_MYPY=report;" \
         "RLFORGE_MYPY=fail ./scripts/check.sh lists them)"
else
    echo "$out"
    exit "$status"
fi
