"""Helpers for the run tests: real task directories and a scripted OpenAI-compatible server.

- `make_task` renders a small task through rlforge's own renderer (`rlforge.tasks.render`),
  so its directory is exactly what build-tasks writes: task.toml with [metadata.rlforge],
  the standalone verifier, reference.json, the starting workspace, a gold solve.sh.
- `built_tasks` ingests the sample tickets and builds real triage and reply tasks.
- `ScriptedPolicy` is an HTTP server on 127.0.0.1 speaking the chat-completions protocol
  that plays a fixed script of assistant turns per task (found by a marker in the
  instruction), for multi-turn tests that need particular tool calls. It keeps no state
  between requests: the turn is the number of assistant messages already sent, so
  concurrent rollouts and retries are answered consistently.

The tests at the end check the helpers themselves.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from builds import build_options
from paths import SAMPLE_DATA
from rlforge import db
from rlforge.ingest import tickets
from rlforge.tasks.build import build_tasks
from rlforge.tasks.render import Renderer, render_task, write_task
from rlforge.tasks.spec import SourceRef, Submission, TaskSpec

MARKER = re.compile(r"\[script:([\w.-]+)\]")


def make_task(root: Path, name: str, *, instruction: str, reference: dict[str, Any],
              kind: str = "answer", generator: str = "test.answer",
              workspace: dict[str, bytes] | None = None, solution: bytes | None = None,
              split: str = "train", agent_timeout: float = 60.0,
              metadata: dict[str, Any] | None = None) -> Path:
    """Render one task directory into `root` (`metadata`: more [metadata.rlforge] keys);
    returns its path."""
    templates = root.parent / f"{root.name}-templates"
    templates.mkdir(parents=True, exist_ok=True)
    (templates / "instruction.md.j2").write_text("{{ text }}\n")
    spec = TaskSpec(
        generator=generator, version=1, source=SourceRef("test", [name], [name]),
        instruction_template="instruction.md", context={"title": name, "text": instruction},
        reference=reference, verifier=reference["verifier"], group_key=name, dedup_text=name,
        solution_files={"solve.sh": solution or b"#!/bin/bash\ntrue\n"},
        null=Submission("null"), adversarial=[], workspace=workspace or {}, kind=kind,
        agent_timeout_sec=agent_timeout, extra_metadata=metadata or {})
    rendered = render_task(spec, Renderer(templates), seed=0, split=split)
    root.mkdir(parents=True, exist_ok=True)
    return write_task(rendered, root)


def label_task(root: Path, name: str, answer: str, *, labels=("billing", "login", "shipping"),
               text: str = "", **kw) -> Path:
    """A triage-style single-turn task with a label answer."""
    reference = {"verifier": "answer", "answer_kind": "label", "answer": answer,
                 "labels": list(labels), "submission": "/app/answer.txt", "max_chars": 200}
    instruction = (f"Classify this request. [script:{name}]\n{text}\n"
                   f"Options: {', '.join(labels)}.\nEnd with one line: `ANSWER: <option>`.")
    return make_task(root, name, instruction=instruction, reference=reference, **kw)


LOG_LINES = b"".join(b"2024-05-01 12:00:%02d INFO request served\n" % i for i in range(12))


def count_task(root: Path, name: str, *, generator: str = "test.count", **kw) -> Path:
    """A multi-turn task: count the lines of /app/data.log into /app/answer.txt."""
    reference = {"verifier": "answer", "answer_kind": "numeric", "answer": 12,
                 "submission": "/app/answer.txt"}
    return make_task(root, name, kind="terminal", generator=generator, reference=reference,
                     instruction=f"Count the lines of /app/data.log and write the number to "
                                 f"/app/answer.txt. [script:{name}]",
                     workspace={"data.log": LOG_LINES},
                     solution=b"#!/bin/bash\nwc -l < /app/data.log > /app/answer.txt\n", **kw)


def script_task(root: Path, name: str, **kw) -> Path:
    """A multi-turn task whose verifier runs the policy's program (count.py) in the sandbox."""
    reference = {"verifier": "script", "workspace": "/app", "programs": ["count.py"],
                 "timeout_sec": 10,
                 "cases": [{"name": "visible", "path": "/app/data.log",
                            "answer": {"answer_kind": "numeric", "answer": 12}}]}
    return make_task(root, name, kind="terminal", generator="test.script", reference=reference,
                     instruction=f"Write /app/count.py: it prints the number of lines of the "
                                 f"file named by its argument. [script:{name}]",
                     workspace={"data.log": LOG_LINES}, **kw)


def built_tasks(tmp_path: Path, limit: int = 6, generators=("tickets.triage", "tickets.reply"),
                seed: int = 3) -> Path:
    """Real tasks built from sample_data/ by the library (not validated: fast)."""
    con = db.connect(tmp_path / "tasks-src.duckdb")
    base = SAMPLE_DATA / "tickets"
    tickets.ingest_file(con, base / "tickets.csv")
    tickets.ingest_file(con, base / "zendesk_export.json",
                        mapping={"category": "custom_fields.360041872211"})
    out = tmp_path / "built"
    build_tasks(con, build_options(out=out, generators=list(generators), limit=limit, seed=seed,
                                   validate=False))
    con.close()
    return out


# --- a scripted policy -------------------------------------------------------------------

def bash_call(command: str, call_id: str = "") -> dict[str, Any]:
    """An assistant turn calling the bash tool."""
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": call_id or f"call_{abs(hash(command)) % 10**8}", "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]}


