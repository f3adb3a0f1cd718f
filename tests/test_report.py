"""`rlforge report`: the HTML report of real runs, rendered in headless Chromium.

Chromium is driven over its DevTools protocol (a websocket, through aiohttp): the page
is opened from a file:// URL with the network off, every console error, uncaught
exception and network request is recorded, the rollout browser is used (filter, expand),
and a full-page screenshot is saved (`REPORT_SCREENSHOT_DIR`, if set, gets a copy).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import aiohttp
import pytest

from test_export_rollouts import make_runs, records_of, terminal_run  # noqa: F401
from test_export_tasks import hf_offline, mixed_tasks, tasks_dir  # noqa: F401

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium "
                                    "(RLFORGE_BROWSER=1 ./scripts/setup.sh installs it)")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    return make_runs(tmp_path_factory.mktemp("report-runs"), {"policy-a": 8, "policy-b": 3},
                     samples=4, limit=30)


class Page:
    """One Chromium page over the DevTools protocol, with what it logged."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.pending: dict[int, asyncio.Future] = {}
        self.events: list[dict] = []
        self.loaded = asyncio.Event()
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self.pending:
                self.pending.pop(data["id"]).set_result(data)
            elif "method" in data:
                self.events.append(data)
                if data["method"] == "Page.loadEventFired":
                    self.loaded.set()

    async def send(self, method: str, **params) -> dict:
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        await self.ws.send_json({"id": self.next_id, "method": method, "params": params})
        reply = await asyncio.wait_for(future, 30)
        assert "error" not in reply, reply
        return reply.get("result", {})

    async def js(self, expression: str):
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                                 awaitPromise=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(json.dumps(p["exceptionDetails"])[:500])
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(p["entry"]["text"])
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"]


