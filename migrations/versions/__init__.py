"""Alembic versions (one module per schema revision)."""
