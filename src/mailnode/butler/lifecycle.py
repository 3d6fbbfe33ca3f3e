"""The Butler lifecycle: create, save a draft, publish, and read Butlers; administrators only.

Issue 6 "Lifecycle and routes"; spec/butler.md §10. A version moves ``draft -> published ->
superseded`` and nothing else: a Butler has at most one draft (editable by replacement, never run) and
at most one published (live) version; publishing supersedes the live one in the same transaction and
records the publisher as the sponsor. Rollback is publishing the old source again as a new version.
The database enforces the one-draft / one-live rule and freezes published rows (``tables``); this
module decides, in a pure function, whether a publication may happen (``decide_publication``).

Every function takes a ``Connection`` already in a transaction (the caller decides its boundary),
checks ``org.admin`` itself, and writes its audit entry (``butler.drafted``, ``butler.published``) in
that same transaction. Codes:

- ``E_NOT_AN_ADMINISTRATOR`` (403) on every write by anyone else; reads answer ``E_NO_SUCH_BUTLER``
  (404) instead, so a non-administrator cannot learn that a Butler exists;
- ``E_NO_SUCH_BUTLER`` (404), ``E_ID_MALFORMED`` (422);
- ``E_BUTLER_NEEDS_A_NAME`` (422), ``E_BUTLER_NAME_TAKEN`` (409);
- ``E_BUDGET_EXCEEDED`` (422) naming ``BUTLER_NAME_MAX_CHARS``, ``BUTLER_SOURCE_MAX_BYTES`` or
  ``BUTLER_VERSION_MAX_BYTES``;
- ``E_BUTLER_DOES_NOT_CHECK`` (422, every finding in ``detail.findings``), on every write and again at
  publication, where a stored draft may have stopped checking (a price or the pot changed);
- ``E_BUTLER_DISABLE_REASON_REQUIRED`` (422), ``E_BUTLER_ALREADY_DISABLED`` / ``E_BUTLER_NOT_DISABLED``
  (409): ``disable`` and ``enable`` (issue 17 item 13; ``butler.disabled`` / ``butler.enabled``);
- ``E_BUTLER_NO_DRAFT`` (409), ``E_BUTLER_DRAFT_INCOHERENT`` (409: the stored digests are not those of
  the stored source), ``E_BUTLER_UNCHANGED`` (409: the draft's ``ast_sha256`` is the live version's),
  ``E_BUTLER_PUBLISH_RACED`` (409: the draft or the live version changed under the publication).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from mailnode import audit, budgets
from mailnode.authz import is_admin, require_admin
from mailnode.butler import canonical, pause
from mailnode.butler.check import check
from mailnode.errors import MailnodeError, conflict, invalid, limit_exceeded, not_found
from mailnode.ids import new_id, parse_id
from mailnode.schema.butler import butler_versions, butlers
from mailnode.schema.butler_runs import butler_pauses

_V = butler_versions.c
#: The columns of a version without its bodies (history is listed without them).
_META = (_V.id, _V.butler_id, _V.state, _V.version, _V.ast_sha256, _V.source_sha256, _V.price, _V.created_by,
         _V.created_at, _V.published_by, _V.published_at, _V.superseded_at)


# --- validation of a source --------------------------------------------------------------------------

@dataclass(frozen=True)
class Checked:
    """A source that passed every check, with what is stored beside it.

    ``ast_json`` is the RFC 8785 canonical form (text); ``ast_sha256`` is over its UTF-8 bytes and
    ``source_sha256`` over the source's; ``price`` in SQL statements; ``nodes`` the node count;
    ``trigger`` is ``{"event", "mailbox"}``.
    """

    source: str
    ast_json: str
    ast_sha256: str
    source_sha256: str
    price: int
    nodes: int
    trigger: dict[str, str]


def checked(source: str, pot: int) -> Checked:
    """Validate ``source`` for storage: size, the full checker (priced against ``pot``,
    ``Settings.butler_run_pot``), then the stored size.

    Raises ``E_BUDGET_EXCEEDED`` (422) naming ``BUTLER_SOURCE_MAX_BYTES`` before reading the source,
    ``E_BUTLER_DOES_NOT_CHECK`` (422) with every finding in ``detail.findings``, and
    ``E_BUDGET_EXCEEDED`` naming ``BUTLER_VERSION_MAX_BYTES`` when source plus canonical form outgrow
    a stored version.
    """
    data = canonical.source_bytes(source)
    if data is not None and len(data) > budgets.BUTLER_SOURCE_MAX_BYTES:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "BUTLER_SOURCE_MAX_BYTES", budgets.BUTLER_SOURCE_MAX_BYTES,
                             len(data), "Shorten the program, or split it into several Butlers.")
    result = check(source, pot=pot)
    if not result.ok or data is None or result.ast is None or result.ast_json is None \
            or result.ast_sha256 is None or result.source_sha256 is None or result.price is None:
        findings = [f.to_json() for f in result.findings]
        count = len(findings)
        raise invalid(
            "E_BUTLER_DOES_NOT_CHECK",
            f"The program does not check: {count} finding{'s' if count != 1 else ''}, the first "
            f"{findings[0]['code'] if findings else '(none)'}.",
            "Only a program the checker accepts is stored or published.",
            "Fix every finding in detail.findings (mailnode butler check FILE prints them), then send it again.",
            findings=findings,
        )
    stored = len(data) + len(result.ast_json)
    if stored > budgets.BUTLER_VERSION_MAX_BYTES:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "BUTLER_VERSION_MAX_BYTES", budgets.BUTLER_VERSION_MAX_BYTES,
                             stored, "Shorten the program (its canonical form is stored beside the source).")
    trigger = result.ast.trigger
    return Checked(source=source, ast_json=result.ast_json.decode("utf-8"), ast_sha256=result.ast_sha256,
                   source_sha256=result.source_sha256, price=result.price.total, nodes=len(result.ast.nodes),
                   trigger={"event": trigger.event, "mailbox": trigger.mailbox})


def _clean_name(name: str) -> str:
    clean = (name or "").strip()
    if not clean:
        raise invalid("E_BUTLER_NEEDS_A_NAME", "A Butler needs a name.", "The name was empty.",
                      'Send {"name": "Acknowledge support mail", "source": "..."}.')
    if len(clean) > budgets.BUTLER_NAME_MAX_CHARS:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "BUTLER_NAME_MAX_CHARS", budgets.BUTLER_NAME_MAX_CHARS,
                             len(clean), "Choose a shorter name.")
    return clean


# --- the publication decision (pure) -----------------------------------------------------------------

@dataclass(frozen=True)
class StoredVersion:
    """The facts of one stored version a publication compares: its id, number and digests."""

    id: str
    version: int | None
    ast_sha256: str
    source_sha256: str


@dataclass(frozen=True)
class Publication:
    """What publishing will write: promote ``draft_id`` as ``version``, supersede ``superseded_id``."""

    butler_id: str
    draft_id: str
    version: int
    superseded_id: str | None
    ast_sha256: str
    source_sha256: str
    trigger: dict[str, str]


def decide_publication(butler_id: str, draft: StoredVersion, rechecked: Checked, live: StoredVersion | None,
                       last_version: int) -> Publication:
    """Decide whether ``draft`` (whose source re-checked as ``rechecked``) may replace ``live``.

    ``last_version`` is the highest version number the Butler has used (0 for none). Raises
    ``E_BUTLER_DRAFT_INCOHERENT`` (409) when the stored digests are not the re-checked ones, and
    ``E_BUTLER_UNCHANGED`` (409) when the program (its ``ast_sha256``) is the live one: a version that
    differs only in formatting is the same program.
    """
    if (draft.ast_sha256, draft.source_sha256) != (rechecked.ast_sha256, rechecked.source_sha256):
        raise conflict(
            "E_BUTLER_DRAFT_INCOHERENT",
            f"Draft {draft.id} does not match its stored digests.",
            "The stored source was changed outside mailnode, so what was checked is not what would run.",
            f"Save the draft again: PUT /api/butlers/{butler_id}/draft.",
            version_id=draft.id, stored_ast_sha256=draft.ast_sha256, ast_sha256=rechecked.ast_sha256,
            stored_source_sha256=draft.source_sha256, source_sha256=rechecked.source_sha256,
        )
    if live is not None and live.ast_sha256 == rechecked.ast_sha256:
        raise conflict(
            "E_BUTLER_UNCHANGED",
            f"The draft is the program already live as version {live.version}.",
            "Its canonical form (ast_sha256) equals the live version's; publishing it would change nothing.",
            f"Change the program (PUT /api/butlers/{butler_id}/draft), or leave version {live.version} live.",
            live_version_id=live.id, live_version=live.version, ast_sha256=live.ast_sha256,
        )
    return Publication(butler_id=butler_id, draft_id=draft.id, version=last_version + 1,
                       superseded_id=live.id if live is not None else None, ast_sha256=rechecked.ast_sha256,
                       source_sha256=rechecked.source_sha256, trigger=rechecked.trigger)


# --- reading ------------------------------------------------------------------------------------------

def no_such_butler(butler_id: str) -> MailnodeError:
    """The 404 for an absent Butler, or any Butler when the caller is not an administrator."""
    return not_found("E_NO_SUCH_BUTLER", f"No Butler {butler_id}.",
                     fix="List Butlers with GET /api/butlers (administrators).", butler_id=butler_id)


def _butler_row(conn: Connection, org_id: str, butler_id: str, for_update: bool = False) -> Any:
    parse_id(butler_id, "btl", "butler_id")
    q = select(butlers).where(butlers.c.id == butler_id, butlers.c.org_id == org_id)
    row = conn.execute(q.with_for_update() if for_update else q).first()
    if row is None:
        raise no_such_butler(butler_id)
    return row


def _version_json(row: Any, with_source: bool) -> dict[str, Any]:
    out = {
        "id": row.id, "state": row.state, "version": row.version, "ast_sha256": row.ast_sha256,
        "source_sha256": row.source_sha256, "price": row.price, "created_by": row.created_by,
        "created_at": row.created_at.isoformat(), "published_by": row.published_by,
        "published_at": row.published_at.isoformat() if row.published_at else None,
        "superseded_at": row.superseded_at.isoformat() if row.superseded_at else None,
    }
    if with_source:
        out["source"] = row.source_text
    return out


def butler_json(conn: Connection, row: Any) -> dict[str, Any]:
    """One Butler: ``{id, name, created_by, created_at, draft, live, versions}``.

    ``draft`` and ``live`` are the current draft and published version with their ``source`` (or
    null); ``versions`` is every version without bodies, the draft first, then newest version first.
    """
    current = conn.execute(select(butler_versions).where(
        _V.butler_id == row.id, _V.state.in_(("draft", "published")))).all()
    history = conn.execute(select(*_META).where(_V.butler_id == row.id)
                           .order_by(_V.version.is_(None).desc(), _V.version.desc())).all()
    by_state = {r.state: _version_json(r, with_source=True) for r in current}
    return {
        "id": row.id, "name": row.name, "created_by": row.created_by, "created_at": row.created_at.isoformat(),
        "disabled": disabled_json(row),
        "draft": by_state.get("draft"), "live": by_state.get("published"),
        "versions": [_version_json(r, with_source=False) for r in history],
    }


def disabled_json(row: Any) -> dict[str, Any] | None:
    """``{at, by, reason}`` of a disabled Butler's row, None while it is enabled."""
    if row.disabled_at is None:
        return None
    return {"at": row.disabled_at.isoformat(), "by": row.disabled_by, "reason": row.disabled_reason}


