"""Configuration: TOML plus environment overrides, errors naming the key and value."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattsched.daemon.config import ConfigError, load_config

BASE = """
mode = "enforce"
cycle_seconds = 5
dispatcher = "prb"
power_cap_w = 3000
[api]
bind = "127.0.0.1:9000"
token_file = "token"
[connector]
kind = "simulated"
nodes_file = "nodes"
trace_file = "trace.log_crypt"
speedup = 30
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "w.toml"
    p.write_text(text)
    return p


def test_file_values_and_relative_paths(tmp_path: Path) -> None:
    s = load_config(write(tmp_path, BASE))
    assert s.mode == "enforce"
    assert s.cycle_seconds == 5
    assert s.api.port == 9000
    assert s.api.token_file == tmp_path / "token"
    assert s.connector.nodes_file == tmp_path / "nodes"
    assert s.database_url == "sqlite:///var/wattsched.db"


def test_environment_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATTSCHED_MODE", "advise")
    monkeypatch.setenv("WATTSCHED_API__BIND", "127.0.0.1:9100")
    monkeypatch.setenv("WATTSCHED_CONNECTOR__SPEEDUP", "7")
    s = load_config(write(tmp_path, BASE))
    assert (s.mode, s.api.port, s.connector.speedup) == ("advise", 9100, 7.0)
    assert s.api.token_file == tmp_path / "token"  # the rest of the table stays


def test_defaults_are_safe(tmp_path: Path) -> None:
    s = load_config(write(tmp_path, '[connector]\nkind = "slurm"\n'))
    assert s.mode == "advise"
    assert s.api.bind == "127.0.0.1:8080"
    assert s.api.token_file is None


@pytest.mark.parametrize(
    ("edit", "key", "value"),
    [
        (('mode = "enforce"', 'mode = "yolo"'), "mode", "yolo"),  # not a mode
        (("cycle_seconds = 5", "cycle_seconds = -1"), "cycle_seconds", -1),  # must be > 0
        (('dispatcher = "prb"', 'dispatcher = "nope"'), "dispatcher", "nope"),  # unknown
        (('bind = "127.0.0.1:9000"', 'bind = "localhost"'), "api.bind", "localhost"),  # no port
        (("speedup = 30", "speedup = 0"), "connector.speedup", 0),  # must be > 0
        (("power_cap_w = 3000", "power_cap_w = 0"), "power_cap_w", 0),  # must be > 0
        (('kind = "simulated"', 'kind = "lsf"'), "connector.kind", "lsf"),  # unknown RMS
    ],
)
def test_errors_name_key_and_value(
    tmp_path: Path, edit: tuple[str, str], key: str, value: object
) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, BASE.replace(*edit)))
    assert key in str(err.value)
    assert repr(value) in str(err.value)


def test_unknown_key_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cylce_seconds"):
        load_config(write(tmp_path, "cylce_seconds = 3\n" + BASE))


def test_bad_database_url(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="database_url"):
        load_config(write(tmp_path, 'database_url = "mysql://x/y"\n' + BASE))


@pytest.mark.parametrize("token", ["", "   \n", "changeme", "short"])
def test_placeholder_tokens_refused(tmp_path: Path, token: str) -> None:
    (tmp_path / "token").write_text(token)
    s = load_config(write(tmp_path, BASE))
    with pytest.raises(ConfigError, match=r"api\.token_file"):
        s.read_token()


def test_token_read(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("a-real-token-of-32-characters-xx\n")
    assert load_config(write(tmp_path, BASE)).read_token() == "a-real-token-of-32-characters-xx"


def test_shipped_configs_load() -> None:
    repo = Path(__file__).resolve().parents[2]
    demo = load_config(repo / "deploy" / "demo.toml")
    assert demo.mode == "enforce" and demo.connector.kind == "simulated"
    assert demo.connector.nodes_file is not None and demo.connector.nodes_file.exists()
    prod = load_config(repo / "deploy" / "wattsched-slurm.example.toml")
    assert prod.mode == "advise" and prod.connector.kind == "slurm"
    from wattsched.connectors.config import parse_connector_config

    cfg = parse_connector_config(prod.connector.params)
    assert cfg.kind == "slurm" and cfg.runner.kind == "ssh"


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('kind = "slurm"\npartitons = ["batch"]\n', "partitons"),
        ('kind = "slurm"\ntimeout_s = -1\n', "timeout_s=-1"),
        ('kind = "pbs"\n[connector.runner]\nkind = "ssh"\nhost = "h"\n', "ssh runner needs"),
        ('kind = "sge"\n[connector.node_power]\nidle_ww = 3\n', "idle_ww"),
    ],
)
def test_connector_table_validated_when_the_config_is_read(
    tmp_path: Path, table: str, needle: str
) -> None:
    """A bad [connector] key is refused at load, with the key, not at the first RMS call."""
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, "[connector]\n" + table))
    assert needle in str(err.value)


def test_the_daemon_builds_its_connector_from_the_validated_table(tmp_path: Path) -> None:
    s = load_config(write(tmp_path, '[connector]\nkind = "slurm"\npartitions = ["gpu"]\n'))
    assert s.connector.rms_config().partitions == ["gpu"]


@pytest.mark.parametrize(
    ("content", "suffix", "needle"),
    [
        ('{"wait_on_s": 10, "bogus": 1}', ".json", "bogus"),
        ('{"centers": [0, 100], "weights": [0.5]}', ".json", "weights"),
        ("[1, 2]", ".json", "expected a table"),
        ("not json", ".json", "not valid"),
        ("params = { queue_on = -1 }", ".toml", "queue_on"),
    ],
)
def test_a_bad_hgfs_parameter_file_is_refused_at_start(
    tmp_path: Path, content: str, suffix: str, needle: str
) -> None:
    from wattsched.powerctl.build import build_policy
    from wattsched.powerctl.drivers.base import PowerDriverConfigError

    f = tmp_path / f"hgfs{suffix}"
    f.write_text(content)
    s = load_config(
        write(
            tmp_path,
            '[connector]\nkind = "slurm"\n[power]\npolicy = "hgfs"\n'
            f'hgfs_params_file = "{f.name}"\n',
        )
    )
    with pytest.raises(PowerDriverConfigError) as err:
        build_policy(s.power)
    assert needle in str(err.value) and str(f) in str(err.value)


def test_a_tuned_hgfs_parameter_file_is_loaded(tmp_path: Path) -> None:
    from wattsched.powerctl.build import build_policy
    from wattsched.powerctl.hgfs import HGFSPolicy

    f = tmp_path / "best.json"
    f.write_text(
        '{"params": {"wait_on_s": 120, "queue_on": 3, "centers": [0, 60], "weights": [0, 1]}}'
    )
    s = load_config(
        write(
            tmp_path,
            '[connector]\nkind = "slurm"\n[power]\npolicy = "hgfs"\n'
            f'hgfs_params_file = "{f.name}"\n',
        )
    )
    policy = build_policy(s.power)
    assert isinstance(policy, HGFSPolicy) and policy.params.queue_on == 3
    assert policy.params.centers == (0, 60)


def test_power_driver_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ipmi-ssh needs"):
        load_config(write(tmp_path, '[connector]\nkind = "slurm"\n[power]\ndriver = "ipmi-ssh"\n'))
    with pytest.raises(ConfigError, match="driver"):
        load_config(write(tmp_path, '[connector]\nkind = "slurm"\n[power]\ndriver = "redfish"\n'))
