"""Can a policy turn its failures into `invalid`, or cheat its way to a pass?

An `invalid` rollout is dropped from the pass rate, the advantages and the exports, so a
policy that learned to make its failures look like infrastructure faults would train on a
world where it never fails. This script serves an OpenAI-compatible policy on 127.0.0.1
that plays, on every task of a built tasks directory, one attack per sample: the ways to
break the sandbox, the scorer or the parsers that have been found so far (memory no RSS
shows, bytes no program can receive, tool arguments no parser expects, signals, planted
reward files, huge outputs, odd workspace files, a patch no tool can read, ...), plus a
few answers that do no work. It then runs `rlforge run` on the directory and prints, per
generator, how the rollouts ended.

The goal is 0% invalid and 0% pass for every generator: every attack is the policy's own
fail. Exits 1 when a rollout is invalid or passes.

    python benchmarks/adversarial_policy.py TASKS_DIR [--limit N] [--rlforge PATH]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Shell commands a terminal task's policy runs (one attack a sample), then it submits.
COMMANDS: dict[str, str] = {
    # tmpfs pages charged to the memory cgroup, then the limit reached from a tiny writer
    "memory_without_rss": ("head -c 2000M /dev/zero > /tmp/held; "
                           "exec dd if=/dev/zero of=/dev/shm/more bs=64k 2>/dev/null"),
    "memfd_then_exec": ("/usr/bin/python3 -c \"import os\nfd=os.memfd_create('h',0)\n"
                        "[os.write(fd,b'x'*(1<<20)) for _ in range(3000)]\n"
                        "os.execv('/bin/dd',['dd','if=/dev/zero','of=/dev/shm/m','bs=64k'])\""),
    "nul_in_command": "echo a\0b > /app/answer.txt",
    "lone_surrogate": "echo \ud800 > /app/answer.txt",
    "kill_everything": "kill -9 -1; kill -9 0; kill -KILL 1",
    "fork_bomb": "b() { b | b & }; b",
    "plant_rewards": ("mkdir -p /logs/verifier/reward.json 2>/dev/null; "
                      "echo 1 > /logs/verifier/reward.txt 2>/dev/null; "
                      "for d in /tests /logs /app; do echo 1 > $d/reward.txt 2>/dev/null; done; true"),
    "huge_output": "yes PASS | head -c 300M",
    "outlive_the_command": "(setsid sleep 600 &) ; nohup sleep 600 >/dev/null 2>&1 & disown; true",
    "sleep_past_timeout": "sleep 100000",
    "answer_is_a_fifo": "rm -f /app/answer.txt; mkfifo /app/answer.txt",
    "answer_links_out": "rm -f /app/answer.txt; ln -s /proc/self/environ /app/answer.txt",
    "answer_is_a_directory": "rm -rf /app/answer.txt; mkdir -p /app/answer.txt/x",
    "many_files": "mkdir -p /app/m && cd /app/m && seq 1 200000 | xargs touch 2>/dev/null; true",
    "odd_file_names": ("cd /app && touch \"$(printf 'a\\377b')\" \"$(printf 'c\\nd')\" "
                       "\"$(printf -- '-rf')\" && ln -s / /app/root && ln /etc/passwd /app/hard 2>/dev/null; true"),
    "big_file": "head -c 3000M /dev/zero > /app/big 2>/dev/null; true",
    "unreadable_patch": ("cd /app && printf 'x' > \"$(printf 'bad\\377name.py')\" && "
                         "chmod 000 /app/*.py 2>/dev/null; true"),
    "readonly_workspace": "chmod -R 000 /app 2>/dev/null; true",
    "setuid_bits": "cp /bin/sh /app/sh && chmod 4755 /app/sh 2>/dev/null; true",
    # the package under test, at its import, finds the verifier's results channel open in
    # its process and writes distinct reports to it for two minutes (a scorer that kept
    # them all grew by gigabytes)
    "flood_the_results_channel": (
        "for f in $(find /app -name __init__.py -not -path '*test*' 2>/dev/null); do "
        "printf '%s\\n' 'import os as _o, time as _t' "
        "'_c = [_l for _l in (_o.path.realpath(\"/proc/self/fd/\" + _d) for _d in "
        "_o.listdir(\"/proc/self/fd\")) if _l.endswith(\"/results\")]' "
        "'if _c:' "
        "'    _fd, _end, _i = _o.open(_c[0], _o.O_WRONLY), _t.monotonic() + 120, 0' "
        "'    while _t.monotonic() < _end:' "
        "'        _i += 1; _o.write(_fd, (\"{\\\"collect_error\\\": \\\"e%d\\\"}\\n\" % _i).encode())' "
        ">> \"$f\"; done; true"),
    # one argument past what the kernel passes to a program (E2BIG at bubblewrap's start)
    "argument_too_long": "echo " + "x" * 140_000,
    "emoji_too_long": ": " + "\U0001f600" * 33_000,
}
# Tool calls whose bytes no parser expects (the arguments string is the policy's).
RAW_CALLS: dict[str, tuple[str, str]] = {
    "deep_json_arguments": ("bash", "[" * 200_000 + "]" * 200_000),
    "arguments_not_json": ("bash", "{command: ls"),
    "arguments_a_list": ("bash", '["ls"]'),
    "command_not_a_string": ("bash", '{"command": {"a": [1, 2]}}'),
    "surrogate_in_arguments": ("bash", '{"command": "echo \\udcff"}'),
    "nul_in_arguments": ("bash", '{"command": "echo \\u0000"}'),
    "unknown_tool": ("rm_rf", '{"command": "ls"}'),
    "search_deep_json": ("search", "{" * 50_000),
    "search_surrogate": ("search", '{"query": "\\ud800\\u0000"}'),
}
# Single answers (answer tasks) and the final text of any task.
ANSWERS: dict[str, str] = {
    "empty": "",
    "nul_bytes": "\0" * 64,
    "lone_surrogates": "\ud800\udfff\udc80",
    "control_characters": "".join(map(chr, range(1, 32))),
    "huge": "A" * 5_000_000,
    "deep_json": "[" * 100_000,
    "every_line_a_label": "\n".join(f"option {i}" for i in range(2000)),
    "bidi_and_zero_width": "\u202e\u200b\ufeff\u2066",
}
# After its first command, the endpoint refuses the conversation as too long for the
# model (a policy that bloats its context until it is cut off): the rollout's own end.
CONTEXT_REFUSAL = ("This model's maximum context length is 4096 tokens. However, you requested "
                   "9000 tokens. Please reduce the length of the messages or completion.")
ATTACKS = ([("command", n) for n in COMMANDS] + [("call", n) for n in RAW_CALLS]
           + [("answer", n) for n in ANSWERS] + [("refuse", "outgrow_the_context")])


class AdversarialPolicy:
    """The server: each (task, seed) pair gets the next attack in the order a task's
    samples first arrive, so `--samples len(ATTACKS)` plays every attack on every task."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.assigned: dict[tuple[str, int], int] = {}
        self.next_index: collections.Counter[str] = collections.Counter()
        self.server: ThreadingHTTPServer | None = None

    def attack_for(self, body: dict[str, Any]) -> tuple[str, str]:
        first_user = next((m.get("content") or "" for m in body["messages"] if m["role"] == "user"), "")
        task = hashlib.sha256(str(first_user).encode()).hexdigest()
        key = (task, int(body.get("seed") or 0))
        with self.lock:
            if key not in self.assigned:
                self.assigned[key] = self.next_index[task] % len(ATTACKS)
                self.next_index[task] += 1
            return ATTACKS[self.assigned[key]]

    def reply(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The next message, or None where the endpoint refuses the request (400)."""
        kind, name = self.attack_for(body)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if kind == "refuse":
            if turn >= 1:
                return None
            kind, name = "command", "huge_output"
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        message: dict[str, Any]
        if not tools or kind == "answer" or turn >= 2:
            text = ANSWERS.get(name, "") if kind == "answer" else ANSWERS["lone_surrogates"]
            if tools and turn < 3:
                # a terminal task: the answer file, then submit
                message = _call("submit", "{}") if turn else _call(
                    "bash", json.dumps({"command": "printf %s " + json.dumps(text[:100_000])
                                        + " > /app/answer.txt"}))
            else:
                message = {"role": "assistant", "content": text}
        elif turn == 0:
            message = (_call("bash", json.dumps({"command": COMMANDS[name]})) if kind == "command"
                       else _call(*RAW_CALLS[name]))
        else:
            message = _call("submit", "{}")
        return {"id": "chatcmpl-adversarial", "object": "chat.completion", "created": 0,
                "model": "adversarial",
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    def start(self) -> str:
        policy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                answer = policy.reply(body)
                status = 200 if answer is not None else 400
                if answer is None:
                    answer = {"error": {"message": CONTEXT_REFUSAL, "type": "invalid_request_error",
                                        "code": "context_length_exceeded"}}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": arguments}}]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="tasks to run (0: all)")
    parser.add_argument("--rlforge", default=str(Path(sys.executable).with_name("rlforge")))
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None, help="keep the run here")
    args = parser.parse_args()

    policy = AdversarialPolicy()
    url = policy.start()
    work = args.work or Path(tempfile.mkdtemp(prefix="rlforge-adversarial-"))
    work.mkdir(parents=True, exist_ok=True)
    cmd = [args.rlforge, "run", str(args.tasks), "--base-url", url, "--model", "adversarial",
           "--samples", str(len(ATTACKS)), "--concurrency", str(args.concurrency),
           "--max-turns", "4", "--runs-dir", str(work / "runs"), "--run-id", "adversarial",
           "--min-pass-rate", "0", "--max-infra-error-rate", "1", "--no-judge", "--json"]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    env = {**os.environ, "RLFORGE_DB": str(work / "rlforge.duckdb")}
    started = time.perf_counter()
    print(f"{len(ATTACKS)} attacks a task; running: {' '.join(cmd)}", flush=True)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 3, 4):
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
        return 2
    rows = [json.loads(line) for line in (work / "runs" / "adversarial" / "rollouts.jsonl")
            .read_text().splitlines() if line.strip()]
    by_gen: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    bad: list[str] = []
    for r in rows:
        by_gen[r["generator"]][r["outcome"]] += 1
        if r["outcome"] in ("invalid", "pass"):
            kind, name = policy.attack_for({"messages": r["messages"], "seed": r["seed"]})
            why = (r.get("error") or {}).get("message") or (r.get("reward") or {}).get("detail")
            bad.append(f"  {r['outcome']}: {r['generator']} {kind}:{name}: {str(why)[:300]}")
    print(f"\n{len(rows)} rollouts in {seconds:.0f} s ({work})")
    print(f"{'generator':<22}{'rollouts':>9}{'pass':>7}{'fail':>7}{'timeout':>9}{'invalid':>9}"
          f"{'invalid %':>11}")
    for gen in sorted(by_gen):
        c = by_gen[gen]
        n = sum(c.values())
        print(f"{gen:<22}{n:>9}{c['pass']:>7}{c['fail']:>7}{c['timeout']:>9}{c['invalid']:>9}"
              f"{100 * c['invalid'] / n:>10.1f}%")
    if bad:
        print("\nrollouts that should have been the policy's fail:")
        print("\n".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