# --- disabling: no new runs, grants untouched --------------------------------------------------------

def disable(conn: Connection, *, org_id: str, actor_id: str, at: datetime, butler_id: str,
            reason: str) -> dict[str, Any]:
    """Disable a Butler: no delivery opens a run of it and no re-run starts, until ``enable``.

    Runs already open walk on to their end (a parked run can still be released). Its grants, its versions
    and its pauses are untouched: disabling is the administrator's switch, a pause the node's latch
    (seed 003 "The pause"), a revocation the authority's end. Audited ``butler.disabled`` with the reason.
    Returns ``butler_json``. Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_SUCH_BUTLER`` (404),
    ``E_BUTLER_DISABLE_REASON_REQUIRED`` (422), ``E_BUDGET_EXCEEDED`` (422, ``BUTLER_DISABLE_REASON_MAX_CHARS``),
    ``E_BUTLER_ALREADY_DISABLED`` (409).
    """
    require_admin(conn, org_id, actor_id, "disable a Butler")
    row = _butler_row(conn, org_id, butler_id)
    clean = (reason or "").strip()
    if not clean:
        raise invalid("E_BUTLER_DISABLE_REASON_REQUIRED", "Disabling a Butler needs a reason.",
                      "It stops the Butler answering mail; whoever reads the trail later needs to know why.",
                      f'Send {{"reason": "..."}} to POST /api/butlers/{butler_id}/disable '
                      f'(mailnode butler disable {butler_id} --reason "...").', butler_id=butler_id)
    if len(clean) > budgets.BUTLER_DISABLE_REASON_MAX_CHARS:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "BUTLER_DISABLE_REASON_MAX_CHARS",
                             budgets.BUTLER_DISABLE_REASON_MAX_CHARS, len(clean), "Say it in fewer words.")
    done = conn.execute(update(butlers).where(butlers.c.id == butler_id, butlers.c.disabled_at.is_(None))
                        .values(disabled_at=at, disabled_by=actor_id, disabled_reason=clean))
    if done.rowcount != 1:
        raise conflict("E_BUTLER_ALREADY_DISABLED", f"Butler {butler_id} is already disabled.",
                       f"It was disabled at {row.disabled_at.isoformat() if row.disabled_at else 'the same moment'}.",
                       f"Enable it with POST /api/butlers/{butler_id}/enable (mailnode butler enable {butler_id}).",
                       butler_id=butler_id)
    audit.append(conn, org_id=org_id, at=at, action="butler.disabled", actor_id=actor_id, subject=butler_id,
                 detail={"name": row.name, "reason": clean})
    return butler_json(conn, _butler_row(conn, org_id, butler_id))


