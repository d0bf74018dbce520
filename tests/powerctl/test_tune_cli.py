"""``wattsched tune`` and ``tune pick`` end to end: the front says its energy-saved measure,
pick reports both measures and writes the file the daemon loads, from a new or an old front."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from wattsched.daemon.cli import app
from wattsched.powerctl.build import load_hgfs_params
from wattsched.powerctl.hgfs import HGFSParams
from wattsched.powerctl.tuning.measures import PAPER, PHYSICAL
from wattsched.powerctl.tuning.scenarios import generate, write_swf

SYSTEM = Path(__file__).resolve().parents[2] / "deploy" / "systems" / "eecluster-16x8.toml"


def test_tune_then_pick_from_a_new_front_and_from_an_old_one(tmp_path: Path) -> None:
    trace = tmp_path / "s2.swf"
    write_swf(trace, generate(2, 1, 3), 2, 3)
    front = tmp_path / "front.json"
    r = CliRunner().invoke(app, [
        "tune", "--trace", str(trace), "--system", str(SYSTEM), "--max-jobs", "120",
        "--population", "4", "--generations", "1", "--workers", "1", "--out", str(front),
        "--no-progress",
    ])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "equation (4)" in r.output and "physical" in r.output
    doc = json.loads(front.read_text())
    assert doc["measure"] == PAPER and doc["format"] == "wattsched-hgfs-front/2"
    assert 0 <= doc["ceiling_physical"]["validation"] <= doc["ceiling"]["validation"] <= 1
    assert (tmp_path / "front.png").stat().st_size > 0

    params = tmp_path / "hgfs.json"
    r = CliRunner().invoke(app, ["tune", "pick", str(front), "--qos", "1e9", "--reconfig", "1e9",
                                 "--out", str(params)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert f"picked (by {PAPER})" in r.output and "physical" in r.output
    report = json.loads(params.read_text())
    assert report["measure"] == PAPER
    assert {PAPER, PHYSICAL, "saved_kwh", "paper_saved_kwh"} <= set(report["test"])
    assert isinstance(load_hgfs_params(params), HGFSParams)  # what the daemon loads

    # An old front (/1: the physical measure only, tuned on it) is still picked, by that one.
    old_keys = ("qos_p90", PHYSICAL, "reconfigurations", "energy_kwh", "power_failures")
    doc["format"] = "wattsched-hgfs-front/1"
    del doc["measure"], doc["ceiling_physical"]
    for p in doc["points"]:
        for part in ("train", "validation"):
            p[part] = {k: p[part][k] for k in old_keys}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    r = CliRunner().invoke(app, ["tune", "pick", str(old), "--qos", "1e9", "--reconfig", "1e9",
                                 "--out", str(params)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert f"picked (by {PHYSICAL})" in r.output
    assert isinstance(load_hgfs_params(params), HGFSParams)
