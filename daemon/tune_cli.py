"""``wattsched tune``: NSGA-II over the HGFS node power policy by replay; ``wattsched tune
pick``: the administrator's choice from the front, written as the daemon's HGFS parameter
file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from wattsched.daemon.cli_common import fail
from wattsched.daemon.simulate_cli import (
    CoresOpt,
    FormatOpt,
    NodesOpt,
    SystemOpt,
    TraceFormat,
    _load_jobs,
    load_system,
)

app = typer.Typer(
    help="Tune the HGFS node power policy by replay (NSGA-II), then pick from the front.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def register(main: typer.Typer) -> None:
    """Add ``tune`` and ``tune pick`` to the main app."""
    main.add_typer(app, name="tune")


def _workloads(
    trace: Path, fmt: TraceFormat, system: Path | None, nodes: int | None, cores: int | None,
    max_jobs: int | None, power_failure_p: float = 0.0, seed: int = 0,
) -> tuple[Any, Any, Any]:  # fmt: skip
    from wattsched.powerctl.tuning.evaluate import Workload, split_in_time

    node_list = load_system(system, nodes, cores, None, fmt)
    jobs, _, _ = _load_jobs(trace, fmt, node_list, None, None)
    jobs = sorted(jobs, key=lambda j: (j.submit, j.id))
    if max_jobs is not None:
        jobs = jobs[:max_jobs]
    parts = split_in_time(trace.name, jobs)
    names = ("train", "validation", "test")
    return tuple(
        Workload(
            f"{trace.name}:{n}",
            tuple(node_list),
            tuple(p),
            power_failure_p=power_failure_p,
            seed=seed,
        )
        for n, p in zip(names, parts, strict=True)
    )


@app.callback(invoke_without_command=True)
def tune(
    ctx: typer.Context,
    trace: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="Workload file.")
    ] = None,
    fmt: FormatOpt = TraceFormat.SWF,
    system: SystemOpt = None,
    nodes: NodesOpt = None,
    cores: CoresOpt = None,
    max_jobs: Annotated[
        int | None, typer.Option(min=60, help="First N jobs of the trace (default 1000).")
    ] = 1000,
    population: Annotated[int, typer.Option(min=4, max=1000)] = 16,
    generations: Annotated[int, typer.Option(min=1, max=1000)] = 6,
    seed: Annotated[int, typer.Option(help="Makes a run repeatable.")] = 1,
    n_sets: Annotated[int, typer.Option(min=1, max=8, help="Fuzzy sets over idle time.")] = 3,
    workers: Annotated[int, typer.Option(min=1, help="Replay processes.")] = os.cpu_count() or 1,
    dask_scheduler: Annotated[
        str | None, typer.Option(help="tcp://HOST:PORT of a Dask scheduler (replays there).")
    ] = None,
    dispatcher: Annotated[str, typer.Option(help="Dispatcher of the replays.")] = "easy",
    out: Annotated[Path, typer.Option(help="Front JSON to write.")] = Path("front.json"),
    plot: Annotated[Path | None, typer.Option(help="Plot PNG (default: next to --out).")] = None,
    progress: Annotated[bool, typer.Option(help="Progress bar on stderr.")] = True,
    power_failure_p: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="Probability that a power command fails in the replays."
        ),
    ] = 0.0,
) -> None:
    """NSGA-II over the HGFS parameters: train on the first 50 % of the jobs (by submit
    time), report the front on the next 25 % (validation); the last 25 % is kept for pick."""
    if ctx.invoked_subcommand is not None:
        return
    if trace is None:
        raise fail("give the workload with --trace FILE (and --system or --nodes/--cores)")
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from wattsched.connectors.traces.errors import TraceError
    from wattsched.powerctl.tuning.front import front_json, plot_front
    from wattsched.powerctl.tuning.search import tune as run_tune

    try:
        train, validation, test = _workloads(
            trace, fmt, system, nodes, cores, max_jobs, power_failure_p, seed
        )
    except (TraceError, ValueError) as exc:
        raise fail(f"error: {exc}") from None
    console = Console(stderr=True)
    with Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console, disable=not progress,
    ) as bar:  # fmt: skip
        task = bar.add_task("generations", total=generations)
        result = run_tune(
            train, validation, population=population, generations=generations, seed=seed,
            n_sets=n_sets, workers=workers, dispatcher=dispatcher,
            dask_scheduler=dask_scheduler,
            progress=lambda g, n: bar.update(task, completed=g),
        )  # fmt: skip
    source = {
        "trace": str(trace.resolve()), "format": fmt.value,
        "system": str(system.resolve()) if system else None, "nodes": nodes, "cores": cores,
        "max_jobs": max_jobs, "split": [0.5, 0.25, 0.25], "seed": seed,
        "population": population, "generations": generations, "dispatcher": dispatcher,
        "power_failure_p": power_failure_p,
        "jobs": [len(train.jobs), len(validation.jobs), len(test.jobs)],
    }  # fmt: skip
    doc = front_json(result, source)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    plot_path = plot or out.with_suffix(".png")
    plot_front(doc, plot_path)
    console.print(
        f"{len(result.points)} points on the front after {result.evaluations} replays: "
        f"{out} (plot {plot_path}); energy saved is EECluster's equation (4) (idle W x time "
        "off, % of idle W x span; the physical saving, % of always-on energy, beside it); "
        f"without delaying jobs, at most {100 * result.ceiling['validation']:.1f} % is there to "
        f"save on validation ({100 * result.ceiling_physical['validation']:.1f} % physical; "
        "every idle node off, for free)"
    )


@app.command("pick")
def pick_cmd(
    front: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Front JSON.")],
    qos: Annotated[float, typer.Option(min=0, help="Highest validation QoS accepted.")],
    reconfig: Annotated[
        float, typer.Option(min=0, help="Most reconfigurations accepted (validation).")
    ],
    out: Annotated[Path, typer.Option(help="HGFS parameter file to write.")] = Path(
        "hgfs-params.json"
    ),
) -> None:
    """The point with the most energy saved within the bounds (on validation), replayed on
    the test part, written as the HGFS parameter file the daemon loads."""
    from wattsched.powerctl.hgfs import HGFSParams
    from wattsched.powerctl.tuning.evaluate import evaluate
    from wattsched.powerctl.tuning.front import PickError, load_front, measure_of, pick
    from wattsched.powerctl.tuning.measures import PAPER, PHYSICAL

    try:
        doc = load_front(front)
        chosen = pick(doc, qos, reconfig)
    except (ValueError, PickError) as exc:
        raise fail(f"error: {exc}", 1) from None
    src = doc["source"]
    p = chosen["params"]
    params = HGFSParams(**{**p, "centers": tuple(p["centers"]), "weights": tuple(p["weights"])})
    try:
        fmt = TraceFormat(src["format"])
        _, _, test = _workloads(
            Path(src["trace"]), fmt, Path(src["system"]) if src["system"] else None,
            src["nodes"], src["cores"], src["max_jobs"],
            src.get("power_failure_p", 0.0), src.get("seed", 0),
        )  # fmt: skip
    except (OSError, ValueError) as exc:
        raise fail(f"error: cannot rebuild the test part from {front}: {exc}") from None
    on_test = evaluate(test, params, dispatcher=src.get("dispatcher", "easy"))
    m = measure_of(doc)
    report = {
        "params": p, "measure": m, "bounds": {"qos": qos, "reconfigurations": reconfig},
        "validation": chosen["validation"], "test": on_test.to_json(),
    }  # fmt: skip
    out.write_text(json.dumps(report, indent=1) + "\n")
    typer.echo(
        f"picked (by {m}): validation QoS {chosen['validation']['qos_p90']:.3g}, "
        f"{chosen['validation']['reconfigurations']} reconfigurations, "
        f"{100 * chosen['validation'][m]:.1f} % saved; on test: QoS "
        f"{on_test.qos_p90:.3g}, {on_test.reconfigurations} reconfigurations, "
        f"{100 * on_test.saved(PAPER):.1f} % saved as EECluster's eq. (4), "
        f"{100 * on_test.saved(PHYSICAL):.1f} % physical ({on_test.saved_kwh:.1f} kWh) -> {out}"
    )


@app.command("scenario")
def scenario_cmd(
    number: Annotated[int, typer.Argument(min=1, max=4, help="EECluster scenario, 1-4.")],
    out: Annotated[Path, typer.Option(help="SWF trace to write.")],
    months: Annotated[float, typer.Option(min=0.1, max=120, help="Span (months of 730 h).")] = 24,
    seed: Annotated[int, typer.Option(help="Makes the trace repeatable.")] = 1,
    gap_scale: Annotated[
        float,
        typer.Option(
            min=0.01, max=100, help="Mean times between arrivals x this (2: half the load)."
        ),
    ] = 1.0,
) -> None:
    """Write one of EECluster's four synthetic workloads as SWF, for the 16 x 8-core
    cluster of ``deploy/systems/eecluster-16x8.toml`` (rates and sizes:
    ``powerctl/tuning/scenarios.py``)."""
    from wattsched.powerctl.tuning.scenarios import generate, write_swf

    jobs = generate(number, months, seed, gap_scale)
    write_swf(out, jobs, number, seed, gap_scale)
    typer.echo(f"scenario {number}: {len(jobs)} jobs over {months:g} months -> {out}")
