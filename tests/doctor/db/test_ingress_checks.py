"""Doctor's ``materialisation_backlog`` reads the receipts neither materialised nor quarantined, and the age of
the oldest by the node's clock (issue 19)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update

from mailnode.doctor.checks import run_checks
from mailnode.ingress import receipts, routing
from mailnode.schema.ingress import ingress_receipts


def _accept(node: Any, n: int) -> str:
    raw = (f"From: someone@remote.test\r\nTo: support@example.test\r\nSubject: backlog {n}\r\n"
           f"Message-ID: <backlog{n}@remote.test>\r\n\r\nhello\r\n").encode()
    with node.read() as conn:
        route = routing.resolve(conn, "support@example.test")
    assert route is not None
    return receipts.accept(node, raw, receipts.Envelope(mail_from="someone@remote.test", routes=(route,)))[0]


def test_the_backlog_counts_waiting_receipts_and_ages_the_oldest(node: Any, installed: Any, clock: Any) -> None:
    def finding() -> Any:
        return run_checks(node, installed.org_id, ["materialisation_backlog"])[0]

    empty = finding()
    assert (empty.ok, empty.data["waiting"], empty.detail.split(":")[0]) == (True, 0, "none waiting")
    oldest = _accept(node, 1)
    clock.advance(50)
    _accept(node, 2)
    done = _accept(node, 3)
    set_aside = _accept(node, 4)
    with node.begin() as conn:
        conn.execute(update(ingress_receipts).where(ingress_receipts.c.id == done)
                     .values(materialised_at=clock.now()))
        conn.execute(update(ingress_receipts).where(ingress_receipts.c.id == set_aside)
                     .values(quarantined_at=clock.now()))
    young = finding()
    assert (young.ok, young.data["waiting"], young.data["oldest_age_seconds"]) == (True, 2, 50)
    clock.advance(100)
    old = finding()
    assert (old.ok, old.data["waiting"], old.data["oldest_age_seconds"]) == (False, 2, 150)
    with node.begin() as conn:
        conn.execute(update(ingress_receipts).where(ingress_receipts.c.id == oldest)
                     .values(materialised_at=clock.now()))
    assert finding().data["oldest_age_seconds"] == 100
