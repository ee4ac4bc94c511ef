"""An approval's answer follows the rules as they are when it is sent (issue 14)."""

from __future__ import annotations

from autorag.p2p.approvals import PendingSource
from autorag.p2p.egress import still_allowed
from autorag.sources.policy import MemoryPolicyBackend, PolicyStore


def source(source_id: str) -> PendingSource:
    return PendingSource(source_id, "title", "snippet", 1.0)


def test_a_rule_tightened_while_a_request_waits_holds() -> None:
    policy = PolicyStore(MemoryPolicyBackend())
    policy.set_rule("/docs/public/**", "share")
    policy.set_rule("/docs/review/**", "ask")
    shared = [source("/docs/public/a.md"), source("/docs/public/b.md")]
    waiting = [source("/docs/review/c.md")]
    assert still_allowed(shared, policy, approved=False) == shared
    assert still_allowed(waiting, policy, approved=True) == waiting
    assert still_allowed(waiting, policy, approved=False) == []  # never without approval

    policy.set_rule("/docs/public/b.md", "private")  # the owner changes their mind
    policy.set_rule("/docs/review/**", "private")
    assert still_allowed(shared, policy, approved=False) == [shared[0]]
    assert still_allowed(waiting, policy, approved=True) == []


def test_a_redacted_source_id_is_not_sent() -> None:
    policy = PolicyStore(MemoryPolicyBackend())
    policy.set_rule("/**", "share")
    assert still_allowed([source("[REDACTED]")], policy, approved=True) == []
