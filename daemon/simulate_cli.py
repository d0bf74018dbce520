"""``wattsched simulate``: replay a trace through the control cycle on a simulated cluster."""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path
from typing import Annotated, Any

import typer

from wattsched.daemon.simulate_inputs import (  # re-exported: the benches and tuner use them
    TraceFormat,
    _assign_power,
    _fail,
    _load_cap,
    _load_jobs,
    _parse_params,
    load_system,
)
from wattsched.powerctl.policy import PowerPolicy
from wattsched.scheduler.model import Job, Node, PowerCap


class RuntimeSource(enum.StrEnum):
    """Where a replayed job's run time comes from."""

    WALLTIME = "walltime"
    REAL = "real"


class PowerPolicyName(enum.StrEnum):
    """The node power policies ``simulate`` can apply (``none``: nodes stay as they are)."""

    NONE = "none"
    IDLE = "idle"
    HGFS = "hgfs"


def make_power_policy(name: PowerPolicyName, idle_s: int) -> PowerPolicy | None:
    """The policy named ``name`` with its defaults (``idle_s`` for the idle timeout)."""
    from wattsched.powerctl.registry import make_power_policy as make

    return make(name.value, idle_s)


TraceOpt = Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Workload file.")]
FormatOpt = Annotated[TraceFormat, typer.Option("--format", help="Trace format.")]
SystemOpt = Annotated[
    Path | None,
    typer.Option(exists=True, dir_okay=False, help="System TOML, or a Eurora nodes_#N file."),
]
NodesOpt = Annotated[int | None, typer.Option(min=1, help="Homogeneous nodes (with --cores).")]
CoresOpt = Annotated[int | None, typer.Option(min=1, help="Cores per node.")]
MemOpt = Annotated[int | None, typer.Option(min=0, help="Memory per node (MB).")]
QueuesOpt = Annotated[
    Path | None, typer.Option(exists=True, dir_okay=False, help="Eurora system_queues file.")
]
JobPowerOpt = Annotated[
    Path | None, typer.Option(exists=True, dir_okay=False, help="Per-job power table.")
]
CoreWattsOpt = Annotated[
    str | None, typer.Option(help="Per-core job power drawn uniformly, LO:HI watts.")
]
SeedOpt = Annotated[int, typer.Option(help="Seed for drawn job powers.")]
LimitOpt = Annotated[int | None, typer.Option(min=1, help="Read only N jobs.")]
ProgressOpt = Annotated[bool, typer.Option(help="Show a progress bar on stderr.")]
"""The workload and machine options ``simulate`` and ``simulate-daily`` share."""


def register(app: typer.Typer) -> None:
    """Add the simulate command to the main app."""
    app.command("simulate")(simulate)