def enable(conn: Connection, *, org_id: str, actor_id: str, at: datetime, butler_id: str,
           reason: str = "") -> dict[str, Any]:
    """Enable a disabled Butler: deliveries open its runs again. Audited ``butler.enabled`` with the reason it
    was disabled for and ``reason``, why it may answer mail again (optional, as on a domain lift: the disable
    already recorded a person's why; blank is recorded as null). Returns ``butler_json``. Raises
    ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_SUCH_BUTLER`` (404), ``E_BUDGET_EXCEEDED`` (422,
    ``BUTLER_DISABLE_REASON_MAX_CHARS``), ``E_BUTLER_NOT_DISABLED`` (409). A pause in force stays in force
    (resume it on its own route)."""
    require_admin(conn, org_id, actor_id, "enable a Butler")
    row = _butler_row(conn, org_id, butler_id)
    clean = (reason or "").strip()
    if len(clean) > budgets.BUTLER_DISABLE_REASON_MAX_CHARS:
        raise limit_exceeded("E_BUDGET_EXCEEDED", "BUTLER_DISABLE_REASON_MAX_CHARS",
                             budgets.BUTLER_DISABLE_REASON_MAX_CHARS, len(clean), "Say it in fewer words.")
    done = conn.execute(update(butlers).where(butlers.c.id == butler_id, butlers.c.disabled_at.is_not(None))
                        .values(disabled_at=None, disabled_by=None, disabled_reason=None))
    if done.rowcount != 1:
        raise conflict("E_BUTLER_NOT_DISABLED", f"Butler {butler_id} is not disabled.", "There is nothing to enable.",
                       f"Read it with GET /api/butlers/{butler_id}.", butler_id=butler_id)
    audit.append(conn, org_id=org_id, at=at, action="butler.enabled", actor_id=actor_id, subject=butler_id,
                 detail={"name": row.name, "was_disabled_at": row.disabled_at.isoformat() if row.disabled_at else None,
                         "was_disabled_for": row.disabled_reason, "reason": clean or None})
    return butler_json(conn, _butler_row(conn, org_id, butler_id))


