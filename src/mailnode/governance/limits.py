"""Per-organisation breaker limits: read and changed by administrators, bounded, validated, audited.

spec/outbound.md A17; issue 17 item 4. ``breaker_limits`` holds one row per organisation, NULL = the
default in ``budgets.py``; ``governance.breakers`` reads it inside its one statement. This module is its
only writer: ``GET/PATCH /api/breaker-limits`` and ``mailnode breakers limits|set-limits`` call
``read``/``change``. Each limit shows its value, its default, where the default came from and its
bounds. ``check_changes`` is the pure validation (a table test); the windows are not overridable (each
is the bound of an index seek, ``governance.breakers``).

Errors: ``E_NOT_AN_ADMINISTRATOR`` (403); ``E_REQUEST_INVALID`` (422) for a name that is not a limit;
``E_BREAKER_LIMIT_NOT_INTEGER`` (422) for a value that is not a JSON integer (``true``, ``"10"``, 2.5);
``E_BREAKER_LIMIT_OUT_OF_RANGE`` (422) outside the limit's bounds. A refusal writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update

from mailnode import audit, budgets
from mailnode.authz import is_admin
from mailnode.errors import invalid, not_an_administrator
from mailnode.governance.breakers import LIMIT_COLUMNS
from mailnode.schema.governance import breaker_limits


@dataclass(frozen=True)
class LimitSpec:
    """One overridable limit: its default, where that came from, its unit and its bounds (inclusive)."""

    name: str
    default: int
    source: str
    unit: str
    minimum: int
    maximum: int


_SEED = "seed 000 and the reference node"
#: Every overridable limit, in ``breakers.LIMIT_COLUMNS`` order. Total over ``LIMIT_COLUMNS`` (a test).
SPECS: dict[str, LimitSpec] = {s.name: s for s in (
    LimitSpec("volume_max_recipients", budgets.BREAKER_VOLUME_MAX_RECIPIENTS,
              f"budgets.BREAKER_VOLUME_MAX_RECIPIENTS ({_SEED}: 500 recipients an hour)", "recipients per hour",
              budgets.BREAKER_VOLUME_MAX_RECIPIENTS_MIN, budgets.BREAKER_VOLUME_MAX_RECIPIENTS_MAX),
    LimitSpec("bounce_max_percent", budgets.BREAKER_BOUNCE_MAX_PERCENT,
              f"budgets.BREAKER_BOUNCE_MAX_PERCENT ({_SEED}: over 30 % in 6 hours)", "percent",
              budgets.BREAKER_PERCENT_MIN, budgets.BREAKER_PERCENT_MAX),
    LimitSpec("bounce_min_observations", budgets.BREAKER_BOUNCE_MIN_OBSERVATIONS,
              f"budgets.BREAKER_BOUNCE_MIN_OBSERVATIONS ({_SEED}: at least 20)", "observations",
              budgets.BREAKER_MIN_OBSERVATIONS_MIN, budgets.BREAKER_MIN_OBSERVATIONS_MAX),
    LimitSpec("complaint_max_percent", budgets.BREAKER_COMPLAINT_MAX_PERCENT,
              f"budgets.BREAKER_COMPLAINT_MAX_PERCENT ({_SEED}: over 5 % in 24 hours)", "percent",
              budgets.BREAKER_PERCENT_MIN, budgets.BREAKER_PERCENT_MAX),
    LimitSpec("complaint_min_observations", budgets.BREAKER_COMPLAINT_MIN_OBSERVATIONS,
              f"budgets.BREAKER_COMPLAINT_MIN_OBSERVATIONS ({_SEED}: at least 50)", "observations",
              budgets.BREAKER_MIN_OBSERVATIONS_MIN, budgets.BREAKER_MIN_OBSERVATIONS_MAX),
)}


def check_changes(changes: Mapping[str, object]) -> dict[str, int | None]:
    """The changes of a ``PATCH /api/breaker-limits`` checked: ``{name: value}``, None = back to the
    default. Pure; raises the module's 422s (the first refusal in ``SPECS`` order, unknown names first)."""
    unknown = sorted(k for k in changes if k not in SPECS)
    if unknown:
        raise invalid("E_REQUEST_INVALID", f"Unknown breaker limits: {', '.join(unknown)}.",
                      f"The limits an organisation may set are {', '.join(SPECS)}; the windows are node-wide.",
                      "Send only those (null resets one to its default); GET /api/breaker-limits shows them.",
                      unknown=unknown)
    checked: dict[str, int | None] = {}
    for name, spec in SPECS.items():
        if name not in changes:
            continue
        value = changes[name]
        if value is None:
            checked[name] = None
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise invalid("E_BREAKER_LIMIT_NOT_INTEGER",
                          f"{name} is {str(value)[:40]!r} ({type(value).__name__}), not a whole number.",
                          f"Breaker limits are whole numbers of {spec.unit}; true, a string or a fraction would "
                          "be read as a different limit than the one meant.",
                          f"Send {name} as a JSON integer between {spec.minimum} and {spec.maximum}, or null for "
                          f"the default ({spec.default}).", field=name, type=type(value).__name__)
        if not spec.minimum <= value <= spec.maximum:
            raise invalid("E_BREAKER_LIMIT_OUT_OF_RANGE",
                          f"{name} is {value}; it must be between {spec.minimum} and {spec.maximum} {spec.unit}.",
                          "Outside these bounds a breaker either stops all mail or can never trip "
                          "(budgets.BREAKER_*_MIN/MAX say why each bound is where it is).",
                          f"Send a value between {spec.minimum} and {spec.maximum}, or null for the default "
                          f"({spec.default}, {spec.source}). To stop a domain's mail, request a domain pause.",
                          field=name, observed=value, minimum=spec.minimum, maximum=spec.maximum)
        checked[name] = value
    return checked


