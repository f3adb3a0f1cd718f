"""Throughput of rlforge's policy client against bare aiohttp and httpx loops.

Starts `fake_openai_server.py` (fixed latency, default 50 ms) in its own process, then
sends the same N single-turn chat requests at concurrency C through

1. a bare aiohttp loop (C worker coroutines, one ClientSession),
2. a bare httpx loop (C workers, one AsyncClient with C pooled connections),
3. rlforge's `PolicyClient` driven by the same C workers,
4. rlforge's `PolicyClient` with one task per request, its semaphore limiting to C,

each in a fresh Python process, and prints requests/s over the loop, requests/s over the
whole process (interpreter start and imports included), and client CPU ms per request.
Half the requests ask for the right answer and half for a wrong one, and every loop
checks the answers, so all do the same work. It also prints the server's own capacity:
its CPU ms per request during the runs, and requests/s with zero latency (there the
client's CPU per request, not the latency, sets the pace).

Run: `python benchmarks/policy_client_throughput.py [--requests 5000] [--concurrency 64]`.
The machine's other load shows in the figures: run it twice and compare.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("aiohttp", "httpx", "rlforge", "rlforge-tasks")
MODEL = "fake-model"


def request_bodies(n: int) -> list[tuple[dict, str]]:
    """(request body, expected answer) pairs; every other request will be answered wrongly."""
    bodies = []
    for i in range(n):
        answer = str(i % 97)
        reply = answer if i % 2 == 0 else "wrong"
        messages = [
            {"role": "system", "content": "You are a support analyst. Answer with the number only."},
            {"role": "user", "content": f"Ticket {i}: how many seats does account {i % 97} "
                                        f"have? <<reply:{reply}>>"},
        ]
        bodies.append(({"model": MODEL, "messages": messages, "temperature": 0.0,
                        "max_tokens": 64, "seed": i}, answer))
    return bodies


async def _workers(concurrency: int, work, send) -> int:
    """C coroutines taking requests from one iterator; returns how many answers were right."""
    items = iter(work)
    correct = 0

    async def worker() -> None:
        nonlocal correct
        for body, answer in items:
            content = await send(body)  # await first: `correct += await ...` loses updates
            correct += content == answer

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return correct


async def run_aiohttp(url: str, work, concurrency: int) -> int:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        async def send(body):
            async with session.post(url + "/chat/completions", json=body) as response:
                data = await response.json()
                return data["choices"][0]["message"]["content"]

        return await _workers(concurrency, work, send)


async def run_httpx(url: str, work, concurrency: int) -> int:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        async def send(body):
            response = await client.post(url + "/chat/completions", json=body)
            return response.json()["choices"][0]["message"]["content"]

        return await _workers(concurrency, work, send)


def _policy_client(url: str, concurrency: int):
    from rlforge.policy import PolicyClient, PolicyConfig

    return PolicyClient(PolicyConfig(base_url=url, model=MODEL, temperature=0.0, max_tokens=64,
                                     concurrency=concurrency), api_key="")


async def run_rlforge(url: str, work, concurrency: int) -> int:
    async with _policy_client(url, concurrency) as client:
        async def send(body):
            result = await client.chat(body["messages"], seed=body["seed"])
            return result.content

        return await _workers(concurrency, work, send)


async def run_rlforge_tasks(url: str, work, concurrency: int) -> int:
    async with _policy_client(url, concurrency) as client:
        async def one(body, answer):
            result = await client.chat(body["messages"], seed=body["seed"])
            return result.content == answer

        return sum(await asyncio.gather(*(one(body, answer) for body, answer in work)))


def child(variant: str, url: str, n: int, concurrency: int) -> None:
    """Run one loop in this process and print its figures as one JSON line."""
    runner = {"aiohttp": run_aiohttp, "httpx": run_httpx, "rlforge": run_rlforge,
              "rlforge-tasks": run_rlforge_tasks}[variant]
    work = request_bodies(n)
    wall, cpu = time.perf_counter(), time.process_time()
    correct = asyncio.run(runner(url, work, concurrency))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({"variant": variant, "requests": n, "correct": correct, "seconds": wall,
                      "req_per_s": n / wall, "cpu_ms_per_req": cpu * 1000 / n}))


def start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(HERE / "fake_openai_server.py"), "--port", "0",
                             "--latency-ms", str(latency_ms), "--model", MODEL],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise SystemExit(f"fake server did not start: {line!r}")
    return proc, line.split()[-1] + "/v1"


def server_stats(url: str) -> dict:
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/stats") as response:
        return json.load(response)


def measure(variant: str, url: str, n: int, concurrency: int) -> dict:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", variant, "--url", url,
                          "--requests", str(n), "--concurrency", str(concurrency)],
                         capture_output=True, text=True, check=True).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    figures["process_req_per_s"] = n / (time.perf_counter() - start)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant (interleaved)")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.url, args.requests, args.concurrency)
        return

    n, c = args.requests, args.concurrency
    ceiling = c / (args.latency_ms / 1000) if args.latency_ms else float("inf")
    print(f"{n} requests, concurrency {c}, server latency {args.latency_ms:g} ms "
          f"(ceiling {ceiling:,.0f} req/s), {args.repeat} interleaved runs per variant")
    server, url = start_server(args.latency_ms)
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    try:
        before = server_stats(url)
        for round_no in range(args.repeat):
            for variant in VARIANTS:
                figures = measure(variant, url, n, c)
                runs[variant].append(figures)
                print(f"  run {round_no + 1} {variant:14} {figures['req_per_s']:7.0f} req/s  "
                      f"{figures['cpu_ms_per_req']:6.3f} CPU ms/req  "
                      f"(whole process {figures['process_req_per_s']:5.0f} req/s, "
                      f"{figures['correct']}/{n} correct)", flush=True)
        after = server_stats(url)
    finally:
        server.terminate()
        server.wait()
    served = after["requests"] - before["requests"]
    server_cpu_ms = (after["cpu_seconds"] - before["cpu_seconds"]) * 1000 / served

    print(f"\nmedian of {args.repeat} runs           req/s   CPU ms/req   whole-process req/s")
    medians = {}
    for variant in VARIANTS:
        rows = runs[variant]
        medians[variant] = statistics.median(r["req_per_s"] for r in rows)
        print(f"  {variant:28} {medians[variant]:7.0f}   {statistics.median(r['cpu_ms_per_req'] for r in rows):8.3f}"
              f"   {statistics.median(r['process_req_per_s'] for r in rows):8.0f}")
    best_bare = max(medians["aiohttp"], medians["httpx"])
    for variant in ("rlforge", "rlforge-tasks"):
        print(f"  {variant} / faster bare loop: {medians[variant] / best_bare:.2f}x (goal >= 0.90)")

    print(f"\nserver: {server_cpu_ms:.3f} CPU ms per request while serving the runs "
          f"(~{1000 / server_cpu_ms:,.0f} req/s per core)")
    zero, zero_url = start_server(0)
    try:
        for variant in ("aiohttp", "rlforge"):
            figures = measure(variant, zero_url, n, c)
            print(f"server at 0 ms latency, {variant} client, concurrency {c}: "
                  f"{figures['req_per_s']:,.0f} req/s, {figures['cpu_ms_per_req']:.3f} client CPU "
                  f"ms/req (client and server share the machine's cores)")
    finally:
        zero.terminate()
        zero.wait()


if __name__ == "__main__":
    main()