def simulate(
    trace: TraceOpt,
    dispatcher: Annotated[
        str, typer.Option(help="fifo, easy, prb, prb-reserve, hybrid, hybrid-nofb, profit.")
    ],
    metrics_out: Annotated[Path, typer.Option(help="Metrics JSON to write.")],
    schedule_out: Annotated[Path, typer.Option(help="Schedule CSV to write.")],
    fmt: FormatOpt = TraceFormat.SWF,
    system: SystemOpt = None,
    nodes: NodesOpt = None,
    cores: CoresOpt = None,
    mem_mb: MemOpt = None,
    queues: QueuesOpt = None,
    job_power: JobPowerOpt = None,
    core_watts: CoreWattsOpt = None,
    power_cap: Annotated[float | None, typer.Option(min=0, help="Constant power cap (W).")] = None,
    power_cap_file: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="offset;watts cap profile.")
    ] = None,
    offline: Annotated[bool, typer.Option(help="Submit every job at time 0.")] = False,
    runtime: Annotated[
        RuntimeSource | None,
        typer.Option(
            help="How long jobs run: walltime (the paper's offline protocol; the default with "
            "--offline) or real (the trace's runtimes; the default otherwise)."
        ),
    ] = None,
    seed: SeedOpt = 0,
    limit_jobs: LimitOpt = None,
    power_out: Annotated[Path | None, typer.Option(help="Power CSV to write.")] = None,
    plot: Annotated[Path | None, typer.Option(help="PNG plot to write.")] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", help="Dispatcher parameter KEY=VALUE.")
    ] = None,
    progress: ProgressOpt = True,
    power_policy: Annotated[
        PowerPolicyName, typer.Option(help="Node power policy: none, idle (timeout) or hgfs.")
    ] = PowerPolicyName.NONE,
    idle_s: Annotated[
        int, typer.Option(min=0, help="Idle seconds before power-off (--power-policy idle).")
    ] = 1800,
    cooling: Annotated[
        str, typer.Option(help="none, air or hybrid: add profit, PUE and cooling metrics.")
    ] = "none",
    season: Annotated[str, typer.Option(help="winter or summer (with --cooling).")] = "summer",
    strict: Annotated[bool, typer.Option(help="Daily rules-*: strict order.")] = False,
    temperature: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="Daily: time,celsius CSV.")
    ] = None,
    prices: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="Daily: prices TOML.")
    ] = None,
    thermal: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Thermal TOML (docs/thermal.md): node temperatures "
            "and the thermal guard around the dispatcher.",
        ),
    ] = None,
) -> None:
    """Replay a trace through the control cycle and write metrics, schedule, power and plot.

    The profit paper's daily schedulers (rules-est, rules-wt, rules-profit, multisearch,
    delaysearch, relaxsearch) run the daily rolling replay instead (``simulate-daily``)."""
    from wattsched.daemon.daily_cli import DAILY, simulate_as_daily

    if dispatcher in DAILY:
        simulate_as_daily(dict(locals()))
        return
    from wattsched.connectors.traces.errors import TraceError

    try:
        node_list = load_system(system, nodes, cores, mem_mb, fmt)
        jobs, skipped, report = _load_jobs(trace, fmt, node_list, queues, limit_jobs)
        jobs = _assign_power(jobs, job_power, core_watts, seed)
        if (runtime or (RuntimeSource.WALLTIME if offline else RuntimeSource.REAL)) is (
            RuntimeSource.WALLTIME
        ):
            jobs = [dataclasses.replace(j, runtime=j.walltime) for j in jobs]
        cap = _load_cap(power_cap, power_cap_file, jobs, offline)
        scorer = out_profit_scorer(cooling, season)
    except TraceError as exc:
        raise _fail(str(exc)) from exc
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    params = _parse_params(param or [])
    if offline and dispatcher.startswith("hybrid"):
        # Offline instances: the hybrid's offline search (5 s doubling to 60 s) unless told.
        params.setdefault("mode", "offline")
    run_simulation(
        node_list,
        jobs,
        cap,
        dispatcher_name=dispatcher,
        params=params,
        offline=offline,
        metrics_out=metrics_out,
        schedule_out=schedule_out,
        power_out=power_out,
        plot=plot,
        skipped=skipped,
        report=report,
        title=f"{trace.name}: {dispatcher}",
        progress=progress,
        power_policy=make_power_policy(power_policy, idle_s),
        profit_scorer=scorer,
        thermal=thermal,
    )


def out_profit_scorer(cooling: str, season: str) -> Any:
    """The cooling-aware profit scorer of ``--cooling`` (None for ``none``)."""
    if cooling == "none":
        return None
    from wattsched.daemon.cooling_report import build_reporter

    return build_reporter(cooling, season, None, None)