def _stored(conn: Connection, org_id: str) -> Any:
    return conn.execute(select(breaker_limits).where(breaker_limits.c.org_id == org_id)).first()


def to_json(row: Any) -> dict[str, Any]:
    """The API shape: ``{"limits": [{name, value, default, overridden, source, unit, minimum, maximum}],
    "updated_by", "updated_at"}`` (``value`` is the limit in force)."""
    items = []
    for name, spec in SPECS.items():
        stored = row._mapping[name] if row is not None else None
        items.append({"name": name, "value": spec.default if stored is None else int(stored),
                      "default": spec.default, "overridden": stored is not None, "source": spec.source,
                      "unit": spec.unit, "minimum": spec.minimum, "maximum": spec.maximum})
    return {"limits": items, "updated_by": row.updated_by if row is not None else None,
            "updated_at": row.updated_at.isoformat() if row is not None and row.updated_at else None}


def _values(row: Any) -> dict[str, int | None]:
    return {c: (row._mapping[c] if row is not None else None) for c in LIMIT_COLUMNS}


def read(conn: Connection, *, org_id: str, actor_id: str | None) -> dict[str, Any]:
    """The organisation's limits with their defaults and sources (``to_json``). ``actor_id`` None is the
    installer at the data directory (the CLI). Raises ``E_NOT_AN_ADMINISTRATOR`` (403). One or two reads."""
    if actor_id is not None and not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("read the breaker limits")
    return to_json(_stored(conn, org_id))


def change(conn: Connection, *, org_id: str, actor_id: str | None, changes: Mapping[str, object],
           now: datetime) -> dict[str, Any]:
    """Set (or, with None, reset to the default) some limits; audited ``breaker_limits.changed`` with
    ``before`` and ``after`` (stored overrides; null = the default). ``actor_id`` None is the installer
    (``actor_kind = installer``). Raises ``E_NOT_AN_ADMINISTRATOR`` (403) and ``check_changes``' 422s;
    nothing is written when it raises. Takes effect at the next breaker reading (every seal and every
    hand-over recheck)."""
    if actor_id is not None and not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("change the breaker limits")
    asked = check_changes(changes)
    row = _stored(conn, org_id)
    before = _values(row)
    after = {**before, **asked}
    values: dict[str, Any] = {**after, "updated_by": actor_id or "installer", "updated_at": now}
    done = conn.execute(update(breaker_limits).where(breaker_limits.c.org_id == org_id).values(**values))
    if done.rowcount == 0:
        conn.execute(breaker_limits.insert().values(org_id=org_id, **values))
    audit.append(conn, org_id=org_id, at=now, action="breaker_limits.changed", actor_id=actor_id, subject=org_id,
                 detail={"before": before, "after": after},
                 actor_kind="installer" if actor_id is None else None)
    return to_json(_stored(conn, org_id))
