"""Fixtures of the node power policy tests (pure and fast: no services).

The hand-made nodes, snapshots and workloads live in ``power_builders.py`` next to the tests
(imported by name, as the other test folders do with their helpers).
"""