def run_simulation(
    node_list: list[Node],
    jobs: list[Job],
    cap: PowerCap,
    *,
    dispatcher_name: str,
    params: dict[str, Any],
    offline: bool,
    metrics_out: Path,
    schedule_out: Path,
    power_out: Path | None,
    plot: Path | None,
    skipped: int,
    report: dict[str, Any],
    title: str,
    progress: bool,
    power_policy: PowerPolicy | None = None,
    profit_scorer: Any = None,
    thermal: Path | None = None,
) -> dict[str, Any]:
    """Replay and write every output; returns the metrics.

    With a ``profit_scorer`` (a :class:`~wattsched.daemon.cooling_report.CoolingReporter`)
    the metrics add the profit evaluator's figures over the replay (``profit``, ``revenue``,
    ``energy_cost``, ``cooling_kwh``, ``mean_pue``...).

    With a ``power_policy`` the metrics add ``energy_saved_kwh`` (energy not drawn by nodes
    that were off or switching, against every node on and idle over the same replay),
    ``reconfigurations`` (power commands carried out) and ``power_errors``.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from wattsched.connectors.simulated import SimulatedCluster
    from wattsched.daemon import replay_output as out
    from wattsched.daemon.replay import replay
    from wattsched.scheduler import dispatcher as registry
    from wattsched.scheduler import fit_kernels

    try:
        disp = registry.create(dispatcher_name, **params)
    except (TypeError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    fit_kernels.warm()  # start-up, not the replay's first cycle (docs/performance.md)
    if power_policy is not None:
        power_policy.warm()  # HGFS's fuzzy kernels, likewise
    if thermal is not None:
        from wattsched.daemon import thermal_sim

        try:
            cluster, disp = thermal_sim.thermal_setup(thermal, node_list, jobs, cap, offline, disp)
        except ValueError as exc:
            raise _fail(str(exc)) from exc
    else:
        cluster = SimulatedCluster(node_list, jobs, cap, offline=offline)
    console = Console(stderr=True)
    keep_stats = dispatcher_name.startswith("hybrid")
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not progress,
        transient=False,
    ) as bar:
        task = bar.add_task(f"replay {dispatcher_name}", total=len(jobs))
        if hasattr(disp, "on_replan"):
            disp.on_replan = lambda r: bar.console.print(replan_line(r))
        result = replay(
            cluster,
            disp,
            progress=lambda done, total: bar.update(task, completed=done),
            keep_stats=keep_stats,
            power_policy=power_policy,
        )
    extra: dict[str, Any] = {
        "dispatcher": dispatcher_name,
        "offline": offline,
        "nodes": len(node_list),
        "node_power_models": out.node_power_models(node_list),
        "trace_report": report,
    }
    if power_policy is not None:
        extra.update(
            {
                "power_policy": power_policy.name,
                "energy_saved_kwh": cluster.power_saved_j / 3.6e6,
                "reconfigurations": cluster.power_commands,
                "power_errors": result.power_errors,
            }
        )
    if keep_stats:
        try:
            from wattsched.scheduler.hybrid import solver_summary

            extra["solver"] = solver_summary(result.solver_stats)
        except ImportError:
            pass
    if profit_scorer is not None:
        extra.update(out.profit_metrics(cluster, profit_scorer.model, profit_scorer.prices))
    if thermal is not None:
        extra["thermal"] = thermal_sim.thermal_metrics(cluster, disp)
    metrics = out.replay_metrics(result, skipped_jobs=skipped, extra=extra)
    out.write_metrics(metrics_out, metrics)
    out.write_schedule(schedule_out, cluster)
    if power_out is not None:
        if thermal is not None:
            thermal_sim.write_power_thermal(power_out, cluster)
        else:
            out.write_power(power_out, cluster)
    if plot is not None:
        out.plot_replay(plot, cluster, title)
        if thermal is not None:
            thermal_sim.plot_thermal(plot.with_suffix(".thermal.png"), cluster, title)
    console.print(
        f"{metrics['jobs']} jobs, makespan {metrics['makespan_s']:.0f} s, "
        f"mean wait {metrics['mean_wait_s']:.0f} s, peak {metrics['peak_power_w']:.0f} W, "
        f"above cap {metrics['cap_violation_s']} s, wall {metrics['wall_seconds']:.2f} s"
    )
    if metrics["unfinished_jobs"]:
        console.print(
            f"[yellow]warning:[/] {metrics['unfinished_jobs']} jobs never started: they do not fit "
            "the machine or the power cap (raise --power-cap, or check the system file)"
        )
    return metrics


def replan_line(r: Any) -> str:
    """One progress line for a hybrid re-plan (a :class:`ReplanReport`)."""
    st = r.stats
    obj = "-" if st.objective is None else f"{st.objective:,.0f}"
    bound = "-" if st.bound is None else f"{st.bound:,.0f}"
    left = "" if r.left_s == float("inf") else f", budget left {max(r.left_s, 0):.1f} s"
    return (
        f"re-plan at t={r.time}: {r.queued} queued, {st.status}, objective {obj}, "
        f"bound {bound}, {st.seconds:.1f} s{left}"
    )
