"""Eurora-like synthetic instances for the hybrid's tests and benchmark (seeded, no I/O).

Nodes follow Eurora's halves (16 cores, 32 GB, 2 GPUs or 2 MICs); jobs are drawn from
distributions shaped like the Eurora traces (queues debug / parallel / longpar, 1-4 units,
log-uniform walltimes per queue, about a fifth using accelerators) with a per-unit power
estimate. Every draw comes from a ``numpy.random.Generator`` built from the given seed.
"""

from __future__ import annotations

import numpy as np

from wattsched.scheduler.model import Job, Node, NodePowerModel, Resources

QUEUES: tuple[tuple[str, int, float, int, int], ...] = (
    # name, EWT (s), share, shortest and longest walltime (s)
    ("debug", 3600, 0.45, 60, 1800),
    ("parallel", 21600, 0.40, 600, 21600),
    ("longpar", 86400, 0.15, 3600, 86400),
)

EURORA_LIKE_POWER = NodePowerModel(
    idle_w=60.0, first_core_w=15.0, core_w=6.0, gpu_w=40.0, mic_w=45.0, transition_w=60.0
)


def eurora_like_nodes(count: int) -> list[Node]:
    """``count`` nodes, the first half with 2 GPUs, the rest with 2 MICs."""
    out = []
    for k in range(count):
        gpu = k < count // 2
        out.append(
            Node(
                name=f"n{k:02d}",
                capacity=Resources(
                    cores=16, mem_mb=32768, gpus=2 if gpu else 0, mics=0 if gpu else 2
                ),
                power=EURORA_LIKE_POWER,
            )
        )
    return out


def eurora_like_jobs(count: int, seed: int, *, submit: int = 0) -> list[Job]:
    """``count`` jobs all submitted at ``submit`` (offline instances)."""
    rng = np.random.default_rng(seed)
    shares = np.array([q[2] for q in QUEUES])
    jobs = []
    for i in range(count):
        name, ewt, _, lo, hi = QUEUES[int(rng.choice(len(QUEUES), p=shares / shares.sum()))]
        walltime = int(np.exp(rng.uniform(np.log(lo), np.log(hi))))
        units = int(min(4, rng.geometric(0.55)))
        cores = int(rng.choice([1, 2, 4, 8, 16], p=[0.3, 0.15, 0.2, 0.2, 0.15]))
        accel = rng.random()
        gpus = int(rng.integers(1, 3)) if accel < 0.12 else 0
        mics = int(rng.integers(1, 3)) if 0.12 <= accel < 0.2 else 0
        mem = int(rng.integers(1, 9)) * 1024
        power = cores * 6.0 + gpus * 40.0 + mics * 45.0
        power *= float(rng.uniform(0.7, 1.3))
        jobs.append(
            Job(
                id=str(i + 1),
                submit=submit,
                walltime=walltime,
                units=units,
                unit=Resources(cores=cores, mem_mb=mem, gpus=gpus, mics=mics),
                unit_power_w=round(power, 1),
                queue=name,
                ewt=ewt,
            )
        )
    return jobs
