"""``event_role``: the role of a trace event's node, read by every summary pass over a variant's traces.

It answers what ``Role(value)`` answers (a dict look-up since issue 34): the member for a role's value or
a member given as is, None for anything else, and, for events written before roles existed, the role
the registered node type declares.
"""
from __future__ import annotations

import pytest

from evalkit.graph.events import event_role, events_of, roles_in
from evalkit.graph.schema import Role


@pytest.mark.parametrize("role", list(Role))
def test_each_role_by_value_and_as_member(role: Role):
    assert event_role({"role": role.value}) is role
    assert event_role({"role": role}) is role


@pytest.mark.parametrize("value", ["nope", "RETRIEVER", " retriever", 3, ["retriever"], {"a": 1}, 2.5])
def test_anything_else_has_no_role(value):
    assert event_role({"role": value}) is None


def test_an_event_without_a_role_takes_its_type_s():
    assert event_role({"type": "retrieve"}) is Role.RETRIEVER
    assert event_role({"type": "no_such_node"}) is None
    trace = [{"role": "guard"}, "not an event", {"type": "generate"}, {"role": "retriever"}]
    assert [e.get("role") or e.get("type") for e in events_of(trace, Role.GENERATOR)] == ["generate"]
    assert roles_in(trace) == {Role.GUARD, Role.GENERATOR, Role.RETRIEVER}