def get_butler(conn: Connection, *, org_id: str, principal_id: str, butler_id: str) -> dict[str, Any]:
    """One Butler (``butler_json``) for an administrator; ``E_NO_SUCH_BUTLER`` (404) for anyone else."""
    if not is_admin(conn, org_id, principal_id):
        raise no_such_butler(butler_id)
    return butler_json(conn, _butler_row(conn, org_id, butler_id))


def list_butlers(conn: Connection, *, org_id: str, principal_id: str, limit: int,
                 cursor: str | None) -> list[dict[str, Any]]:
    """The organisation's Butlers by name after ``cursor`` (a name), without sources (administrators).

    Each is ``{id, name, created_by, created_at, live: {id, version, ast_sha256, published_by,
    published_at} | null, draft: {id, ast_sha256, created_by, created_at} | null, pause: {id, reason,
    placed_at, resume} | null, disabled: {at, by, reason} | null}`` ("published" and "running" are different
    facts). Anyone else gets
    ``E_NO_SUCH_BUTLER`` (404): the list would disclose that Butlers exist.
    """
    if not is_admin(conn, org_id, principal_id):
        raise not_found("E_NO_SUCH_BUTLER", "No Butlers to show.",
                        fix="Butlers are administered by administrators; ask one.")
    live = butler_versions.alias("live")
    draft = butler_versions.alias("draft")
    q = (select(butlers, live.c.id.label("live_id"), live.c.version.label("live_version"),
                live.c.ast_sha256.label("live_ast_sha256"), live.c.published_by, live.c.published_at,
                draft.c.id.label("draft_id"), draft.c.ast_sha256.label("draft_ast_sha256"),
                draft.c.created_by.label("draft_created_by"), draft.c.created_at.label("draft_created_at"),
                butler_pauses.c.id.label("pause_id"), butler_pauses.c.placed_at.label("paused_at"),
                butler_pauses.c.reason.label("pause_reason"))
         .outerjoin(live, (live.c.butler_id == butlers.c.id) & (live.c.state == "published"))
         .outerjoin(butler_pauses, pause.in_force_on(butlers.c.org_id, butlers.c.id))
         .outerjoin(draft, (draft.c.butler_id == butlers.c.id) & (draft.c.state == "draft"))
         .where(butlers.c.org_id == org_id).order_by(butlers.c.name).limit(limit))
    if cursor:
        q = q.where(butlers.c.name > cursor)
    return [{
        "id": r.id, "name": r.name, "created_by": r.created_by, "created_at": r.created_at.isoformat(),
        "disabled": disabled_json(r),
        "live": None if r.live_id is None else {
            "id": r.live_id, "version": r.live_version, "ast_sha256": r.live_ast_sha256,
            "published_by": r.published_by, "published_at": r.published_at.isoformat()},
        "draft": None if r.draft_id is None else {
            "id": r.draft_id, "ast_sha256": r.draft_ast_sha256, "created_by": r.draft_created_by,
            "created_at": r.draft_created_at.isoformat()},
        "pause": None if r.pause_id is None else {
            "id": r.pause_id, "reason": r.pause_reason, "placed_at": r.paused_at.isoformat(),
            "resume": pause.RESUME_ROUTE.replace("{id}", r.pause_id)},
    } for r in conn.execute(q)]


