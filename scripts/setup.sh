#!/usr/bin/env bash
# Set up rlforge on a Debian machine (idempotent): system packages, then a virtual
# environment in .venv with rlforge and the extras the demo and the tests use.
#   RLFORGE_EXTRAS   pip extras to install (default: dev,bench)
#   RLFORGE_BROWSER  1 to install Chromium too (the report test renders in it)
#   RLFORGE_HARBOR   0 to skip .venv-harbor: Harbor and inspect_ai (the tests run real Harbor
#                    trials, `harbor lint` and `inspect eval` on rlforge's tasks) in a venv
#                    of their own, made from the first Python >= 3.12 found
#                    ($RLFORGE_HARBOR_PYTHON, python3.13, python3.12 on PATH, or a pyenv
#                    build); skipped with a message if there is none
#   RLFORGE_VERIFIERS 0 to skip .venv-verifiers: verifiers 0.4.0 (the tests run its Harbor
#                    taskset and one rollout on rlforge's tasks), from the same Python, in a
#                    venv of its own (its harbor extra pins Harbor 0.24; ~2.5 minutes, 0.8 GB)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=()
command -v bwrap >/dev/null 2>&1 || packages+=(bubblewrap)
command -v git >/dev/null 2>&1 || packages+=(git)
# Sandboxed code runs on Debian's python3 (outside /root), and so do prepared venvs.
[ -x /usr/bin/python3 ] || packages+=(python3)
command -v prlimit >/dev/null 2>&1 || packages+=(util-linux)
# Go repair tasks: the go tool compiles and runs the tests (no module proxy is used).
command -v go >/dev/null 2>&1 || packages+=(golang-go)
# JavaScript/TypeScript repair tasks: node runs the tests, npm prepares their environments.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
if [ "${RLFORGE_BROWSER:-0}" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
    packages+=(chromium)
fi
if [ ${#packages[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${packages[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
fi
extras="${RLFORGE_EXTRAS:-dev,bench}"
echo "setup: installing rlforge[$extras] (llama-cpp-python compiles for ~8 minutes the first time)"
# constraints.txt: the exact versions CI tests (pyproject.toml holds the ranges users get).
# llama.cpp is compiled for a portable x86-64/ARM baseline, not for this machine's CPU:
# a native build on a VM whose CPU advertises instructions it does not run (AMX, AVX-512)
# dies of SIGILL at the first request. Set CMAKE_ARGS yourself to build otherwise.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[$extras]"

harbor_python() {
    local c
    for c in "${RLFORGE_HARBOR_PYTHON:-}" python3.13 python3.12 /root/.pyenv/versions/3.1[2-9]*/bin/python \
             "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python; do
        [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 || continue
        if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            command -v "$c"; return 0
        fi
    done
    return 1
}
if [ "${RLFORGE_HARBOR:-1}" != 0 ]; then
    if py=$(harbor_python); then
        [ -x .venv-harbor/bin/python ] || { echo "setup: creating .venv-harbor with $($py --version)"; "$py" -m venv .venv-harbor; }
        echo "setup: installing Harbor and inspect_ai into .venv-harbor"
        # rlforge itself without its dependencies: Harbor imports rlforge.harbor, which needs
        # only the standard library and rlforge.sandbox.
        .venv-harbor/bin/python -m pip install -q --disable-pip-version-check -c constraints-harbor.txt \
            harbor inspect-ai
        .venv-harbor/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
    else
        echo "setup: WARNING: no Python >= 3.12 found: no .venv-harbor, so the Harbor tests will be skipped" >&2
    fi
fi
if [ "${RLFORGE_VERIFIERS:-1}" != 0 ]; then
    if py=$(harbor_python); then
        [ -x .venv-verifiers/bin/python ] || { echo "setup: creating .venv-verifiers with $($py --version)"; "$py" -m venv .venv-verifiers; }
        echo "setup: installing verifiers into .venv-verifiers"
        .venv-verifiers/bin/python -m pip install -q --disable-pip-version-check -c constraints-verifiers.txt \
            'verifiers[harbor]'
        # rlforge.verifiers_env needs only verifiers, the standard library and rlforge.sandbox.
        .venv-verifiers/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
    else
        echo "setup: WARNING: no Python >= 3.12 found: no .venv-verifiers, so the verifiers tests will be skipped" >&2
    fi
fi
echo "setup: done ($(.venv/bin/rlforge --version))"