async def open_in_chromium(html: Path, scenario, profile: Path, width: int = 1400):
    """Open `html` in headless Chromium, run `scenario(page)`, return the page (closed)."""
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", "--remote-debugging-port=0",
         "--remote-debugging-address=127.0.0.1", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        port = None
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                raise AssertionError(f"chromium exited with {proc.returncode}")
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            port = int(m.group(1)) if m else None
        assert port, "chromium did not open its DevTools port"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
                targets = await resp.json(content_type=None)
            url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            async with http.ws_connect(url, max_msg_size=0) as ws:
                page = Page(ws)
                for domain in ("Runtime", "Log", "Page", "Network"):
                    await page.send(f"{domain}.enable")
                await page.send("Emulation.setDeviceMetricsOverride", width=width, height=1000,
                                deviceScaleFactor=1, mobile=False)
                await page.send("Page.navigate", url=html.resolve().as_uri())
                await asyncio.wait_for(page.loaded.wait(), 30)
                await scenario(page)
                page.reader.cancel()
                return page
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def screenshot(page: Page, path: Path, width: int = 1400) -> None:
    metrics = await page.send("Page.getLayoutMetrics")
    height = int(metrics["cssContentSize"]["height"])
    shot = await page.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                           clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
    path.write_bytes(base64.b64decode(shot["data"]))
    if os.environ.get("REPORT_SCREENSHOT_DIR"):
        target = Path(os.environ["REPORT_SCREENSHOT_DIR"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target / path.name)


def report(cli, runs: dict, out: Path, *args: str):
    return cli("report", *args, "--runs-dir", runs["runs_dir"], "--out", out)


class _Scan(HTMLParser):
    """Everything in a page that could load something from elsewhere."""

    def __init__(self):
        super().__init__()
        self.external: list[str] = []
        self.scripts: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            if a.get(key) and not a[key].startswith(("#", "data:")):
                self.external.append(f"{tag} {key}={a[key]}")
        if tag == "script":
            self.scripts.append(a)


@needs_chromium
def test_report_renders_offline_without_errors_and_its_browser_works(cli, runs, tmp_path):
    result = report(cli, runs, tmp_path / "report.html", runs["runs"]["policy-a"])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "report.html").read_text()
    scan = _Scan()
    scan.feed(html)
    assert scan.external == []  # no CDN, no remote asset: one self-contained file
    records = records_of(runs["runs_dir"] / "run-policy-a")
    passing = sum(r["outcome"] == "pass" for r in records)
    state: dict = {}

    async def scenario(page: Page) -> None:
        state["rows"] = await page.js("document.querySelectorAll('#rollouts tbody tr.r').length")
        state["count"] = await page.js("document.getElementById('count').textContent")
        state["charts"] = await page.js("document.querySelectorAll('svg.chart').length")
        state["kpi"] = await page.js("document.querySelector('.kpi .v').textContent")
        await screenshot(page, tmp_path / "report.png")
        # Filter to passing rollouts, then open the first one.
        state["passing"] = await page.js("""(() => {
            const f = document.getElementById('f-outcome'); f.value = 'pass';
            f.dispatchEvent(new Event('input'));
            return document.getElementById('count').textContent; })()""")
        state["detail"] = await page.js("""(() => {
            document.querySelector('#rollouts tbody tr.r').click();
            const d = document.querySelector('#rollouts tr.detail');
            return d ? [d.querySelectorAll('.msg').length, d.querySelector('.msg.assistant pre').textContent] : null; })()""")
        await screenshot(page, tmp_path / "report-expanded.png")

    page = asyncio.run(open_in_chromium(tmp_path / "report.html", scenario, tmp_path / "profile"))
    assert page.errors() == []
    assert all(u.startswith(("file:", "data:", "about:")) for u in page.requests()), page.requests()
    assert state["rows"] == min(100, len(records))
    assert state["count"] == f"showing {min(100, len(records))} of {len(records)} rollouts"
    assert state["charts"] >= 6
    summary = json.loads((runs["runs_dir"] / "run-policy-a" / "summary.json").read_text())
    assert state["kpi"] == f"{summary['pass_rate']:.1%}"
    assert state["passing"].startswith(f"showing {min(100, passing)} of {passing} (filtered from")
    n_messages, reply = state["detail"]
    assert n_messages == 3  # system, instruction, the policy's reply
    first_pass = sorted((r for r in records if r["outcome"] == "pass"),
                        key=lambda r: (r["task_id"], r["rollout_id"]))[0]
    assert reply == first_pass["messages"][-1]["content"]
    png = (tmp_path / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000


def test_report_numbers_match_the_runs_summary(cli, runs, tmp_path):
    result = cli("report", runs["runs"]["policy-a"], "--runs-dir", runs["runs_dir"],
                 "--out", tmp_path / "r.html", "--json")
    assert result.exit_code == 0, result.output
    got = json.loads(result.output)
    summary = json.loads((runs["runs_dir"] / "run-policy-a" / "summary.json").read_text())
    assert got["rollouts"] == summary["rollouts"]
    assert got["pass_rate"] == summary["pass_rate"] and got["pass_at_k"] == summary["pass_at_k"]
    assert got["infra_error_rate"] == summary["infra_error_rate"] > 0
    html = (tmp_path / "r.html").read_text()
    for gen, tally in summary["by_generator"].items():
        assert gen in html and f"{tally['pass_rate']:.1%}" in html


def test_model_output_cannot_become_markup(cli, runs, tmp_path):
    # A rollout whose reply is hostile HTML: it must stay text (JSON in the page, shown via
    # textContent), not end the data block or add elements.
    run_dir = tmp_path / "run-hostile"
    shutil.copytree(runs["runs_dir"] / "run-policy-a", run_dir)
    lines = (run_dir / "rollouts.jsonl").read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if json.loads(line)["outcome"] == "fail")
    record = json.loads(lines[i])
    assert record["messages"][-1]["role"] == "assistant"
    record["messages"][-1]["content"] = "</script><script>window.pwned=1</script><img src=x onerror=alert(1)>"
    lines[i] = json.dumps(record)
    (run_dir / "rollouts.jsonl").write_text("\n".join(lines) + "\n")
    assert cli("report", run_dir, "--out", tmp_path / "h.html").exit_code == 0
    html = (tmp_path / "h.html").read_text()
    assert "</script><script>window.pwned" not in html
    scan = _Scan()
    scan.feed(html)
    assert len(scan.scripts) == 2 and scan.external == []
    if CHROMIUM:
        state = {}

        async def scenario(page: Page) -> None:
            await page.js("window.rlforgeReport.filters.q.value = 'pwned';"
                          "window.rlforgeReport.render();"
                          "document.querySelector('#rollouts tbody tr.r').click()")
            state["pwned"] = await page.js("window.pwned === 1")
            state["imgs"] = await page.js("document.querySelectorAll('img').length")
            state["text"] = await page.js("document.querySelector('.msg.assistant pre').textContent")

        page = asyncio.run(open_in_chromium(tmp_path / "h.html", scenario, tmp_path / "profile"))
        assert page.errors() == []
        assert state == {"pwned": False, "imgs": 0, "text": record["messages"][-1]["content"]}


