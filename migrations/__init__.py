"""Alembic environment and versions of the daemon SQL schema (``wattsched migrate``)."""
