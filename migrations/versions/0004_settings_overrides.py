"""settings changed over the API

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 05:25:00

The settings an operator changed through the API (power cap, mode): they come back after a
restart, with when and by whom they were set.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        'setting_overrides',
        sa.Column('key', sa.String(length=64), nullable=False),
        sa.Column('value', sa.Text(), nullable=False),
        sa.Column('set_at', sa.Float(), nullable=False),
        sa.Column('set_by', sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint('key'),
    )


def downgrade() -> None:
    op.drop_table('setting_overrides')
