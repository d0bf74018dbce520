"""``wattsched simulate-daily``: the profit paper's daily replay of a trace, with cooling."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from wattsched.daemon.cli_common import fail
from wattsched.daemon.daily_replay import SCHEDULERS, DailyOptions, run_daily
from wattsched.daemon.simulate_cli import (
    CoresOpt,
    CoreWattsOpt,
    FormatOpt,
    JobPowerOpt,
    LimitOpt,
    MemOpt,
    NodesOpt,
    ProgressOpt,
    QueuesOpt,
    SeedOpt,
    SystemOpt,
    TraceFormat,
    TraceOpt,
    _assign_power,
    _load_jobs,
    load_system,
)

DAILY = SCHEDULERS
"""The ``simulate --dispatcher`` names routed to the daily replay."""


def simulate_as_daily(args: dict[str, Any]) -> None:
    """``wattsched simulate --dispatcher rules-est|...|relaxsearch``: the daily replay with
    the options of ``simulate`` that it shares; the others are refused by name."""
    from wattsched.daemon.simulate_cli import PowerPolicyName

    unused = [name for name, given in (
        ("--power-cap", args["power_cap"] is not None),
        ("--power-cap-file", args["power_cap_file"]),
        ("--offline", args["offline"]), ("--power-out", args["power_out"]),
        ("--plot", args["plot"]), ("--param", args["param"]),
        ("--power-policy", args["power_policy"] is not PowerPolicyName.NONE),
        ("--thermal", args.get("thermal")),
    ) if given]  # fmt: skip
    if unused:
        raise fail(f"error: --dispatcher {args['dispatcher']} (the daily replay) takes no "
                   + ", ".join(unused))  # fmt: skip
    simulate_daily(
        trace=args["trace"], scheduler=args["dispatcher"], metrics_out=args["metrics_out"],
        schedule_out=args["schedule_out"], fmt=args["fmt"], system=args["system"],
        nodes=args["nodes"], cores=args["cores"], mem_mb=args["mem_mb"], queues=args["queues"],
        job_power=args["job_power"], core_watts=args["core_watts"], seed=args["seed"],
        strict=args["strict"], cooling="air" if args["cooling"] == "none" else args["cooling"],
        season=args["season"], temperature=args["temperature"], prices=args["prices"],
        runtime=str(args["runtime"] or "real"), limit_jobs=args["limit_jobs"],
        progress=args["progress"],
    )  # fmt: skip


def register(app: typer.Typer) -> None:
    """Add the command to the main app."""
    app.command("simulate-daily")(simulate_daily)


def simulate_daily(
    trace: TraceOpt,
    scheduler: Annotated[str, typer.Option(help=", ".join(SCHEDULERS))],
    metrics_out: Annotated[Path, typer.Option(help="Metrics JSON to write.")],
    schedule_out: Annotated[Path | None, typer.Option(help="Schedule CSV to write.")] = None,
    fmt: FormatOpt = TraceFormat.SWF,
    system: SystemOpt = None,
    nodes: NodesOpt = None,
    cores: CoresOpt = None,
    mem_mb: MemOpt = None,
    queues: QueuesOpt = None,
    job_power: JobPowerOpt = None,
    core_watts: CoreWattsOpt = None,
    seed: SeedOpt = 0,
    strict: Annotated[bool, typer.Option(help="Rule-based: strict order (no overtaking).")] = False,
    cooling: Annotated[str, typer.Option(help="air or hybrid (built-in PUE tables).")] = "air",
    pue_table: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="Own PUE table CSV.")
    ] = None,
    season: Annotated[str, typer.Option(help="winter or summer (built-in days).")] = "summer",
    temperature: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="time,celsius CSV.")
    ] = None,
    prices: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="Prices TOML.")
    ] = None,
    runtime: Annotated[str, typer.Option(help="real (trace runtime) or walltime.")] = "real",
    slot_s: Annotated[int, typer.Option(min=1, help="Time grid of the day schedule (s).")] = 60,
    workers: Annotated[int | None, typer.Option(min=1, help="MultiSearch processes.")] = None,
    delay_time_s: Annotated[float, typer.Option(min=0, help="DelaySearch seconds per day.")] = 10.0,
    horizon_days: Annotated[
        int | None,
        typer.Option(min=1, help="Profit horizon in days (default: the days of submissions)."),
    ] = None,
    relax_time_s: Annotated[
        float, typer.Option(min=0.01, help="RelaxationSearch CP-SAT seconds per day.")
    ] = 10.0,
    days: Annotated[
        int | None,
        typer.Option(min=1, help="Stop after this many days (the profit horizon needs no more)."),
    ] = None,
    limit_jobs: LimitOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Schedule each day's jobs at midnight; write profit, cooling and wait metrics."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from wattsched.connectors.traces.cooling_files import (
        builtin_pue_table,
        read_prices,
        read_pue_table,
        temperature_source,
    )
    from wattsched.connectors.traces.errors import TraceError
    from wattsched.scheduler.cooling import CoolingModel
    from wattsched.scheduler.profit import Prices

    try:
        node_list = load_system(system, nodes, cores, mem_mb, fmt)
        jobs, _, _ = _load_jobs(trace, fmt, node_list, queues, limit_jobs)
        jobs = _assign_power(jobs, job_power, core_watts, seed)
        table = read_pue_table(pue_table) if pue_table else builtin_pue_table(cooling)
        model = CoolingModel(temperature_source(season, temperature), table)
        price = read_prices(prices) if prices else Prices()
        opts = DailyOptions(
            scheduler, strict=strict, runtime=runtime, slot_s=slot_s, workers=workers,
            delay_time_s=delay_time_s, horizon_days=horizon_days, relax_time_s=relax_time_s,
            max_days=days,
        )  # fmt: skip
    except (TraceError, ValueError) as exc:
        raise fail(f"error: {exc}") from None
    console = Console(stderr=True)
    with Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console, disable=not progress,
    ) as bar:  # fmt: skip
        task = bar.add_task(f"days of {scheduler}", total=len(jobs))
        try:
            rolling, _, metrics = run_daily(
                node_list, jobs, opts, model, price,
                progress=lambda done, total: bar.update(task, completed=done),
            )  # fmt: skip
        except ValueError as exc:
            raise fail(f"error: {exc}") from None
    metrics.update({"cooling": pue_table.name if pue_table else cooling,
                    "temperature": temperature.name if temperature else season})  # fmt: skip
    metrics_out.write_text(json.dumps(metrics, indent=2) + "\n")
    if schedule_out is not None:
        with schedule_out.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("job_id", "submit", "start", "end", "units", "nodes"))
            for p in rolling.placed:
                w.writerow((p.job.id, p.job.submit, p.start, p.end, p.job.units, " ".join(p.nodes)))
    console.print(
        f"{metrics['jobs']} jobs over {metrics['days']} days: profit {metrics['profit']:,.2f}, "
        f"mean PUE {metrics['mean_pue']:.3f}, makespan {metrics['makespan_s']:.0f} s, "
        f"scheduler {metrics['day_seconds_mean']:.2f} s a day "
        f"(max {metrics['day_seconds_max']:.2f})"
    )