@needs_chromium
def test_compare_shows_deltas_and_flipped_tasks(cli, runs, tmp_path):
    result = cli("report", "--compare", runs["runs"]["policy-a"], runs["runs"]["policy-b"],
                 "--runs-dir", runs["runs_dir"], "--out", tmp_path / "compare.html", "--json")
    assert result.exit_code == 0, result.output
    got = json.loads(result.output)
    a = records_of(runs["runs_dir"] / "run-policy-a")
    b = records_of(runs["runs_dir"] / "run-policy-b")

    def status(records):
        out = {}
        for t in {r["task_id"] for r in records}:
            valid = [r for r in records if r["task_id"] == t and r["outcome"] != "invalid"]
            passes = sum(r["outcome"] == "pass" for r in valid)
            out[t] = "invalid" if not valid else "pass" if passes * 2 >= len(valid) else "fail"
        return out

    sa, sb = status(a), status(b)
    flipped = {t for t in sa if {sa[t], sb.get(t)} == {"pass", "fail"}}
    assert flipped and {f["task_id"] for f in got["flips"]} == flipped
    assert got["fixed"] == sum(sb[t] == "pass" for t in flipped)
    total = next(g for g in got["generators"] if g["generator"] == "all")
    sum_a = json.loads((runs["runs_dir"] / "run-policy-a" / "summary.json").read_text())
    sum_b = json.loads((runs["runs_dir"] / "run-policy-b" / "summary.json").read_text())
    assert total["pass_rate"]["a"] == sum_a["pass_rate"] and total["pass_rate"]["b"] == sum_b["pass_rate"]
    assert total["pass_rate"]["delta"] == pytest.approx(sum_b["pass_rate"] - sum_a["pass_rate"])
    state = {}

    async def scenario(page: Page) -> None:
        state["flips"] = await page.js("document.querySelectorAll('#flips tbody tr').length")
        state["broken"] = await page.js("""(() => { const f = document.getElementById('f-dir');
            f.value = 'broken'; f.dispatchEvent(new Event('input'));
            return [...document.querySelectorAll('#flips tbody tr')].filter(r => r.style.display !== 'none').length; })()""")
        await screenshot(page, tmp_path / "compare.png")

    page = asyncio.run(open_in_chromium(tmp_path / "compare.html", scenario, tmp_path / "profile"))
    assert page.errors() == []
    assert state == {"flips": len(flipped), "broken": got["broken"]}


@needs_chromium
def test_multi_turn_rollouts_show_their_tool_calls(cli, terminal_run, tmp_path):
    assert report(cli, terminal_run, tmp_path / "t.html", "run-policy-t").exit_code == 0
    record = min(records_of(terminal_run["runs_dir"] / "run-policy-t"),
                 key=lambda r: (r["task_id"], r["rollout_id"]))  # the browser's first row
    state = {}

    async def scenario(page: Page) -> None:
        state["shown"] = await page.js("""(() => {
            document.querySelector('#rollouts tbody tr.r').click();
            return [...document.querySelectorAll('#rollouts tr.detail .msg')].map(
                m => [m.className, [...m.querySelectorAll('pre')].map(p => p.textContent)]); })()""")
        await screenshot(page, tmp_path / "report-multi-turn.png")

    page = asyncio.run(open_in_chromium(tmp_path / "t.html", scenario, tmp_path / "profile"))
    assert page.errors() == []
    shown = state["shown"]
    assert [c for c, _ in shown] == [f"msg {m['role']}" for m in record["messages"]]
    call = record["messages"][2]["tool_calls"][0]["function"]
    assert shown[2][1] == [f"→ bash {call['arguments']}"]
    assert shown[3][1] == [record["messages"][3]["content"]]  # the command's output


