"""A send to many recipients spends no further than its class's ceiling (spec/transactional.md §2 "Reserve";
issue 9), against the local Resend server, which counts every request and keeps the day's quota.

Dispatch asks the provider breaker for one request at the claim and then asks again after every recorded
answer, so a send stops where its class's ceiling is: the recipients not yet submitted wait ``throttled``,
the send comes round (correspondence then waits ``awaiting/provider_unavailable`` while the breaker refuses
it, unread by the dispatch sweep) and the rest go after the next UTC midnight. A send larger than the
ceiling is never refused up front.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from mailnode import budgets
from mailnode.outbound import dispatch, sweeper
from mailnode.outbound.seal import Sealed, SealRequest, seal
from tests.conftest import bearer

from .conftest import T0, Org

#: Just after the next UTC midnight from ``T0``: the provider's daily quota has reset.
AFTER_MIDNIGHT = datetime(2026, 3, 11, 0, 5, tzinfo=UTC)


def _spend_elsewhere(org: Org, emails: int) -> None:
    """Use ``emails`` of today's quota on the same Resend account outside this node (one batch request)."""
    items = [{"from": "other@example.test", "to": [f"other{i}@remote.test"], "subject": "Elsewhere", "text": "x"}
             for i in range(emails)]
    r = httpx.post(f"{org.emulator.base_url}/emails/batch", json=items,
                   headers={"Authorization": "Bearer re_test_full"})
    assert r.status_code == 200, r.text


def _seal(org: Org, to: list[str], mail_class: str) -> Sealed:
    return seal(org.node, org_id=org.installed.org_id, author_id=org.installed.user_id,
                request=SealRequest(mailbox_id=org.installed.mailbox_id, to=to, subject="To everyone",
                                    body="Hello", mail_class=mail_class))


def _shown(api: Any, org: Org, send_id: str) -> dict[str, Any]:
    r = api.get(f"/api/sends/{send_id}", headers=bearer(org.installed.token))
    assert r.status_code == 200, r.text
    return dict(r.json()["send"])


def _states(send: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for rec in send["recipients"]:
        counts[rec["submission_state"]] = counts.get(rec["submission_state"], 0) + 1
    return counts


def _posted_to(org: Org, before: int) -> list[str]:
    """The recipients of the node's ``POST /emails`` requests since the ``before``-th."""
    return [json.loads(r.body)["to"][0] for r in org.emulator.sends()[before:]]


def _at_reading(org: Org, reading: int, mail_class: str) -> None:
    """Bring the node's recorded reading to ``reading`` with one hand-over of its own."""
    org.emulator.config.rate_limit_per_second = 1000
    _spend_elsewhere(org, reading - 1)
    first = _seal(org, ["first@remote.test"], mail_class)
    dispatch.sweep(org.node)
    assert org.send(first.id).state == "handed_over"
    assert org.status().daily_used == reading


def test_correspondence_to_many_hands_over_up_to_its_ceiling_and_the_rest_go_after_midnight(
        api: Any, org: Org) -> None:
    ceiling = budgets.PROVIDER_CORRESPONDENCE_CEILING_DEFAULT
    _at_reading(org, ceiling - 3, "correspondence")
    many = [f"person{i:02d}@remote.test" for i in range(10)]
    sent = _seal(org, many, "correspondence")
    before = org.requests()

    dispatch.sweep(org.node)
    shown = _shown(api, org, sent.id)
    assert org.requests() == before + 3, "no provider request past the correspondence ceiling"
    assert org.status().daily_used == ceiling and org.status().pause_kind is None, "the provider never paused"
    assert shown["state"] == "throttled" and _states(shown) == {"handed_over": 3, "throttled": 7}
    waiting = [r for r in shown["recipients"] if r["submission_state"] == "throttled"]
    assert all("correspondence ceiling (95)" in r["last_error"] and r["attempts"] == 0 for r in waiting)
    assert "7 recipient(s) not submitted yet" in shown["last_error"]

    # It comes round after its back-off; the breaker refuses correspondence now, so it waits at the gate.
    org.clock.set(T0 + timedelta(seconds=budgets.DISPATCH_BACKOFF_BASE_SECONDS + 1))
    dispatch.sweep(org.node)
    shown = _shown(api, org, sent.id)
    assert (shown["state"], shown["state_reason"]) == ("awaiting", "provider_unavailable")
    assert _states(shown) == {"handed_over": 3, "awaiting": 7}
    assert org.requests() == before + 3
    # ...and is not read again while the breaker refuses it.
    org.clock.set(T0 + timedelta(hours=6))
    assert sent.id not in dispatch.due_ids(org.node)
    assert dispatch.sweep(org.node).results == []

    org.clock.set(AFTER_MIDNIGHT)
    dispatch.sweep(org.node)
    shown = _shown(api, org, sent.id)
    assert shown["state"] == "handed_over" and _states(shown) == {"handed_over": 10}
    assert sorted(_posted_to(org, before)) == many, "each recipient was handed over exactly once"


def test_deferrable_to_many_hands_over_up_to_the_daily_limit_and_the_rest_go_after_midnight(
        api: Any, org: Org) -> None:
    limit = budgets.PROVIDER_DAILY_LIMIT_DEFAULT
    _at_reading(org, limit - 2, "deferrable")
    many = [f"member{i}@remote.test" for i in range(6)]
    sent = _seal(org, many, "deferrable")
    before = org.requests()

    dispatch.sweep(org.node)  # deferrable mail's first hand-over is the dispatch sweep's
    shown = _shown(api, org, sent.id)
    assert org.requests() == before + 2, "no provider request past the daily limit"
    assert org.status().pause_kind is None, "no daily_quota_exceeded was provoked, so nothing paused"
    assert shown["state"] == "throttled" and _states(shown) == {"handed_over": 2, "throttled": 4}

    # The sweeper owns it now; while the breaker refuses deferrable mail it spends nothing.
    org.clock.set(T0 + timedelta(hours=1))
    sweeper.run_pass(org.node)
    shown = _shown(api, org, sent.id)
    assert shown["state"] == "throttled" and shown["attempts"] == 1 and org.requests() == before + 2

    org.clock.set(AFTER_MIDNIGHT)
    sweeper.run_pass(org.node)
    shown = _shown(api, org, sent.id)
    assert shown["state"] == "handed_over" and _states(shown) == {"handed_over": 6}
    assert sorted(_posted_to(org, before)) == sorted(many)


def test_a_send_larger_than_the_ceiling_is_not_refused_up_front(api: Any, org: Org) -> None:
    org.emulator.config.rate_limit_per_second = 1000
    _spend_elsewhere(org, 50)
    # More recipients than the whole correspondence ceiling: it must still start, and go as far as it may.
    many = [f"crowd{i:03d}@remote.test" for i in range(budgets.PROVIDER_CORRESPONDENCE_CEILING_DEFAULT + 5)]
    sent = _seal(org, many, "correspondence")
    dispatch.sweep(org.node)
    shown = _shown(api, org, sent.id)
    handed = budgets.PROVIDER_CORRESPONDENCE_CEILING_DEFAULT - 50
    assert _states(shown) == {"handed_over": handed, "throttled": len(many) - handed}
    assert org.requests() == handed
