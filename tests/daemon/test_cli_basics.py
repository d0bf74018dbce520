"""The admin CLI's basics: version, help texts that render."""

from __future__ import annotations

from importlib.metadata import version

from typer.testing import CliRunner

from wattsched.daemon.cli import app

runner = CliRunner()


def test_version_prints_the_installed_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"wattsched {version('wattsched')}"


def test_help_keeps_toml_table_names() -> None:
    # Rich markup used to eat "[connector]" from the help text.
    result = runner.invoke(app, ["rms", "--help"])
    assert result.exit_code == 0
    assert "[connector]" in result.output
