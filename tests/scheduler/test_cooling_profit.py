"""The cooling model and the profit evaluator: hand-worked cases, seasons, files, bad input."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.connectors.traces.cooling_files import (
    builtin_pue_table,
    read_prices,
    read_pue_table,
    read_tariff,
    read_temperature,
)
from wattsched.connectors.traces.errors import TraceError
from wattsched.scheduler.cooling import (
    SUMMER_DAY,
    WINTER_DAY,
    CoolingModel,
    PueTable,
    TemperatureProfile,
    temperature_segments,
)
from wattsched.scheduler.profit import Executions, Prices, Tariff, evaluate_profit

FLAT_15 = PueTable((0.0, 100_000.0), (-10.0, 40.0), ((1.5, 1.5), (1.5, 1.5)), name="flat")
TEN_C = TemperatureProfile((0.0,), (10.0,), name="10C")


def test_profit_of_one_job_by_hand() -> None:
    # 4 cores for 2 h at 1,000 W: revenue 4 * 2 * 1.0 = 8; IT 2 kWh; PUE 1.5 -> cooling 1 kWh;
    # energy cost (2 + 1) * 0.5 = 1.5; profit 6.5.
    runs = Executions.of([(0, 7200, 1000.0, 4, 0, 0, 0)])
    prices = Prices(core_hour=1.0, gpu_hour=0, mic_hour=0, energy_kwh=0.5)
    r = evaluate_profit(runs, CoolingModel(TEN_C, FLAT_15), prices)
    assert r.revenue == pytest.approx(8.0)
    assert r.it_kwh == pytest.approx(2.0)
    assert r.cooling_kwh == pytest.approx(1.0)
    assert r.energy_cost == pytest.approx(1.5)
    assert r.profit == pytest.approx(6.5)
    assert r.mean_pue == pytest.approx(1.5)
    assert r.as_metrics()["profit"] == pytest.approx(6.5)


def test_gpus_memory_and_k1_are_priced() -> None:
    runs = Executions.of([(0, 3600, 0.0, 0, 2048, 2, 1)])
    prices = Prices(core_hour=0, gpu_hour=3.0, mic_hour=1.0, mem_gb_hour=0.5, k1=2.0)
    r = evaluate_profit(runs, CoolingModel(TEN_C, FLAT_15), prices)
    assert r.revenue == pytest.approx(2.0 * (2 * 3.0 + 1 * 1.0 + 2 * 0.5))
    assert r.energy_cost == 0.0


def test_only_the_share_inside_the_horizon_counts() -> None:
    runs = Executions.of([(0, 7200, 1000.0, 1, 0, 0, 0)])
    prices = Prices(core_hour=1.0, energy_kwh=0.0)
    r = evaluate_profit(runs, CoolingModel(TEN_C, FLAT_15), prices, start=3600, end=10_000)
    assert r.revenue == pytest.approx(1.0) and r.it_kwh == pytest.approx(1.0)


def test_pue_uses_the_segment_mean_it_power_rounded_to_500_w() -> None:
    table = PueTable((0.0, 1000.0, 2000.0), (0.0, 10.0), ((1.0, 1.0), (1.2, 1.2), (1.4, 1.4)))
    assert table.lookup(1249.0, 5.0) == pytest.approx(1.2)  # rounds to 1,000 W
    assert table.lookup(1251.0, 5.0) == pytest.approx(1.3)  # rounds to 1,500 W: halfway
    assert table.lookup(9e9, 5.0) == pytest.approx(1.4)  # held beyond the last row
    # One job of 2,000 W over half of a 2 h horizon: mean 1,000 W -> PUE 1.2 (not 1.4).
    runs = Executions.of([(0, 3600, 2000.0, 1, 0, 0, 0)])
    r = evaluate_profit(runs, CoolingModel(TEN_C, table), Prices(), start=0, end=7200)
    assert r.mean_pue == pytest.approx(1.2)


def test_summer_costs_more_than_winter_and_matches_the_paper_means() -> None:
    # A constant 60 kW load for one day: the built-in tables are calibrated to the paper's
    # measured mean PUEs at loads of 50 kW and more.
    runs = Executions.of([(0, 86_400, 60_000.0, 1000, 0, 0, 0)])
    prices = Prices()
    expected = {("air", "winter"): 1.11, ("air", "summer"): 1.43,
                ("hybrid", "winter"): 1.00, ("hybrid", "summer"): 1.09}  # fmt: skip
    reports = {}
    for (kind, season), pue in expected.items():
        day = WINTER_DAY if season == "winter" else SUMMER_DAY
        r = evaluate_profit(runs, CoolingModel(day, builtin_pue_table(kind)), prices)
        assert r.mean_pue == pytest.approx(pue, abs=0.012), (kind, season)
        reports[kind, season] = r
    for kind in ("air", "hybrid"):
        assert reports[kind, "summer"].profit < reports[kind, "winter"].profit
        assert reports[kind, "summer"].revenue == pytest.approx(reports[kind, "winter"].revenue)


def test_segments_keep_within_a_band_and_cover_the_span() -> None:
    segs = temperature_segments(SUMMER_DAY, 1000, 2 * 86_400, cuts=[50_000])
    assert segs[0].start == 1000 and segs[-1].end == 2 * 86_400
    assert all(a.end == b.start for a, b in itertools.pairwise(segs))
    assert any(s.start == 50_000 for s in segs)
    for s in segs:
        temps = SUMMER_DAY.at(np.arange(s.start, s.end, 300))
        assert temps.max() - temps.min() <= 5.0 + 1e-9


def test_a_tariff_splits_segments_and_prices_each_part() -> None:
    tariff = Tariff((0, 8 * 3600), (0.10, 0.30))
    runs = Executions.of([(7 * 3600, 9 * 3600, 1000.0, 0, 0, 0, 0)])
    flat = PueTable((0.0, 1e6), (-50.0, 60.0), ((1.0, 1.0), (1.0, 1.0)))
    r = evaluate_profit(runs, CoolingModel(TEN_C, flat), Prices(tariff=tariff))
    assert r.energy_cost == pytest.approx(1 * 0.10 + 1 * 0.30)
    assert tariff.at(86_400 + 3600) == 0.10 and tariff.at(23 * 3600) == 0.30


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 50_000), st.integers(1, 30_000), st.floats(0, 5000), st.integers(0, 64)
        ),
        min_size=1,
        max_size=20,
    ),
    st.sampled_from([WINTER_DAY, SUMMER_DAY]),
)
def test_revenue_is_the_priced_use_and_cooling_never_negative(
    jobs: list[tuple[int, int, float, int]], day: TemperatureProfile
) -> None:
    runs = Executions.of([(s, s + d, w, c, 0, 0, 0) for s, d, w, c in jobs])
    prices = Prices(core_hour=0.5)
    r = evaluate_profit(runs, CoolingModel(day, builtin_pue_table("air")), prices)
    assert r.revenue == pytest.approx(sum(c * d / 3600 * 0.5 for _, d, _, c in jobs))
    assert r.it_kwh == pytest.approx(sum(w * d for _, d, w, _ in jobs) / 3.6e6)
    assert r.cooling_kwh >= 0 and r.mean_pue >= 1.0
    assert r.profit == pytest.approx(sum(r.segment_profit))


def test_temperature_files(tmp_path: Path) -> None:
    daily = tmp_path / "day.csv"
    daily.write_text("time,celsius\n00:00,2\n12:00,10\n")
    prof = read_temperature(daily)
    assert prof.daily and float(prof.at(86_400 + 6 * 3600)) == pytest.approx(6.0)
    forecast = tmp_path / "fc.csv"
    forecast.write_text("# forecast\n2026-07-01T00:00:00,20\n2026-07-01T06:00:00+00:00,26\n")
    prof = read_temperature(forecast)
    assert not prof.daily and prof.times[1] - prof.times[0] == 6 * 3600


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("t.csv", "time,celsius\n00:00,2\n25:00,3\n", "t.csv:3: field 'time' = '25:00'"),
        ("t.csv", "00:00,2\n06:00,warm\n", "t.csv:2: field 'celsius' = 'warm'"),
        ("t.csv", "06:00,2\n05:00,3\n", "t.csv:2: field 'time' = '05:00'"),
        ("pue.csv", "it_kw,0,10\n1,1.1,1.2\n2,1.1,\n", "pue.csv:3: field 'row'"),
        ("pue.csv", "it_kw,0,10\n1,1.1,0.9\n", "pue.csv:2: field 'pue at 10 C' = '0.9'"),
        ("tariff.csv", "00:00,0.1\n08:00,-0.2\n", "tariff.csv:2: field 'price' = '-0.2'"),
        ("prices.toml", "core_hour = -1\n", "prices.toml: field 'core_hour' = -1"),
        ("prices.toml", "core_hours = 1\n", "prices.toml: field 'core_hours' = 1"),
    ],
)
def test_bad_files_name_file_line_field_value(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    reader = {"t.csv": read_temperature, "pue.csv": read_pue_table,
              "tariff.csv": read_tariff, "prices.toml": read_prices}[name]  # fmt: skip
    with pytest.raises(TraceError) as err:
        reader(path)
    assert where in str(err.value)


def test_prices_file_with_a_tariff(tmp_path: Path) -> None:
    (tmp_path / "tariff.csv").write_text("time,price\n00:00,0.08\n07:00,0.2\n22:00,0.08\n")
    (tmp_path / "prices.toml").write_text('core_hour = 0.03\ntariff = "tariff.csv"\n')
    prices = read_prices(tmp_path / "prices.toml")
    assert prices.core_hour == 0.03 and prices.energy_price(8 * 3600) == 0.2
    assert prices.energy_price(23 * 3600) == 0.08