# --- writing ------------------------------------------------------------------------------------------

def _insert_draft(conn: Connection, *, org_id: str, butler_id: str, actor_id: str, at: datetime,
                  c: Checked) -> str:
    vid = new_id("btv")
    conn.execute(butler_versions.insert().values(
        id=vid, org_id=org_id, butler_id=butler_id, state="draft", version=None, source_text=c.source,
        ast_json=c.ast_json, ast_sha256=c.ast_sha256, source_sha256=c.source_sha256, price=c.price,
        created_by=actor_id, created_at=at))
    return vid


def _audit_drafted(conn: Connection, *, org_id: str, actor_id: str, at: datetime, butler_id: str, name: str,
                   version_id: str, c: Checked, replaced_draft_id: str | None) -> None:
    audit.append(conn, org_id=org_id, at=at, action="butler.drafted", actor_id=actor_id, subject=butler_id,
                 detail={"name": name, "version_id": version_id, "ast_sha256": c.ast_sha256,
                         "source_sha256": c.source_sha256, "nodes": c.nodes, "price": c.price,
                         "replaced_draft_id": replaced_draft_id})


def create_butler(conn: Connection, *, org_id: str, actor_id: str, at: datetime, name: str,
                  source: str, pot: int) -> dict[str, Any]:
    """Create a Butler named ``name`` whose first draft is ``source``; returns ``butler_json``.

    ``pot`` is ``Settings.butler_run_pot``, what the checker prices against (as in ``save_draft``, ``publish``).

    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_BUTLER_NEEDS_A_NAME`` / ``E_BUDGET_EXCEEDED`` /
    ``E_BUTLER_DOES_NOT_CHECK`` (422), ``E_BUTLER_NAME_TAKEN`` (409). Audits ``butler.drafted``.
    """
    require_admin(conn, org_id, actor_id, "create a Butler")
    clean = _clean_name(name)
    c = checked(source, pot)
    taken = conn.execute(select(butlers.c.id).where(butlers.c.org_id == org_id, butlers.c.name == clean)).first()
    if taken is not None:
        raise conflict("E_BUTLER_NAME_TAKEN", f"A Butler named {clean!r} already exists.",
                       "A Butler's name is unique in its organisation.",
                       f"Choose another name, or save a draft of the existing one: PUT /api/butlers/{taken.id}/draft.",
                       name=clean, butler_id=taken.id)
    bid = new_id("btl")
    conn.execute(butlers.insert().values(id=bid, org_id=org_id, name=clean, created_by=actor_id, created_at=at))
    vid = _insert_draft(conn, org_id=org_id, butler_id=bid, actor_id=actor_id, at=at, c=c)
    _audit_drafted(conn, org_id=org_id, actor_id=actor_id, at=at, butler_id=bid, name=clean, version_id=vid, c=c,
                   replaced_draft_id=None)
    return butler_json(conn, _butler_row(conn, org_id, bid))


