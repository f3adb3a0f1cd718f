"""A fast fake OpenAI-compatible server: fixed latency, canned answers.

Benchmarks of `rlforge run` and of the policy client need an endpoint whose own cost is
negligible and whose latency is known, so that what is measured is the client. This
server speaks just enough HTTP/1.1 (keep-alive, Content-Length bodies) on a bare asyncio
protocol to sustain several thousand requests/s on one core, and answers

- `POST /v1/chat/completions` after `--latency-ms` (default 50) with a canned reply: the
  text inside `<<reply:...>>` in the last message if there is one (so a benchmark can make
  some rollouts pass and others fail), else `--answer`;
- `GET /v1/models` with the one model;
- `GET /stats` with requests served, peak in-flight requests and the server's CPU seconds.

Run: `python benchmarks/fake_openai_server.py --port 8000 --latency-ms 50`. It prints
`listening on http://127.0.0.1:PORT` once it accepts connections (`--port 0` picks one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import time

_REPLY = re.compile(r"<<reply:(.*?)>>", re.S)
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 413: "Payload Too Large",
            501: "Not Implemented"}
MAX_BODY = 64 * 1024 * 1024


class Stats:
    """Counters shared by all connections."""

    def __init__(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.peak_in_flight = 0


class _HttpConnection(asyncio.Protocol):
    """One client connection; requests may be pipelined, answers keep their order."""

    def __init__(self, server: "FakeOpenAIServer"):
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.pending: list[list] = []  # [response bytes or None, keep_alive] in request order
        self.closed = False

    def connection_made(self, transport):  # type: ignore[override]
        self.transport = transport

    def connection_lost(self, exc):  # type: ignore[override]
        self.closed = True

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while not self.closed:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1")
            lines = head.split("\r\n")
            try:
                method, target, version = lines[0].split(" ", 2)
            except ValueError:
                self._respond_now(400, {"error": {"message": "bad request line"}}, False)
                return
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._respond_now(501, {"error": {"message": "chunked bodies not supported"}}, False)
                return
            length = int(headers.get("content-length", "0") or 0)
            if length > MAX_BODY:
                self._respond_now(413, {"error": {"message": "body too large"}}, False)
                return
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4:end + 4 + length])
            del self.buffer[:end + 4 + length]
            keep_alive = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
            self._dispatch(method, target, body, keep_alive)

    def _dispatch(self, method: str, target: str, body: bytes, keep_alive: bool) -> None:
        server = self.server
        path = target.split("?", 1)[0]
        if method == "POST" and path.endswith("/chat/completions"):
            slot = [None, keep_alive]
            self.pending.append(slot)
            stats = server.stats
            stats.requests += 1
            stats.in_flight += 1
            stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
            payload = server.completion(body)
            if server.latency > 0:
                server.loop.call_later(server.latency, self._complete, slot, payload)
            else:
                self._complete(slot, payload)
            return
        if method == "GET" and path.endswith("/models"):
            self._respond_now(200, {"object": "list", "data": [
                {"id": server.model, "object": "model", "owned_by": "rlforge-benchmark"}]},
                keep_alive)
        elif method == "GET" and path == "/stats":
            self._respond_now(200, {"requests": server.stats.requests,
                                    "peak_in_flight": server.stats.peak_in_flight,
                                    "cpu_seconds": time.process_time()}, keep_alive)
        else:
            self._respond_now(404, {"error": {"message": f"no route {method} {path}"}}, keep_alive)

    def _complete(self, slot: list, payload: tuple[int, bytes]) -> None:
        self.server.stats.in_flight -= 1
        slot[0] = _response(*payload, slot[1])
        self._flush()

    def _respond_now(self, status: int, obj: dict, keep_alive: bool) -> None:
        self.pending.append([_response(status, json.dumps(obj).encode(), keep_alive), keep_alive])
        self._flush()

    def _flush(self) -> None:
        while self.pending and self.pending[0][0] is not None:
            data, keep_alive = self.pending.pop(0)
            if self.closed:
                continue
            self.transport.write(data)
            if not keep_alive:
                self.transport.close()
                self.closed = True


def _response(status: int, body: bytes, keep_alive: bool) -> bytes:
    head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
    return head.encode("latin-1") + body


class FakeOpenAIServer:
    """The server's state: latency, canned answer, model name, counters."""

    def __init__(self, latency: float = 0.05, answer: str = "42", model: str = "fake-model"):
        self.latency = latency
        self.answer = answer
        self.model = model
        self.stats = Stats()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._ids = 0

    def completion(self, body: bytes) -> tuple[int, bytes]:
        """The (status, JSON body) answering one chat-completions request."""
        try:
            request = json.loads(body)
            messages = request["messages"]
            last = messages[-1].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return 400, b'{"error":{"message":"expected a JSON body with messages"}}'
        if isinstance(last, list):  # content parts
            last = " ".join(p.get("text", "") for p in last if isinstance(p, dict))
        found = _REPLY.search(last)
        content = found.group(1) if found else self.answer
        self._ids += 1
        prompt_tokens = sum(len(str(m.get("content") or "")) // 4 + 4 for m in messages)
        return 200, json.dumps({
            "id": f"chatcmpl-{self._ids}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(content) // 4 + 1,
                      "total_tokens": prompt_tokens + len(content) // 4 + 1},
        }).encode()

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> asyncio.AbstractServer:
        """Listen and return the asyncio server (its socket tells the port)."""
        self.loop = asyncio.get_running_loop()
        return await self.loop.create_server(lambda: _HttpConnection(self), host, port,
                                             backlog=4096, reuse_address=True)


async def _main(args: argparse.Namespace) -> None:
    fake = FakeOpenAIServer(args.latency_ms / 1000, args.answer, args.model)
    server = await fake.start(args.host, args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on http://{args.host}:{port}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--answer", default="42", help="reply when the request names none")
    parser.add_argument("--model", default="fake-model")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
