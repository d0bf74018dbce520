"""wattsched: a power-capped, energy-aware dispatcher daemon for HPC clusters.

The code lives in the top-level folders of the repository (``scheduler/``, ``powerctl/``,
``connectors/``, ``daemon/``), installed as the subpackages of this package.
"""

__version__ = "0.1.0"