def save_draft(conn: Connection, *, org_id: str, actor_id: str, at: datetime, butler_id: str,
               source: str, pot: int) -> dict[str, Any]:
    """Replace the Butler's draft (or start one) with ``source``; the new draft gets a new ``btv_`` id.

    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_SUCH_BUTLER`` (404), ``E_BUDGET_EXCEEDED`` /
    ``E_BUTLER_DOES_NOT_CHECK`` (422). Audits ``butler.drafted`` with ``replaced_draft_id``.
    """
    require_admin(conn, org_id, actor_id, "save a Butler draft")
    row = _butler_row(conn, org_id, butler_id, for_update=True)
    c = checked(source, pot)
    old = conn.execute(select(_V.id).where(_V.butler_id == butler_id, _V.state == "draft")).first()
    if old is not None:
        conn.execute(delete(butler_versions).where(_V.id == old.id, _V.state == "draft"))
    vid = _insert_draft(conn, org_id=org_id, butler_id=butler_id, actor_id=actor_id, at=at, c=c)
    _audit_drafted(conn, org_id=org_id, actor_id=actor_id, at=at, butler_id=butler_id, name=row.name,
                   version_id=vid, c=c, replaced_draft_id=old.id if old is not None else None)
    return butler_json(conn, row)


def _stored(row: Any) -> StoredVersion:
    return StoredVersion(id=row.id, version=row.version, ast_sha256=row.ast_sha256, source_sha256=row.source_sha256)


