"""The peer simulator of the replay benchmark: AccaSim's EASY backfilling (FirstFit) on a trace.

Run by ``bench/replay_traces.py`` with the Python of ``bench/.accasim-venv`` (AccaSim 1.1.3
from PyPI, which still imports ``collections.Mapping``: the shims below restore the names
Python 3.10 moved to ``collections.abc``). Prints one JSON line: the wall seconds of the
simulation (the system built, the trace read as the simulation goes, the results written to a
temporary folder) and the jobs it dispatched.

    bench/.accasim-venv/bin/python bench/accasim_peer.py TRACE --nodes 100 --cores 1
"""

import argparse
import collections
import collections.abc
import json
import sys
import tempfile
import time
from pathlib import Path

for _name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable", "Set"):
    if not hasattr(collections, _name):
        setattr(collections, _name, getattr(collections.abc, _name))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("trace")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--cores", type=int, default=1)
    args = ap.parse_args()

    from accasim.base.allocator_class import FirstFit
    from accasim.base.scheduler_class import EASYBackfilling
    from accasim.base.simulator_class import Simulator

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "system.config"
        config.write_text(
            json.dumps(
                {
                    "groups": {"g0": {"core": args.cores}},
                    "resources": {"g0": args.nodes},
                }
            )
        )
        dispatcher = EASYBackfilling(FirstFit())
        sim = Simulator(
            args.trace,
            str(config),
            dispatcher,
            RESULTS_FOLDER_PATH=str(Path(tmp) / "results"),
            show_statistics=False,
            statistics_output=True,
            scheduling_output=True,
        )
        t0 = time.perf_counter()
        sim.start_simulation()
        wall = time.perf_counter() - t0
        out = Path(tmp) / "results"
        sched = next(out.glob("sched-*"), None)
        jobs = sum(1 for _ in sched.open()) if sched is not None else None
    print(json.dumps({"wall_seconds": wall, "jobs": jobs, "python": sys.version.split()[0]}))


if __name__ == "__main__":
    main()
