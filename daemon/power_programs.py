"""``wattsched-power suspend|resume|status HOSTLIST``: Slurm's ``SuspendProgram`` and
``ResumeProgram`` through wattsched's power drivers.

Slurm calls them with a host list (``n[2-3]``) as the only argument, with a minimal PATH and
with signals blocked; ``ResumeProgram`` also gets ``SLURM_RESUME_FILE`` (the jobs waiting for
the nodes). The commands clear the signal mask, read wattsched's config (``-c``,
``$WATTSCHED_CONFIG`` or ``/etc/wattsched/wattsched.toml``), build the ``[power]`` driver
(an ``ipmi-*`` one: ``rms`` would call Slurm back), journal every command in wattsched's store
before and after, switch the nodes in parallel with the retry policy, and exit 1 when a node
failed (Slurm logs it and, for a resume, marks the node down at ResumeTimeout).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from wattsched.daemon.cli_common import CliError, config_or_exit, fail, parse_nodes

log = logging.getLogger("wattsched.power")

app = typer.Typer(
    name="wattsched-power",
    help="Switch nodes through wattsched's power driver (Slurm Suspend/ResumeProgram).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
)

ConfigOpt = Annotated[
    Path | None, typer.Option("-c", "--config", help="wattsched config file (TOML).")
]
HostsArg = Annotated[str, typer.Argument(help="Host list, e.g. n[1-4,7] (as Slurm passes it).")]


def _prepare() -> None:
    # Slurm starts these programs with signals blocked; a child (ipmitool, ssh) would inherit
    # the mask. And with a PATH that lacks /usr/sbin.
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
    path = os.environ.get("PATH", "")
    for d in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if d not in path.split(":"):
            path = f"{path}:{d}" if path else d
    os.environ["PATH"] = path
    logging.basicConfig(level=logging.INFO, format="wattsched-power: %(levelname)s %(message)s")


def _switch(config: Path | None, hosts: str, on: bool) -> int:
    from wattsched.daemon.acting import Outcome
    from wattsched.daemon.config import ConfigError, load_config
    from wattsched.daemon.store import Store
    from wattsched.daemon.store_schema import make_engine
    from wattsched.powerctl.build import build_driver
    from wattsched.powerctl.drivers.base import PowerDriverConfigError
    from wattsched.powerctl.switching import Switcher

    _prepare()
    path = config_or_exit(config)
    try:
        nodes = parse_nodes(hosts)
        settings = load_config(path)
    except (CliError, ConfigError) as exc:
        raise fail(str(exc)) from None
    p = settings.power
    if p.driver == "rms":
        raise fail(
            f"{path}: [power] driver = 'rms' would ask Slurm to switch the nodes it asks us to "
            "switch; set an ipmi-* driver for Suspend/ResumeProgram"
        )
    try:
        driver = build_driver(p, connector=None, nodes=nodes)
    except PowerDriverConfigError as exc:
        raise fail(str(exc)) from None
    resume_file = os.environ.get("SLURM_RESUME_FILE")
    if on and resume_file:
        try:
            jobs = json.loads(Path(resume_file).read_text()).get("jobs", [])
            log.info("resume for %d job(s): %s", len(jobs), [j.get("job_id") for j in jobs])
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("SLURM_RESUME_FILE %s unreadable: %s", resume_file, exc)
    store = Store(make_engine(settings.database_url))
    kind = "power_on" if on else "power_off"
    now = int(time.time())
    ids = store.begin_actions([(kind, None, (n,)) for n in nodes], time_=now)
    switcher = Switcher(
        driver, max_parallel=p.max_parallel, attempts=p.attempts, backoff_s=p.retry_backoff_s
    )
    outcomes: list[Outcome] = []
    failed = 0
    try:
        results = switcher.run([(n, on) for n in nodes])
        for aid, r in zip(ids, results, strict=True):
            if r.ok:
                outcomes.append((aid, "done", f"slurm via {driver.name}", None))
            else:
                failed += 1
                outcomes.append((aid, "failed", None, f"{type(r.error).__name__}: {r.error}"))
                print(f"wattsched-power: {r.error}", file=sys.stderr)
    finally:
        store.finish_actions(outcomes)
        driver.close()
    log.info("%s %s: %d done, %d failed", kind, hosts, len(nodes) - failed, failed)
    return 1 if failed else 0


@app.command()
def suspend(hosts: HostsArg, config: ConfigOpt = None) -> None:
    """Switch the hosts off (Slurm's SuspendProgram)."""
    raise typer.Exit(_switch(config, hosts, on=False))


@app.command()
def resume(hosts: HostsArg, config: ConfigOpt = None) -> None:
    """Switch the hosts on (Slurm's ResumeProgram)."""
    raise typer.Exit(_switch(config, hosts, on=True))


@app.command()
def status(hosts: HostsArg, config: ConfigOpt = None) -> None:
    """Print each host's power as its BMC reports it (on, off, unknown)."""
    from wattsched.daemon.config import ConfigError, load_config
    from wattsched.powerctl.build import build_driver
    from wattsched.powerctl.drivers.base import PowerCommandError, PowerDriverConfigError

    _prepare()
    path = config_or_exit(config)
    try:
        nodes = parse_nodes(hosts)
        settings = load_config(path)
        driver = build_driver(settings.power, connector=None, nodes=nodes)
    except (CliError, ConfigError, PowerDriverConfigError) as exc:
        raise fail(str(exc)) from None
    bad = 0
    for n in nodes:
        try:
            st = driver.status(n)
            typer.echo(f"{n} {'unknown' if st is None else 'on' if st else 'off'}")
        except PowerCommandError as exc:
            bad += 1
            typer.echo(f"{n} error: {exc}")
    driver.close()
    raise typer.Exit(1 if bad else 0)


def main() -> None:
    """Entry point of the ``wattsched-power`` console script."""
    app()
