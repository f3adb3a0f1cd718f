#!/usr/bin/env bash
# The main job end to end on sample_data/: set-up, ingest (tickets, commits, logs),
# build-tasks, validate, and a run against the embedded default policy (a tiny local
# model: a smoke test of the pipeline, not a baseline). Everything lands in demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh

rm -rf demo && mkdir -p demo
export RLFORGE_DB="$PWD/demo/rlforge.duckdb"
rlforge=".venv/bin/rlforge"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "ingest tickets (CSV, Zendesk JSON, Jira CSV; PII redacted)"
$rlforge ingest tickets sample_data/tickets/tickets.csv
$rlforge ingest tickets sample_data/tickets/zendesk_export.json --map category=custom_fields.360041872211
$rlforge ingest tickets sample_data/tickets/jira_export.csv --map category=Component/s

step "ingest commits (the demo repository, built from sample_data/repo)"
.venv/bin/python sample_data/repo/build_repo.py demo/dura
$rlforge ingest commits demo/dura

if [ -d sample_data/logs ]; then
    step "ingest logs (a small service fleet over five days, four incidents; links made)"
    find sample_data/logs -type f \( -name '*.log' -o -name '*.log.gz' -o -name '*.jsonl' \
        -o -name '*.syslog' \) | sort | xargs $rlforge ingest logs
fi

step "links: which ticket reported what, and the commit that fixed it"
$rlforge links

step "status"
$rlforge status

step "build-tasks (validated in the sandbox: gold 1, null and tricks 0)"
$rlforge build-tasks --out demo/tasks --limit 40 --seed 1

step "validate"
$rlforge validate demo/tasks

step "run: a few tasks of each kind against the embedded default policy (SmolLM2-135M on CPU: a smoke test of the pipeline, not a baseline)"
# Commands as ```bash blocks (--tool-protocol text): llama-cpp-python's function-calling
# handler ignores max_tokens while it writes a tool call's arguments, and at temperature
# 0.7 the tiny model can write one until its context is full (minutes on a CPU).
$rlforge run demo/tasks --limit 5 --samples 2 --temperature 0.7 --max-tokens 96 --max-turns 3 \
    --tool-protocol text --runs-dir demo/runs --run-id demo

step "run: the same model with the adapter rlforge ships (LoRA trained on the train split of these triage tasks), beside the base, on the triage tasks neither was trained on"
# benchmarks/learning.py trained the model, examples/gguf_adapter.py made it a rank-16
# adapter (rlforge/models/smollm2-135m-triage.json says how and on which tickets); splits
# are a stable hash of each ticket's group (same subject, near duplicates), so val and test
# here hold none of them.
for adapter in "" smollm2-135m-triage; do
    $rlforge run demo/tasks --generators tickets.triage --split val,test --samples 4 \
        --temperature 0.7 --max-tokens 32 --runs-dir demo/runs \
        --run-id "demo-triage${adapter:+-adapter}" ${adapter:+--adapter "$adapter"}
done
