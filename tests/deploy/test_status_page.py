"""The status page ``GET /ui`` in real headless Chromium (Debian ``chromium``, driven by
Playwright with ``executable_path``; never a downloaded browser) against a real
``wattsched serve`` on a simulated cluster (``ui_cluster.py``)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from daemon_proc import TOKEN, Daemon, run_cli, serve
from ui_cluster import NODES, XSS_JOB, XSS_USER, write_cluster

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """``wattsched serve`` on the small cluster, after its first plans."""
    root = tmp_path_factory.mktemp("ui-daemon")
    cfg = write_cluster(root)
    migrated = run_cli("migrate", "-c", str(cfg))
    assert migrated.returncode == 0, migrated.stderr
    with serve(cfg, root / "log") as d:
        until(lambda: xss_job_state(d) == "queued", 30, "the markup job queued")
        yield d


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium under Playwright (skips with the reason when absent)."""
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.skip("Chromium unavailable: Debian package chromium is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Chromium unavailable: the playwright package is not installed (dev extra)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, daemon: Daemon) -> Iterator[Any]:
    """The status page, polling every 300 ms, after its first update; dialogs recorded.

    The page's Content-Security-Policy is bypassed: Playwright's waits evaluate strings, and
    without the policy a markup injection would run (the markup test would catch it)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, bypass_csp=True)
    pg = ctx.new_page()
    pg.dialogs = []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(f"{daemon.url}/ui?poll=300")
    pg.wait_for_function("Number(document.body.dataset.updates) >= 1", timeout=15000)
    try:
        yield pg
    finally:
        ctx.close()


def xss_job_state(d: Daemon) -> str | None:
    """The state of the job with markup in its id (None before it arrives)."""
    page = d.get("/jobs", params={"limit": 1000}).json()
    return next((j["state"] for j in page["items"] if j["id"] == XSS_JOB), None)


def until(cond: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``cond()`` until it is true."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def shown_watts(pg: Any, sel: str) -> tuple[str, str]:
    """The text and the raw ``data-watts`` of a power figure."""
    loc = pg.locator(sel)
    return loc.inner_text(), loc.get_attribute("data-watts") or ""


def matches_status(pg: Any, daemon: Daemon) -> bool:
    """The page's power and cap are those of /status (the next poll has caught up)."""
    st = daemon.get("/status").json()
    power, power_raw = shown_watts(pg, "#power")
    cap, cap_raw = shown_watts(pg, "#cap")
    return (
        power_raw != ""
        and float(power_raw) == st["power_w"]
        and power == f"{round(st['power_w'])} W"
        and cap_raw != ""
        and float(cap_raw) == st["cap_w"]
        and cap == f"{round(st['cap_w'])} W"
    )


def matches_cooling(pg: Any, daemon: Daemon) -> bool:
    """The page shows the PUE, cooling power and outside temperature of /status."""
    st = daemon.get("/status").json()
    assert st["pue"] is not None  # the test cluster has a [cooling] table
    return (
        pg.locator("#cooling").is_visible()
        and float(pg.locator("#pue").get_attribute("data-value") or "nan") == st["pue"]
        and pg.locator("#pue").inner_text() == f"{st['pue']:.3f}"
        and float(shown_watts(pg, "#cooling-w")[1] or "nan") == st["cooling_w"]
        and pg.locator("#celsius").inner_text() == f"{st['celsius']:.1f} °C"
    )


def test_page_shows_nodes_power_cap_and_one_bar_per_planned_job(
    page: Any, daemon: Daemon, tmp_path: Path
) -> None:
    nodes = daemon.get("/nodes").json()
    assert len(nodes) == NODES
    assert page.locator("#node-map .node").count() == NODES
    shown = {
        page.locator("#node-map .node").nth(i).get_attribute("data-name") for i in range(NODES)
    }
    assert shown == {n["name"] for n in nodes}
    until(lambda: matches_status(page, daemon), 10, "power and cap as /status")
    until(lambda: matches_cooling(page, daemon), 10, "PUE, cooling and outside temperature")
    # [thermal]: each node square carries its outlet temperature (a model figure here).
    outlets = page.eval_on_selector_all(
        "#node-map .node", "cs => cs.map(c => [c.dataset.outletCelsius, c.title])"
    )
    assert len(outlets) == NODES
    for celsius, title in outlets:
        assert celsius is not None and 20.0 <= float(celsius) < 100.0
        assert "outlet" in title and "(model)" in title

    def bars_match_plan() -> bool:
        plan = daemon.get("/plan").json()
        bars = page.eval_on_selector_all("#gantt rect.bar", "rs => rs.map(r => r.dataset.job)")
        return bool(plan["entries"]) and sorted(bars) == sorted(
            e["job_id"] for e in plan["entries"]
        )

    until(bars_match_plan, 10, "one Gantt bar per planned job")
    queued = daemon.get("/jobs", params={"state": "queued"}).json()["total"]
    assert page.locator("#queue tbody tr").count() == queued
    assert page.locator("#actions tbody tr").count() > 0  # the first cycle's starts
    shot = tmp_path / "status-page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert not page.errors, page.errors


def test_markup_in_job_names_is_shown_as_text(page: Any, daemon: Daemon) -> None:
    cells = page.locator("#queue tbody tr td:first-child").all_inner_texts()
    assert XSS_JOB in cells
    users = page.locator("#queue tbody tr td:nth-child(2)").all_inner_texts()
    assert XSS_USER in users
    labels = page.eval_on_selector_all("#gantt text.job-label", "ts => ts.map(t => t.textContent)")
    assert XSS_JOB in labels
    # Nothing was parsed as markup: one script (the page's), no image, nothing ran.
    assert page.evaluate("document.scripts.length") == 1
    assert page.locator("img").count() == 0
    assert page.evaluate("window.xss") is None
    assert page.dialogs == []


def test_cap_control_refuses_without_the_token_and_works_with_it(page: Any, daemon: Daemon) -> None:
    before = daemon.get("/status").json()["cap_w"]
    assert page.locator("#cap-set").is_disabled()
    assert page.locator("#cap-input").is_disabled()
    assert page.locator("#mode-set").is_disabled()
    # Forced past the disabled controls, the request goes without a token: the daemon refuses.
    page.evaluate(
        "for (const id of ['cap-input', 'cap-set']) document.getElementById(id).disabled = false"
    )
    page.fill("#cap-input", "250")
    page.click("#cap-set")
    page.wait_for_function("document.getElementById('control-msg').textContent.includes('HTTP')")
    assert "refused (HTTP 401)" in page.inner_text("#control-msg")
    assert daemon.get("/status").json()["cap_w"] == before
    # A wrong token: 403.
    page.fill("#token", "wrong-token-0123456789abcdef")
    page.click("#unlock")
    assert page.locator("#cap-set").is_enabled()
    page.fill("#cap-input", "250")
    page.click("#cap-set")
    page.wait_for_function("document.getElementById('control-msg').textContent.includes('403')")
    assert "refused (HTTP 403)" in page.inner_text("#control-msg")
    assert daemon.get("/status").json()["cap_w"] == before
    # The token: the cap changes, and the page follows /status.
    page.click("#lock")
    page.fill("#token", TOKEN)
    page.click("#unlock")
    page.fill("#cap-input", "250")
    page.click("#cap-set")
    page.wait_for_function("document.getElementById('control-msg').textContent.includes('done')")
    until(lambda: daemon.get("/status").json()["cap_w"] == 250.0, 10, "the cap in /status")
    until(lambda: matches_status(page, daemon), 10, "the page showing the new cap")
    actions = daemon.get("/actions", params={"newest_first": "true", "limit": 5}).json()
    assert any(a["kind"] == "setting" and "power_cap_w" in (a["result"] or "") for a in actions)
    # The mode control too, then back.
    page.select_option("#mode-input", "advise")
    # Polls come between the choice and the click (as they do for a slow operator, or on a
    # loaded machine): they must not put the mode shown by /status back into the control.
    page.evaluate("document.activeElement.blur()")
    n = int(page.evaluate("document.body.dataset.updates"))
    page.wait_for_function(f"Number(document.body.dataset.updates) >= {n + 2}")
    assert page.input_value("#mode-input") == "advise"
    page.click("#mode-set")
    until(lambda: daemon.get("/status").json()["mode"] == "advise", 10, "advise mode")
    page.wait_for_function("document.getElementById('mode').textContent === 'advise'")
    # Put the settings back for the other tests of the module.
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx2.delete(f"{daemon.url}/config/overrides", headers=auth).status_code == 200
