"""Which nodes changed between two snapshots' node tuples, worked out once per pair.

The power book, the idle tracker, the free tracker and the policy's node view each bring their
figures from the last snapshot's nodes to this one's by the nodes whose object changed; in a
replay they all look at the very same two tuples. :func:`changed_nodes` compares them once and
hands the same answer to each: the last pair asked is kept, by identity (tuples are immutable,
and keeping them keeps their identities from being reused).
"""

from __future__ import annotations

from wattsched.scheduler.model import Node
from wattsched.scheduler.tuple_diff import changed_positions

Changes = tuple[tuple[Node, Node], ...]
"""``(old node, new node)`` pairs, in position order."""


_Entry = tuple[tuple[Node, ...], tuple[Node, ...], "Changes | None"]
_last: _Entry = ((), (), ())
"""The last pair asked and its answer, one tuple rebound whole: replays run in threads (a Dask
worker's) each read one consistent entry, never a mix of two."""


def changed_nodes(old: tuple[Node, ...], new: tuple[Node, ...]) -> Changes | None:
    """The ``(old, new)`` node pairs whose object differs, position by position; None when the
    tuples differ in length or a changed position names another node (other nodes, or
    another order)."""
    global _last
    last_old, last_new, last_out = _last
    if last_old is old and last_new is new:
        return last_out
    out: Changes | None = None
    if len(old) == len(new):
        # The positions whose object differs (shared with the scheduler's node arrays).
        out = tuple([(old[i], new[i]) for i in changed_positions(old, new)])
        for a, b in out:
            if a.name != b.name:
                out = None
                break
    _last = (old, new, out)
    return out


_Names = tuple[tuple[Node, ...], "dict[str, int] | None"]
_last_names: _Names = ((), {})
"""The last node tuple asked of :func:`name_positions` and its answer, one tuple rebound whole."""


def name_positions(nodes: tuple[Node, ...]) -> dict[str, int] | None:
    """Node name -> its position in ``nodes`` (None when a name comes twice): the last tuple's
    answer while :func:`changed_nodes` finds the same names at the same positions (a replay's
    nodes change by switches, never by name), else made afresh. Read it, do not change it."""
    global _last_names
    last, pos = _last_names
    if last is not nodes:
        if pos is None or changed_nodes(last, nodes) is None:
            pos = {n.name: i for i, n in enumerate(nodes)}
            if len(pos) != len(nodes):
                pos = None
        _last_names = (nodes, pos)
    return pos
