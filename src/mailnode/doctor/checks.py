"""The doctor's checks, one small function each, registered in ``CHECKS`` in report order.

Each check takes the ``Node`` and the organisation id and returns one ``Finding``; it must not raise for
a condition it can observe (a database that cannot be reached is a finding, not an exception).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import text

from mailnode import audit
from mailnode.db import migrate
from mailnode.doctor.butler_checks import BUTLER_CHECKS
from mailnode.doctor.findings import NODE, Finding, Severity
from mailnode.doctor.governance_checks import GOVERNANCE_CHECKS
from mailnode.doctor.ingress_checks import INGRESS_CHECKS
from mailnode.doctor.notify_checks import NOTIFY_CHECKS
from mailnode.node import Node

Check = Callable[[Node, str | None], Finding]


def database_reachable(node: Node, org_id: str | None) -> Finding:
    """The database answers a trivial query."""
    try:
        with node.read() as conn:
            conn.execute(text("SELECT 1"))
        return Finding("database_reachable", Severity.REFUSE, True, f"{node.engine.dialect.name} answers",
                       concerns=NODE)
    except Exception as exc:  # noqa: BLE001 - the failure is the finding, with its text
        return Finding("database_reachable", Severity.REFUSE, False, f"{type(exc).__name__}: {exc}",
                       "Check MAILNODE_DATABASE_URL and that the database server is running.")


def migrations_applied(node: Node, org_id: str | None) -> Finding:
    """The schema is at the newest migration."""
    try:
        current = migrate.current_revisions(node.engine)
    except Exception as exc:  # noqa: BLE001
        return Finding("migrations_applied", Severity.REFUSE, False, f"cannot read the revision: {exc}",
                       "Check the database, then run mailnode serve (it upgrades on start).")
    head = migrate.head_revisions()
    if current == head:
        return Finding("migrations_applied", Severity.REFUSE, True, f"at {', '.join(head)}", concerns=NODE)
    return Finding("migrations_applied", Severity.REFUSE, False,
                   f"database at {', '.join(current) or 'nothing'}, code expects {', '.join(head)}",
                   "Run mailnode serve or mailnode init, which upgrade the schema to head.",
                   {"current": list(current), "head": list(head)}, NODE)


def evidence_store_writable(node: Node, org_id: str | None) -> Finding:
    """A blob can be written to and read back from the evidence store."""
    ok, detail = node.evidence.writable()
    return Finding("evidence_store_writable", Severity.REFUSE, ok, detail,
                   "" if ok else "Make the data directory's evidence/ folder writable by the node's user.",
                   concerns=NODE)


def audit_chain_intact(node: Node, org_id: str | None) -> Finding:
    """The organisation's audit hash chain verifies from the first entry."""
    if org_id is None:
        return Finding("audit_chain_intact", Severity.REPORT, False, "no organisation: the node is not initialised",
                       "Run mailnode init.")
    with node.read() as conn:
        result = audit.verify(conn, org_id)
    if result.intact:
        return Finding("audit_chain_intact", Severity.REFUSE, True, f"{result.checked} entries verified",
                       data={"checked": result.checked})
    return Finding("audit_chain_intact", Severity.REFUSE, False,
                   f"broken at seq {result.broken_seq} ({result.broken_id}): {result.reason}",
                   "Restore the database from a backup taken before that entry; run mailnode audit verify.",
                   result.to_json())


#: Every check, in report order. Later capabilities add theirs here.
CHECKS: dict[str, Check] = {
    "database_reachable": database_reachable,
    "migrations_applied": migrations_applied,
    "evidence_store_writable": evidence_store_writable,
    "audit_chain_intact": audit_chain_intact,
    **INGRESS_CHECKS,
    **GOVERNANCE_CHECKS,
    **BUTLER_CHECKS,
    **NOTIFY_CHECKS,
}


def run_checks(node: Node, org_id: str | None, names: list[str] | None = None) -> list[Finding]:
    """Run the named checks (all by default); an unknown name raises ``KeyError``."""
    chosen = names or list(CHECKS)
    unknown = [n for n in chosen if n not in CHECKS]
    if unknown:
        raise KeyError(f"unknown doctor checks: {unknown}")
    findings = []
    for name in chosen:
        try:
            findings.append(CHECKS[name](node, org_id))
        except Exception as exc:  # noqa: BLE001 - a check that cannot run is itself a refusing finding
            findings.append(Finding(name, Severity.REFUSE, False,
                                    f"the check could not run: {type(exc).__name__}: {exc}",
                                    "Fix the failure above (usually the database), then run mailnode doctor again."))
    return findings