def publish(conn: Connection, *, org_id: str, actor_id: str, at: datetime, butler_id: str,
            pot: int) -> dict[str, Any]:
    """Publish the Butler's draft, superseding the live version; the caller becomes the sponsor.

    Returns ``{"butler": butler_json, "published": {version_id, version, superseded_version_id}}``.
    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_SUCH_BUTLER`` (404), ``E_BUTLER_NO_DRAFT`` (409),
    ``E_BUTLER_DOES_NOT_CHECK`` / ``E_BUDGET_EXCEEDED`` (422) when the stored draft no longer checks,
    ``E_BUTLER_DRAFT_INCOHERENT`` / ``E_BUTLER_UNCHANGED`` / ``E_BUTLER_PUBLISH_RACED`` (409).
    Audits ``butler.published``.
    """
    require_admin(conn, org_id, actor_id, "publish a Butler")
    row = _butler_row(conn, org_id, butler_id, for_update=True)
    current = {r.state: r for r in conn.execute(select(butler_versions).where(
        _V.butler_id == butler_id, _V.state.in_(("draft", "published")))).all()}
    draft = current.get("draft")
    if draft is None:
        raise conflict("E_BUTLER_NO_DRAFT", f"Butler {butler_id} has no draft to publish.",
                       "Publishing promotes the draft; the live version is already published.",
                       f"Save a draft first: PUT /api/butlers/{butler_id}/draft.", butler_id=butler_id)
    live = current.get("published")
    last = conn.execute(select(func.max(_V.version)).where(_V.butler_id == butler_id)).scalar()
    decision = decide_publication(butler_id, _stored(draft), checked(draft.source_text, pot),
                                  _stored(live) if live is not None else None, int(last or 0))
    apply_publication(conn, org_id=org_id, actor_id=actor_id, at=at, name=row.name, publication=decision)
    return {"butler": butler_json(conn, row),
            "published": {"version_id": decision.draft_id, "version": decision.version,
                          "superseded_version_id": decision.superseded_id}}


def apply_publication(conn: Connection, *, org_id: str, actor_id: str, at: datetime, name: str,
                      publication: Publication) -> None:
    """Write ``publication``: supersede the live version, promote the draft, audit ``butler.published``.

    Each UPDATE names the state it expects; if either finds no such row (another writer got there
    between reading and writing) it raises ``E_BUTLER_PUBLISH_RACED`` (409) and the transaction rolls back.
    """
    p = publication
    if p.superseded_id is not None:
        moved = conn.execute(update(butler_versions).where(_V.id == p.superseded_id, _V.state == "published")
                             .values(state="superseded", superseded_at=at)).rowcount
        if moved != 1:
            raise _raced(p, p.superseded_id)
    promoted = conn.execute(update(butler_versions).where(_V.id == p.draft_id, _V.state == "draft")
                            .values(state="published", version=p.version, published_by=actor_id,
                                    published_at=at)).rowcount
    if promoted != 1:
        raise _raced(p, p.draft_id)
    audit.append(conn, org_id=org_id, at=at, action="butler.published", actor_id=actor_id, subject=p.butler_id,
                 detail={"name": name, "version_id": p.draft_id, "version": p.version, "ast_sha256": p.ast_sha256,
                         "source_sha256": p.source_sha256, "superseded_version_id": p.superseded_id,
                         "sponsor": actor_id, "trigger": p.trigger})


def _raced(p: Publication, version_id: str) -> MailnodeError:
    return conflict("E_BUTLER_PUBLISH_RACED",
                    f"Version {version_id} changed while Butler {p.butler_id} was being published.",
                    "Another draft was saved or published at the same time; nothing was published.",
                    f"Read the Butler again (GET /api/butlers/{p.butler_id}) and publish once more.",
                    butler_id=p.butler_id, version_id=version_id)