SUBMIT = {"role": "assistant", "content": None, "tool_calls": [{
    "id": "call_submit", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]}


@dataclasses.dataclass(frozen=True)
class Refuse:
    """A step the endpoint answers with an HTTP error and an OpenAI-style error body."""

    status: int
    message: str


class ScriptedPolicy:
    """The server; `scripts[name]` lists the assistant messages of the task marked
    `[script:name]`, turn by turn (past the end: a plain "done" reply). A step may be a
    string (the reply's text), a message, or a function of the request body returning
    either. `delay` holds every answer back; `requests`, `authorizations` and
    `peak_in_flight` (per script name) tell what the client did."""

    def __init__(self, scripts: dict[str, list[Any]], delay: float = 0.0):
        self.scripts = scripts
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.in_flight: dict[str, int] = {}
        self.peak_in_flight: dict[str, int] = {}
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @staticmethod
    def script_name(body: dict[str, Any]) -> str:
        text = " ".join(str(m.get("content") or "") for m in body["messages"]
                        if m["role"] == "user")
        found = MARKER.search(text)
        return found.group(1) if found else ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply(self, body: dict[str, Any]) -> dict[str, Any] | Refuse:
        messages = body["messages"]
        script = self.scripts.get(self.script_name(body), [])
        turn = sum(1 for m in messages if m["role"] == "assistant")
        step = script[turn] if turn < len(script) else "done"
        if callable(step):
            step = step(body)
        if isinstance(step, Refuse):
            return step
        message = {"role": "assistant", "content": step} if isinstance(step, str) else dict(step)
        return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
                "model": body.get("model", "scripted"),
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 10 * len(messages), "completion_tokens": 5,
                          "total_tokens": 10 * len(messages) + 5}}

    def start(self) -> "ScriptedPolicy":
        policy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                name = policy.script_name(body)
                with policy.lock:
                    policy.requests.append(body)
                    policy.authorizations.append(self.headers.get("Authorization"))
                    policy.in_flight[name] = policy.in_flight.get(name, 0) + 1
                    policy.peak_in_flight[name] = max(policy.peak_in_flight.get(name, 0),
                                                      policy.in_flight[name])
                try:
                    if policy.delay:
                        time.sleep(policy.delay)
                    answer = policy.reply(body)
                finally:
                    with policy.lock:
                        policy.in_flight[name] -= 1
                status, data = 200, b""
                if isinstance(answer, Refuse):
                    status = answer.status
                    data = json.dumps({"error": {"message": answer.message, "type": "BadRequestError",
                                                 "code": status}}).encode()
                else:
                    data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (a test killed it): nothing to answer

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # http.server's default of 5 resets connections
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def __enter__(self) -> "ScriptedPolicy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- the helpers' own tests ----------------------------------------------------------------

def test_made_tasks_are_real_task_directories(tmp_path):
    from rlforge.taskdir import load_task

    task = load_task(count_task(tmp_path / "tasks", "count"))
    assert (task.kind, task.verifier, task.generator, task.generator_version) == \
        ("terminal", "answer", "test.count", 1)
    assert (task.path / "tests" / "rlforge_verify.py").is_file()
    assert (task.path / "environment" / "app" / "data.log").read_bytes() == LOG_LINES
    assert "[script:count]" in task.instruction


def test_scripted_policy_plays_turns_by_position():
    import urllib.request

    policy = ScriptedPolicy({"t": [bash_call("ls"), "second"]}).start()
    try:
        def ask(messages):
            request = urllib.request.Request(policy.url + "/chat/completions", method="POST",
                                             data=json.dumps({"messages": messages}).encode())
            with urllib.request.urlopen(request) as response:
                return json.load(response)["choices"][0]["message"]

        user = {"role": "user", "content": "do it [script:t]"}
        assert ask([user])["tool_calls"][0]["function"]["name"] == "bash"
        assert ask([user, {"role": "assistant", "content": "x"}])["content"] == "second"
        assert ask([user] + [{"role": "assistant", "content": "x"}] * 2)["content"] == "done"
    finally:
        policy.stop()


@pytest.mark.slow
def test_fast_task_toml_reader_agrees_with_tomllib(tmp_path):
    import tomllib

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from rlforge.taskdir import read_toml
    from rlforge.tasks.render import toml_value

    for path in built_tasks(tmp_path, limit=6).glob("*/task.toml"):
        text = path.read_text()
        assert read_toml(text) == tomllib.loads(text)
    scalar = st.one_of(st.text(max_size=20), st.integers(-10**6, 10**6), st.booleans(),
                       st.floats(allow_nan=False, allow_infinity=False))
    value = st.one_of(scalar, st.lists(scalar, max_size=4))
    key = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
    table = st.dictionaries(key, value, max_size=6)

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(st.from_regex(r"[a-z]{1,6}(\.[a-z]{1,6})?", fullmatch=True), table,
                           max_size=4), st.sampled_from(["", "# note\n", "x = 1 # c\n",
                                                         "bad = { a = 1 }\n", "when = 2024-01-01\n"]))
    def same(tables, extra):
        lines = []
        for name, items in tables.items():
            lines.append(f"[{name}]")
            lines += [f"{k} = {toml_value(v)}" for k, v in items.items()]
        text = extra + "\n".join(lines) + "\n"
        try:
            expected = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return  # e.g. [a] after [a.b] defined a as a value: not a valid file
        assert read_toml(text) == expected

    same()
