"""The node power policies by name, as the CLI and the daemon's ``[power]`` table name them."""

from __future__ import annotations

from wattsched.powerctl.policy import PowerPolicy

POLICIES = ("none", "idle", "hgfs")
"""``none`` (nodes stay as they are), ``idle`` (the idle-timeout baseline), ``hgfs``."""


def make_power_policy(name: str, idle_s: int = 1800) -> PowerPolicy | None:
    """The policy named ``name`` with its defaults (``idle_s`` for the idle timeout)."""
    if name == "idle":
        from wattsched.powerctl.idle_timeout import IdleTimeoutPolicy

        return IdleTimeoutPolicy(idle_s=idle_s)
    if name == "hgfs":
        from wattsched.powerctl.hgfs import HGFSPolicy

        return HGFSPolicy()
    if name == "none":
        return None
    raise ValueError(f"power policy {name!r}: expected one of {', '.join(POLICIES)}")
