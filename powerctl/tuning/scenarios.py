"""EECluster's four synthetic workloads (its Table 1), written as SWF traces.

The paper's scenarios differ in how job arrivals vary over time; arrivals are a Poisson
process whose rate depends on the day of the week, the hour and the week of the year, and
run times are exponential. The paper's rates did not survive its text (they are images), so
the figures here are ours, chosen for a cluster of 16 nodes x 8 cores
(``deploy/systems/eecluster-16x8.toml``) loaded at about 50 % on average, as its patterns say:

======== ============================ ================== ===========================
scenario  day                          hours              mean time between arrivals
======== ============================ ================== ===========================
1         every day                    all                2,700 s
2         Monday-Friday                8:00-20:00         1,200 s
2         Saturday-Sunday              8:00-20:00         4,800 s
2         every day                    20:00-8:00         9,600 s
3         Monday-Friday, week w        8:00-20:00         1,200 s x (1, 1, 5, 5, 1)[w % 5]
3         as scenario 2 otherwise
4         Monday-Friday, week w        8:00-20:00         1,200 s x (0.5, 1, 5, 10, 0.5)[w % 5]
4         as scenario 2 otherwise
======== ============================ ================== ===========================

Week ``w`` counts whole weeks from the start of the trace (which is a Monday, 00:00). For
every scenario: run time exponential with a mean of 8 h (at least 60 s, at most 72 h);
the walltime the user asks is the run time times a factor drawn from 1-3, rounded up to
15 minutes; processors 1, 2, 4, 8, 16 or 32 with probabilities 0.30, 0.15, 0.20, 0.20, 0.10,
0.05 (a job over 8 processors takes whole nodes). Scenario 1 is steady; 2 has working hours,
nights and weekends; 3 adds quiet weeks; 4 makes weeks differ still more (busy, normal,
quiet, very quiet), so that its valleys are deeper and longer, as the paper's.

**Lower loads** (``gap_scale``, ``wattsched tune scenario --gap-scale``): every mean time
between arrivals above is multiplied by ``gap_scale`` (2: half the arrival rate, about half
the load). The paper's tables imply lower loads than ours: in its own measure (equation (4),
the share of node time spent off, ``measures.py``) its QoS-0 rows save 28.6 % (scenario 1),
60.1 % (2), 28.0 % (3), 25.0 % (4), so its nodes are off at least that share of the time and
busy at most the rest; scenario 2 runs at most about 40 % node load, ours at 50-70 %. The
default (1) is the scenarios above, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

HOUR = 3600
WEEK_H = 7 * 24
MONTH_H = 730  # a twelfth of 365 days, in hours


@dataclass(frozen=True)
class Scenario:
    """Mean seconds between arrivals by kind of hour; ``week_factors`` stretch the
    working-hours figure by week of the trace (``w % len(week_factors)``)."""

    number: int
    all_hours_s: float | None = None
    workday_s: float = 1200.0
    weekend_day_s: float = 4800.0
    night_s: float = 9600.0
    week_factors: tuple[float, ...] = (1.0,)

    def mean_gap_s(self, hour_index: np.ndarray) -> np.ndarray:
        """The mean time between arrivals (s) in each hour of the trace (hour 0: Monday 0:00)."""
        if self.all_hours_s is not None:
            return np.full(hour_index.shape, self.all_hours_s)
        hour = hour_index % 24
        day = (hour_index // 24) % 7  # 0 = Monday
        week = hour_index // WEEK_H
        daytime = (hour >= 8) & (hour < 20)
        factors = np.asarray(self.week_factors)[week % len(self.week_factors)]
        out = np.full(hour_index.shape, self.night_s)
        out[daytime & (day < 5)] = (self.workday_s * factors)[daytime & (day < 5)]
        out[daytime & (day >= 5)] = self.weekend_day_s
        return out


SCENARIOS: dict[int, Scenario] = {
    1: Scenario(1, all_hours_s=2700.0),
    2: Scenario(2),
    3: Scenario(3, week_factors=(1.0, 1.0, 5.0, 5.0, 1.0)),
    4: Scenario(4, week_factors=(0.5, 1.0, 5.0, 10.0, 0.5)),
}
MEAN_RUNTIME_S = 8 * HOUR
MAX_RUNTIME_S = 72 * HOUR
PROCS = (1, 2, 4, 8, 16, 32)
PROCS_P = (0.30, 0.15, 0.20, 0.20, 0.10, 0.05)


@dataclass(frozen=True)
class SyntheticJob:
    """One generated job (times in seconds from the start of the trace)."""

    submit: int
    runtime: int
    walltime: int
    procs: int


def generate(scenario: int, months: float, seed: int, gap_scale: float = 1.0) -> list[SyntheticJob]:
    """The jobs of ``scenario`` (1-4) over ``months`` (of 730 h), drawn with ``seed``; every
    mean time between arrivals times ``gap_scale`` (above 1: a lower load)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario {scenario}: must be one of {sorted(SCENARIOS)}")
    if not 0 < months <= 120:
        raise ValueError(f"months {months}: must be > 0 and at most 120")
    if not 0 < gap_scale <= 100:
        raise ValueError(f"gap_scale {gap_scale}: must be > 0 and at most 100")
    rng = np.random.default_rng(seed)
    hours = np.arange(round(months * MONTH_H))
    counts = rng.poisson(HOUR / (SCENARIOS[scenario].mean_gap_s(hours) * gap_scale))
    starts = np.repeat(hours * HOUR, counts)
    submit = np.sort(starts + rng.integers(0, HOUR, size=starts.size))
    n = submit.size
    runtime = np.clip(rng.exponential(MEAN_RUNTIME_S, n), 60, MAX_RUNTIME_S).astype(np.int64)
    quarter = 900
    walltime = np.ceil(runtime * rng.uniform(1.0, 3.0, n) / quarter).astype(np.int64) * quarter
    procs = rng.choice(np.asarray(PROCS), size=n, p=np.asarray(PROCS_P))
    return [
        SyntheticJob(int(s), int(r), int(w), int(p))
        for s, r, w, p in zip(submit, runtime, walltime, procs, strict=True)
    ]


def write_swf(
    path: Path, jobs: list[SyntheticJob], scenario: int, seed: int, gap_scale: float = 1.0
) -> None:
    """``jobs`` as an SWF trace (18 fields a line; unknown fields -1), header included."""
    lines = [
        f"; EECluster synthetic scenario {scenario} (wattsched powerctl/tuning/scenarios.py)",
        f"; Seed: {seed}",
        *([f"; Note: mean times between arrivals x {gap_scale:g}"] if gap_scale != 1 else []),
        "; MaxProcs: 128",
        "; MaxNodes: 16",
        "; UnixStartTime: 0",
    ]
    for i, j in enumerate(jobs, start=1):
        fields = (
            i, j.submit, -1, j.runtime, j.procs, -1, -1, j.procs, j.walltime,
            -1, 1, 1, 1, 1, 1, 1, -1, -1,
        )  # fmt: skip
        lines.append(" ".join(str(f) for f in fields))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
