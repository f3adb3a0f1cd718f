"""A small OpenAI-compatible chat server for a Transformers checkpoint, on the CPU.

`rlforge run` talks to any OpenAI-compatible endpoint; a model trained with TRL is a
Transformers checkpoint, which llama.cpp cannot serve without a conversion to GGUF that
no package ships. This module serves it instead, so a trained model and the base it
started from are scored by the same `rlforge run`, on the same tasks and seeds:

    python -m rlforge.hf_server CHECKPOINT_DIR --port 8011
    python -m rlforge.hf_server path/to/model.gguf --port 8011   # Transformers reads GGUF
                                                                 # (needs the `gguf` package)

It answers `GET /v1/models` and `POST /v1/chat/completions` (messages, temperature, top_p,
max_tokens, seed, stop; no tools, no streaming, `n` ignored), one request at a time. A
request with a seed is reproducible: the seed is set before each generation, in this
process only. It needs torch and transformers (`pip install 'rlforge[learn]'`).

`TransformersServer` starts it in a child process the way `LocalModel` starts llama.cpp
(its own process group, stopped with the parent).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rlforge.errors import LocalModelUnavailable
from rlforge.local_model import LocalModel, free_port, start_watchdog

INSTALL_HINT = "pip install 'rlforge[learn]' (torch, transformers and gguf)"


def load(model: str | Path) -> tuple[Any, Any]:
    """(model, tokenizer) from a checkpoint directory or a .gguf file, in float32 on the CPU."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(model)
    if path.suffix == ".gguf":
        kwargs: dict[str, Any] = {"gguf_file": path.name}
        path = path.parent
    else:
        kwargs = {}
    tokenizer = AutoTokenizer.from_pretrained(str(path), **kwargs)
    net = AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
    net.eval()
    return net, tokenizer


class Generator:
    """Chat completions from one loaded model, one at a time."""

    def __init__(self, model: Any, tokenizer: Any, name: str):
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.lock = threading.Lock()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """The OpenAI chat-completion response for one request body."""
        import torch

        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("'messages' must be a non-empty list")
        temperature = float(body.get("temperature", 1.0) or 0.0)
        max_tokens = int(body.get("max_tokens") or 256)
        stop = body.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        inputs = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        sampling: dict[str, Any] = {"do_sample": False}
        if temperature > 0:
            sampling = {"do_sample": True, "temperature": temperature,
                        "top_p": float(body.get("top_p", 1.0) or 1.0), "top_k": 0}
        with self.lock, torch.no_grad():
            if body.get("seed") is not None:
                torch.manual_seed(int(body["seed"]))  # this server process's own RNG
            out = self.model.generate(**inputs, max_new_tokens=max_tokens,
                                      pad_token_id=self.tokenizer.eos_token_id, **sampling)
        new = out[0][inputs["input_ids"].shape[1]:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        finish = "length" if len(new) >= max_tokens else "stop"
        for s in stop:
            if s and s in text:
                text, finish = text[:text.index(s)], "stop"
        return {"id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion",
                "created": int(time.time()), "model": self.name,
                "choices": [{"index": 0, "finish_reason": finish,
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": int(inputs["input_ids"].shape[1]),
                          "completion_tokens": int(len(new)),
                          "total_tokens": int(inputs["input_ids"].shape[1] + len(new))}}


def make_server(generator: Generator, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server answering the two OpenAI routes with `generator`."""

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, data: dict[str, Any]) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [
                    {"id": generator.name, "object": "model", "owned_by": "rlforge"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self._send(200, generator.complete(body))
            except (ValueError, TypeError, KeyError) as exc:
                self._send(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return ThreadingHTTPServer((host, port), Handler)


class TransformersServer(LocalModel):
    """`python -m rlforge.hf_server MODEL` in a child process, as a context manager.

    Args:
        model: a Transformers checkpoint directory or a .gguf file.
        name: the model name the server reports (and `rlforge run --model` sends).
        startup_timeout: seconds to wait for it to load and answer.
        log_path: where its output goes (default: a temporary file).
    """

    def __init__(self, model: str | Path, name: str, *, startup_timeout: float = 600.0,
                 log_path: str | Path | None = None):
        super().__init__(model, chat_format=None, startup_timeout=startup_timeout,
                         log_path=log_path)
        self.model = name

    def start(self) -> "TransformersServer":
        """Start the server and wait until it serves; raises LocalModelUnavailable."""
        assert self.model_path is not None
        if not self.model_path.exists():
            raise LocalModelUnavailable(f"model {self.model_path} does not exist")
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="rlforge-hf-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        for _ in range(3):
            self.port = free_port()
            if self._launch(self.model_path):
                return self
        raise LocalModelUnavailable(f"the Transformers server did not start; its log is "
                                    f"{self.log_path}:\n{self._log_tail()}")

    def command(self, model: Path) -> list[str]:
        """`python -m rlforge.hf_server MODEL` on `self.port`, stopped with this process."""
        return [sys.executable, "-m", "rlforge.hf_server", str(model), "--host", "127.0.0.1",
                "--port", str(self.port), "--name", self.model, "--parent", str(os.getpid())]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rlforge.hf_server",
                                     description="Serve a Transformers checkpoint (or a .gguf "
                                     "file) as an OpenAI-compatible chat endpoint on the CPU.")
    parser.add_argument("model", help="a checkpoint directory or a .gguf file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--name", default=None, help="model name to report (default: the "
                        "directory's or file's name)")
    parser.add_argument("--parent", type=int, default=None,
                        help="stop when this process id is gone (used by TransformersServer)")
    args = parser.parse_args(argv)
    if args.parent:  # before loading, which takes a minute or more on a busy CPU
        start_watchdog(args.parent)
    try:
        net, tokenizer = load(args.model)
    except ImportError as exc:
        sys.exit(f"error: {exc}: {INSTALL_HINT}")
    name = args.name or Path(args.model).name
    server = make_server(Generator(net, tokenizer, name), args.host, args.port)
    print(f"serving {args.model} as {name!r} at http://{args.host}:{args.port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
