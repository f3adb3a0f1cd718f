"""A fault-injecting OpenAI-compatible HTTP server on 127.0.0.1, for the policy client's tests.

The error paths of `rlforge.policy` are only believable against a real socket, so this
server speaks HTTP/1.1 itself (bare asyncio, keep-alive) and misbehaves on request. The
fault is chosen by the request's `model`: `script:NAME` plays the script registered under
NAME one step per request (the last step repeats), any other model plays the steps
written in it directly, comma-separated: `model="500,503,ok"`. Steps:

    ok[:DELAY]          a normal completion (content "ok"), after DELAY seconds
    echo                content is the last user message
    tool                a tool call to the first tool in the request (finish "tool_calls")
    chunked             a normal completion sent with Transfer-Encoding: chunked
    429[:SECS|:date:SECS]  429 with Retry-After in seconds or as an HTTP-date SECS ahead
    500 | 502 | 503 | 400 | 404 | 408 | 409   that status with an OpenAI-style error body
    401                 401 whose message echoes the request's Authorization header
    context             400 "maximum context length" (the rollout's fault, not infra)
    context_size        400 as llama.cpp's server words it ("exceeds the available context size")
    context_tgi         422 as text-generation-inference words it ("... must be <= 2048")
    slow:SECS           a normal completion after SECS seconds (for client timeouts)
    truncated           200, body cut in half but framed consistently (Content-Length fits)
    invalid_json        200, body is not JSON
    no_choices          200, JSON without `choices`
    slow_body:SECS      headers at once, the body SECS seconds later
    garbage             bytes that are not HTTP, then close
    reset               headers and half the body, then a TCP reset (RST)
    drop                close the connection without answering

Start it with `FaultServer().start()` (a thread with its own event loop, a free port;
`FaultServer(ssl_context)` serves https);
`url` is the base URL to give the client; `requests`, `peak_in_flight`, `bodies` and
`authorizations` tell what the client did.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import socket
import ssl
import struct
import threading
import time
from collections import defaultdict


class FaultServer:
    """The server: a background thread serving scripted faults until `stop()`."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.ssl_context = ssl_context
        self.scripts: dict[str, list[str]] = {}
        self.cursor: dict[str, int] = defaultdict(int)
        self.requests = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.bodies: list[dict] = []
        self.authorizations: list[str | None] = []
        self.connections: set[_Connection] = set()
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.port = 0
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None

    @property
    def url(self) -> str:
        """Base URL in the OpenAI convention (ends in /v1)."""
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    def script(self, name: str, *steps: str) -> str:
        """Register a sequence of steps; returns the model name that plays it."""
        self.scripts[name] = list(steps)
        self.cursor[name] = 0
        return f"script:{name}"

    def start(self) -> "FaultServer":
        ready = threading.Event()

        def run() -> None:
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
            self._server = self.loop.run_until_complete(self.loop.create_server(
                lambda: _Connection(self), "127.0.0.1", 0, backlog=1024, ssl=self.ssl_context))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()
            self._server.close()
            for connection in list(self.connections):
                connection.transport.abort()
            tasks = asyncio.all_tasks(self.loop)
            for task in tasks:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.close()

        self._thread = threading.Thread(target=run, name="fault-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self.loop is not None and self._thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)

    def next_step(self, model: str) -> str:
        """The step this request plays."""
        if model.startswith("script:"):
            name = model[len("script:"):]
            steps = self.scripts[name]
            with self.lock:
                index = self.cursor[name]
                self.cursor[name] += 1
        else:
            steps = model.split(",")
            key = f"inline:{model}"
            with self.lock:
                index = self.cursor[key]
                self.cursor[key] += 1
        return steps[min(index, len(steps) - 1)].strip()


def _completion(model: str, message: dict, finish: str = "stop") -> bytes:
    return json.dumps({
        "id": "chatcmpl-fault", "object": "chat.completion", "created": int(time.time()),
        "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }).encode()


def _error(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind}}).encode()


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            408: "Request Timeout", 409: "Conflict", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


class _Connection(asyncio.Protocol):
    """One client connection; requests are answered one at a time, in order."""

    def __init__(self, server: FaultServer):
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.queue: asyncio.Queue = asyncio.Queue()
        self.worker = asyncio.get_running_loop().create_task(self._serve())

    def connection_made(self, transport):  # type: ignore[override]
        self.transport = transport
        self.server.connections.add(self)

    def connection_lost(self, exc):  # type: ignore[override]
        self.server.connections.discard(self)
        self.worker.cancel()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            headers = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4:end + 4 + length])
            del self.buffer[:end + 4 + length]
            self.queue.put_nowait((head[0], headers, body))

    async def _serve(self) -> None:
        while True:
            request_line, headers, body = await self.queue.get()
            server = self.server
            with server.lock:
                server.requests += 1
                server.in_flight += 1
                server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
            try:
                keep_going = await self._answer(request_line, headers, body)
            finally:
                with server.lock:
                    server.in_flight -= 1
            if not keep_going:
                return

    def _send(self, status: int, body: bytes, extra: dict | None = None) -> None:
        head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
                "Content-Type: application/json", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in (extra or {}).items()]
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)

    async def _answer(self, request_line: str, headers: dict, body: bytes) -> bool:
        """Play one step; False when the connection is gone."""
        method, target, _ = request_line.split(" ", 2)
        if method == "GET" and target.endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fault-model"}]}).encode())
            return True
        request = json.loads(body)
        self.server.bodies.append(request)
        self.server.authorizations.append(headers.get("authorization"))
        model = request.get("model", "")
        step, _, arg = self.server.next_step(model).partition(":")
        ok_message = {"role": "assistant", "content": "ok"}
        if step in ("ok", "slow"):
            if arg:
                await asyncio.sleep(float(arg))
            self._send(200, _completion(model, ok_message))
        elif step == "echo":
            last = request["messages"][-1].get("content")
            self._send(200, _completion(model, {"role": "assistant", "content": last}))
        elif step == "tool":
            name = request["tools"][0]["function"]["name"]
            call = {"id": "call_1", "type": "function",
                    "function": {"name": name, "arguments": json.dumps({"command": "ls"})}}
            self._send(200, _completion(model, {"role": "assistant", "content": None,
                                                "tool_calls": [call]}, "tool_calls"))
        elif step == "chunked":
            payload = _completion(model, ok_message)
            half = len(payload) // 2
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part)
                              for part in (payload[:half], payload[half:]))
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n")
        elif step == "429":
            if arg.startswith("date"):
                when = time.time() + float(arg.split(":", 1)[1])
                retry_after = email.utils.formatdate(when, usegmt=True)
            else:
                retry_after = arg or "1"
            self._send(429, _error("Rate limit reached", "rate_limit_exceeded"),
                       {"Retry-After": retry_after})
        elif step == "401":
            presented = headers.get("authorization", "").removeprefix("Bearer ")
            self._send(401, _error(f"Incorrect API key provided: {presented}", "invalid_api_key"))
        elif step == "context":
            self._send(400, _error("This model's maximum context length is 2048 tokens. "
                                   "However, you requested 4100 tokens.", "invalid_request_error"))
        elif step == "context_size":  # llama.cpp's own server
            self._send(400, _error("request (4479 tokens) exceeds the available context size "
                                   "(4096 tokens), try increasing it", "exceed_context_size_error"))
        elif step == "context_tgi":  # text-generation-inference
            self._send(422, json.dumps({"error": "Input validation error: `inputs` tokens + "
                                        "`max_new_tokens` must be <= 2048. Given: 2000 `inputs` "
                                        "tokens and 100 `max_new_tokens`",
                                        "error_type": "validation"}).encode())
        elif step.isdigit():
            self._send(int(step), _error(f"injected {step}", "server_error"))
        elif step == "truncated":
            payload = _completion(model, ok_message)
            self._send(200, payload[: len(payload) // 2])
        elif step == "invalid_json":
            self._send(200, b"<html>upstream proxy error</html>")
        elif step == "no_choices":
            self._send(200, json.dumps({"id": "x", "object": "chat.completion"}).encode())
        elif step == "reset":
            payload = _completion(model, ok_message)
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n" % len(payload) + payload[:20])
            await asyncio.sleep(0.01)
            sock = self.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.transport.abort()
            return False
        elif step == "slow_body":
            payload = _completion(model, ok_message)
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n" % len(payload) + payload[:10])
            await asyncio.sleep(float(arg))
            self.transport.write(payload[10:])
        elif step == "garbage":
            self.transport.write(b"SSH-2.0-OpenSSH_9.6\r\nnot http at all\r\n\r\n")
            self.transport.close()
            return False
        elif step == "drop":
            self.transport.close()
            return False
        else:
            raise ValueError(f"unknown fault step {step!r}")
        return True
