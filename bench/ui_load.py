"""Benchmark of the status page: load to first paint in headless Chromium.

The daemon's app (``create_app``) serves a simulated cluster of 300 nodes x 32 cores with
1,000 queued jobs (advise mode: they stay queued; the plan places all of them), under
uvicorn in its own process on loopback. Debian's Chromium (driven by Playwright with
``executable_path``; never a downloaded browser) opens ``/ui`` ``--loads`` times, each in a
fresh context (no cache), and the page's own Performance entries give:

- first paint and first contentful paint (the page's frame: header, cards);
- first data and first render: the ``wattsched-first-data`` and ``wattsched-first-render``
  marks ``ui.js`` sets once the six API answers are in, and once they are drawn (nodes map,
  Gantt chart of the whole plan, queue, actions, power chart).

Writes a Markdown table to ``--out`` (default ``bench/results/ui_load.md``). Goal: under 1 s.

    .venv/bin/python bench/ui_load.py
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import socket
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from daemon_cycle import provenance

from wattsched.connectors.simulated import SimulatedCluster
from wattsched.daemon.api.app import create_app
from wattsched.daemon.config import Settings
from wattsched.daemon.loop import Service
from wattsched.daemon.store import Store
from wattsched.daemon.store_schema import make_engine, migrate
from wattsched.scheduler import dispatcher as dispatchers
from wattsched.scheduler.model import Job, Node, NodePowerModel, PowerCap, Resources

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip


def workload(n_nodes: int, n_jobs: int) -> SimulatedCluster:
    """``n_nodes`` x 32 cores; ``n_jobs`` jobs of 1-4 units queued at t=0 (deterministic)."""
    power = NodePowerModel(idle_w=95, core_w=3)
    nodes = [Node(f"c{i:04d}", Resources(cores=32, mem_mb=128_000), power=power)
             for i in range(n_nodes)]  # fmt: skip
    jobs = [
        Job(
            str(i + 1),
            submit=0,
            walltime=(600, 1800, 3600, 7200)[i % 4],
            units=(1, 1, 2, 4)[i % 4],
            unit=Resources(cores=(8, 16, 32)[i % 3], mem_mb=8000),
            runtime=600,
            queue="batch",
            ewt=3600,
            user=f"user{i % 17}",
        )
        for i in range(n_jobs)
    ]
    return SimulatedCluster(nodes, jobs, start_time=0)


def serve(root: Path, n_nodes: int, n_jobs: int, cap_w: float) -> tuple[str, Any, dict[str, Any]]:
    """The app after two advise cycles, under uvicorn in a forked process; its URL."""
    engine = make_engine(f"sqlite:///{root / 'ui.db'}")
    migrate(engine)
    svc = Service(
        workload(n_nodes, n_jobs),
        dispatchers.create("prb", full_plan=True),
        Store(engine),
        mode="advise",
        cap=PowerCap.constant(cap_w),
        cycle_seconds=3600,  # no loop runs: the page reads what the two cycles recorded
    )
    for _ in range(2):
        assert svc.run_now().ok
    token = root / "token"
    token.write_text("bench-token-0123456789abcdef")
    token.chmod(0o600)
    app = create_app(Settings(connector={"kind": "slurm"}, api={"token_file": token}), svc)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    proc = multiprocessing.get_context("fork").Process(target=server.run, daemon=True)
    proc.start()
    url = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            httpx2.get(f"{url}/health", timeout=1)
            break
        except httpx2.HTTPError:
            time.sleep(0.05)
    sizes = {
        "nodes": len(httpx2.get(f"{url}/nodes").json()),
        "queued": httpx2.get(f"{url}/jobs", params={"state": "queued"}).json()["total"],
        "planned": len(httpx2.get(f"{url}/plan").json()["entries"]),
    }
    return url, proc, sizes


def measure(url: str, loads: int) -> tuple[list[dict[str, float]], dict[str, int]]:
    """``loads`` page loads, each in a fresh context; their paint and render times (ms)."""
    from playwright.sync_api import sync_playwright

    out: list[dict[str, float]] = []
    drawn: dict[str, int] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            for _ in range(loads + 1):  # the first load warms the browser and the server
                ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                page = ctx.new_page()
                t0 = time.perf_counter()
                page.goto(f"{url}/ui?poll=600000")
                page.wait_for_selector("body[data-updates='1']", timeout=30000)
                wall = (time.perf_counter() - t0) * 1000
                times = page.evaluate(
                    """() => {
                      const t = {};
                      for (const e of performance.getEntriesByType('paint')) {
                        t[e.name] = e.startTime;
                      }
                      const mark = (n) => performance.getEntriesByName(n)[0]?.startTime ?? NaN;
                      t.data = mark('wattsched-first-data');
                      t.render = mark('wattsched-first-render');
                      return t;
                    }"""
                )
                drawn = page.evaluate(
                    """() => ({
                      nodes: document.querySelectorAll('#node-map .node').length,
                      bars: document.querySelectorAll('#gantt rect.bar').length,
                      queue_rows: document.querySelectorAll('#queue tbody tr').length,
                    })"""
                )
                out.append(
                    {
                        "fp": times.get("first-paint", float("nan")),
                        "fcp": times.get("first-contentful-paint", float("nan")),
                        "data": times["data"],
                        "render": times["render"],
                        "draw": times["render"] - times["data"],
                        "wall": wall,
                    }
                )
                ctx.close()
        finally:
            browser.close()
    return out[1:], drawn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--cap-w", type=float, default=45_000.0)
    ap.add_argument("--loads", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "ui_load.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url, proc, sizes = serve(Path(tmp), args.nodes, args.jobs, args.cap_w)
        try:
            runs, drawn = measure(url, args.loads)
        finally:
            proc.terminate()
            proc.join(10)
    load = os.getloadavg()
    lines = [
        "# Status page benchmark: load to first paint (headless Chromium)",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, {platform.platform()}; load average at the end "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"
        + (" (other work shared the machine)" if load[0] > (os.cpu_count() or 1) else ""),
        f"- browser: Debian {CHROMIUM} headless, driven by Playwright; a fresh context "
        "(empty cache) per load, one warm-up load not counted",
        f"- code: {provenance()}",
        f"- command: `.venv/bin/python bench/ui_load.py --nodes {args.nodes} --jobs {args.jobs} "
        f"--cap-w {args.cap_w:g} --loads {args.loads}`",
        f"- served: {sizes['nodes']} nodes, {sizes['queued']} queued jobs, {sizes['planned']} "
        "in the plan (advise mode); drawn by the page: "
        f"{drawn['nodes']} node cells, {drawn['bars']} Gantt bars, {drawn['queue_rows']} queue "
        "rows (the first 200 of the queue)",
        "",
        "| measure (ms after navigation start) | p50 | max | mean | p50 under 1 s |",
        "|---|---|---|---|---|",
    ]
    labels = {
        "fp": "first paint",
        "fcp": "first contentful paint",
        "data": "the six API answers received",
        "render": "first render with the data (all six API answers drawn)",
        "draw": "of which drawing (render minus answers received)",
        "wall": "goto() to data drawn, seen from the test driver",
    }
    for key, label in labels.items():
        xs = [r[key] for r in runs]
        lines.append(
            f"| {label} | {statistics.median(xs):.0f} | {max(xs):.0f} | "
            f"{statistics.mean(xs):.0f} | {'yes' if statistics.median(xs) < 1000 else 'no'} |"
        )
    lines += [
        "",
        "Goal: under 1 s on loopback. The page is three static files (no library, no build); "
        "its first paint waits only for them, and the data render for the six parallel GETs "
        "(`/status`, `/nodes`, `/jobs?state=queued&limit=200`, `/plan`, `/power`, "
        "`/actions?newest_first=true&limit=50`) and drawing them as DOM and inline SVG. The "
        "last row adds the driver's own round trips (Playwright's commands to the browser and "
        "its polling for the page's `data-updates`): an upper bound, not what a person sees.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
