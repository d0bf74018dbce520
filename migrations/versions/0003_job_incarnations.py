"""job incarnations, holds and end states

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 05:00:00

Jobs gain who holds them (``held_by``) and how many times the RMS requeued them
(``restarts``); actions gain the job incarnation they concern (``incarnation``: a start is
never repeated within one incarnation, a requeue starts a new one). End states
(completed, cancelled, failed, timeout, node_fail, ...) are new values of ``jobs.state``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('held_by', sa.String(length=16), nullable=True))
        batch_op.add_column(
            sa.Column('restarts', sa.Integer(), nullable=False, server_default='0')
        )
    with op.batch_alter_table('actions', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('incarnation', sa.Integer(), nullable=False, server_default='0')
        )


def downgrade() -> None:
    with op.batch_alter_table('actions', schema=None) as batch_op:
        batch_op.drop_column('incarnation')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('restarts')
        batch_op.drop_column('held_by')