def test_report_cli_errors(cli, runs, tmp_path):
    both = cli("report", "x", "--compare", "a", "b", "--out", tmp_path / "r.html")
    assert both.exit_code == 2
    neither = cli("report", "--out", tmp_path / "r.html")
    assert neither.exit_code == 2 and "--compare" in neither.output
    missing = report(cli, runs, tmp_path / "r.html", "no-such-run")
    assert missing.exit_code == 1 and "no run 'no-such-run'" in missing.output
    (tmp_path / "dir.html").mkdir()
    into_dir = report(cli, runs, tmp_path / "dir.html", runs["runs"]["policy-a"])
    assert into_dir.exit_code == 1 and "is a directory" in into_dir.output


def test_readme_documents_the_export_and_report_commands():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for command in ("rlforge export tasks", "rlforge export rollouts", "rlforge report RUN_ID",
                    "rlforge report --compare"):
        assert f"| `{command}" in readme, f"{command} is missing from the README's command table"
    for fmt in ("`verl`", "`trl`", "`jsonl`", "`hf`", "`sft`", "`dpo`", "`grpo`"):
        assert f"| {fmt} |" in readme


def test_component_means_say_how_many_rollouts_they_are_over(tmp_path):
    # A component only some rollouts' rewards have is averaged over those: the page says
    # over how many, of how many valid rollouts of the generator.
    from rlforge.report import data as rd
    from rlforge.report.page import _components

    def rec(i, comps, outcome="pass"):
        return {"generator": "g.x@1", "outcome": outcome, "sample": i, "task_id": f"t{i}",
                "reward": {"total": 1.0, "components": {
                    n: {"value": v, "weight": 1.0, "level": "coarse", "gate": False}
                    for n, v in comps.items()}}}
    records = [rec(0, {"correct": 1.0, "overlap_f1": 0.5}), rec(1, {"correct": 0.0}),
               rec(2, {"correct": 1.0}), rec(3, {"correct": 1.0}, outcome="invalid")]
    data = rd.RunData("r", tmp_path, {"samples": 1}, records, {})
    means = {c["name"]: c for c in rd.component_means(data)["g.x@1"]}
    assert (means["correct"]["n"], means["correct"]["of"]) == (3, 3)
    assert (means["overlap_f1"]["n"], means["overlap_f1"]["of"], means["overlap_f1"]["mean"]) == (1, 3, 0.5)
    html = _components(data, {})
    assert "n = 3<" in html and "n = 1 of 3<" in html
    assert "over the 1 of 3 valid rollouts whose reward has it" in html


def test_report_shows_each_task_its_family_and_the_runs_gates(cli, runs, tmp_path):
    """Issue: no per-task view, no breakdown within a generator, no gates in the header."""
    import tomllib

    result = report(cli, runs, tmp_path / "r.html", runs["runs"]["policy-a"])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r.html").read_text()
    assert "infra errors ≤ 0.2" in html and "turns" in html  # the gates and the loop
    assert "By question family" in html
    kinds = set()
    for d in sorted(p for p in runs["tasks"].iterdir() if (p / "task.toml").is_file()):
        rl = tomllib.loads((d / "task.toml").read_text())["metadata"]["rlforge"]
        assert f"<code>{d.name}</code>" in html  # every task has its row
        assert rl["source_keys"][0] in html  # with the rows it was built from
        kinds |= {rl[k] for k in ("question_kind", "fact", "label_field") if k in rl}
    assert kinds and all(f"<td>{k}</td>" in html for k in kinds), kinds
