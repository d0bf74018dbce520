"""TOML system descriptions: the shipped deploy/systems files, naming rules, bad files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from wattsched.connectors.traces import (
    TraceError,
    homogeneous_nodes,
    read_eurora_nodes,
    read_system_toml,
)
from wattsched.scheduler.model import PowerState, Resources
from wattsched.scheduler.power import BATSIM_NODE_POWER, EURORA_NODE_POWER


def test_curie_300(repo_root: Path) -> None:
    nodes = read_system_toml(repo_root / "deploy" / "systems" / "curie-300.toml")
    assert len(nodes) == 300
    assert (nodes[0].name, nodes[-1].name) == ("n001", "n300")
    assert all(n.capacity == Resources(cores=32, mem_mb=131072) for n in nodes)
    p = nodes[0].power
    assert p.idle_w + p.first_core_w + 32 * p.core_w == pytest.approx(190.7)
    assert p == BATSIM_NODE_POWER
    assert (nodes[0].boot_s, nodes[0].shutdown_s) == (150, 6)


def test_kth_sp2(repo_root: Path) -> None:
    nodes = read_system_toml(repo_root / "deploy" / "systems" / "kth-sp2.toml")
    assert len(nodes) == 100 and all(n.capacity.cores == 1 for n in nodes)
    p = nodes[0].power
    assert p.idle_w + p.first_core_w + p.core_w == pytest.approx(190.7)


@pytest.mark.parametrize("count", [8, 32])
def test_eurora_tomls_match_the_node_files(repo_root: Path, eurora_dir: Path, count: int) -> None:
    from_toml = read_system_toml(repo_root / "deploy" / "systems" / f"eurora-{count}.toml")
    from_file = read_eurora_nodes(eurora_dir / "system_configs" / f"nodes_#{count}")
    assert [(n.name, n.capacity, n.partition) for n in from_toml] == [
        (n.name, n.capacity, n.partition) for n in from_file
    ]
    assert all(n.power == EURORA_NODE_POWER for n in from_toml)


def test_defaults_merge_and_nodeset(write_file: Callable[[str, str], Path]) -> None:
    text = """
name = "mixed"
[defaults]
boot_s = 100
cores = 8
[defaults.power]
idle_w = 50
core_w = 5
[[nodes]]
names = "cpu[1-3,7]"
mem_mb = 1024
efficiency = 2
[nodes.power]
core_w = 7
[[nodes]]
prefix = "gpu"
count = 12
start = 0
gpus = 4
boot_s = 300
state = "off"
partition = "gpu"
available = false
"""
    nodes = read_system_toml(write_file("s.toml", text))
    assert [n.name for n in nodes[:4]] == ["cpu1", "cpu2", "cpu3", "cpu7"]
    assert [n.name for n in nodes[4:6]] == ["gpu00", "gpu01"] and nodes[-1].name == "gpu11"
    cpu, gpu = nodes[0], nodes[-1]
    assert cpu.capacity == Resources(cores=8, mem_mb=1024)
    assert (cpu.power.idle_w, cpu.power.core_w, cpu.boot_s, cpu.efficiency) == (50, 7, 100, 2.0)
    assert gpu.capacity == Resources(cores=8, gpus=4)
    assert (gpu.power.core_w, gpu.boot_s, gpu.state) == (5, 300, PowerState.OFF)
    assert (gpu.partition, gpu.available) == ("gpu", False)


def test_homogeneous_nodes() -> None:
    nodes = homogeneous_nodes(100, 4, mem_mb=2048)
    assert len(nodes) == 100 and (nodes[0].name, nodes[-1].name) == ("n001", "n100")
    assert nodes[5].capacity == Resources(cores=4, mem_mb=2048)
    assert nodes[0].power == BATSIM_NODE_POWER
    assert [n.name for n in homogeneous_nodes(3, 1, prefix="x")] == ["x1", "x2", "x3"]
    with pytest.raises(ValueError, match="count"):
        homogeneous_nodes(0, 4)


GROUP = '[[nodes]]\nprefix = "n"\ncount = 2\ncores = 4\n'


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        # a misspelt power field in [nodes.power]
        (GROUP + "[nodes.power]\nidle_watts = 5\n", "nodes[0].power.idle_watts", 5),
        # an unknown key in a group
        (GROUP + "colour = 'red'\n", "nodes[0].colour", "red"),
        # an unknown key in [defaults]
        ("[defaults]\nprefix = 'n'\n" + GROUP, "defaults.prefix", "n"),
        # an unknown top-level key
        ("version = 2\n" + GROUP, "system.version", 2),
        # cores given as a string
        ('[[nodes]]\nprefix = "n"\ncount = 2\ncores = "4"\n', "nodes[0].cores", "4"),
        # a boolean where a number is expected
        (GROUP + "[nodes.power]\nidle_w = true\n", "nodes[0].power.idle_w", True),
        # names and count disagree
        ('[[nodes]]\nnames = "n[1-3]"\ncount = 2\ncores = 4\n', "nodes[0].count", 2),
        # a node set ClusterShell cannot parse
        ('[[nodes]]\nnames = "n[3-"\ncores = 4\n', "nodes[0].names", "n[3-"),
        # the same name in two groups
        (GROUP + '[[nodes]]\nnames = "n2"\ncores = 4\n', "nodes[1].names", "n2"),
        # neither names nor prefix/count
        ("[[nodes]]\ncores = 4\n", "nodes[0]", None),
        # a negative power figure (the model's own rule)
        (GROUP + "[nodes.power]\nidle_w = -3\n", "nodes[0]", None),
        # no resource at all
        ('[[nodes]]\nprefix = "n"\ncount = 2\n', "nodes[0].cores", 0),
        # an unknown power state
        (GROUP + "state = 'sleeping'\n", "nodes[0].state", "sleeping"),
        # no [[nodes]] group
        ("[defaults]\ncores = 4\n", "nodes", None),
        # not TOML
        ("[[nodes]\ncores = 4\n", "document", "bad.toml"),
    ],
)
def test_bad_system_files_raise(
    write_file: Callable[[str, str], Path], text: str, field: str, value: object
) -> None:
    path = write_file("bad.toml", text)
    with pytest.raises(TraceError) as info:
        read_system_toml(path)
    e = info.value
    assert e.field == field and e.line is None
    assert str(e).startswith(f"{path}: field '{field}'")
    if value is not None:
        assert e.value == value


def test_unknown_key_message_names_the_table(write_file: Callable[[str, str], Path]) -> None:
    path = write_file("bad.toml", GROUP + "[nodes.power]\nidle_watts = 5\n")
    with pytest.raises(TraceError, match=r"unknown key in \[nodes\[0\]\.power\].*idle_w"):
        read_system_toml(path)
