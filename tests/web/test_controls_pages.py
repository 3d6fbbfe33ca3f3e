"""The controls under Limits and health over HTTP (``web.controls``): domain pauses requested by one
administrator and placed by two others, legal holds placed and their lift approved by two deciders, the
retention settings, and the suppression list with its CSV round trip; each form's refusal is the API's four
parts on the page, and a person who is not an administrator reads what they may and is refused the rest."""

from __future__ import annotations

import re
from typing import Any

import pytest
from markupsafe import escape
from sqlalchemy import event, func, select

from mailnode.governance import pause_reads
from mailnode.governance.approval_reads import Decision, Standing, still_needed
from mailnode.governance.pause_reads import PauseAction, PauseState
from mailnode.governance.policy import Stage
from mailnode.retention import hold_reads
from mailnode.retention.hold_reads import HoldAction, LiftState
from mailnode.schema.governance import domain_pauses
from mailnode.schema.outbound_suppression import suppressions
from mailnode.web.controls import DONE, done_words, seconds_field
from tests.search.conftest import World
from tests.web.conftest import csrf_of, sign_in


def as_(world: World, headers: dict[str, str]) -> str:
    """Sign the world's client in as the holder of ``headers``; the CSRF token of the session."""
    r = sign_in(world.api, headers["Authorization"].removeprefix("Bearer "))
    assert r.status_code == 200, r.text
    return csrf_of(r.text)


def admin(world: World, email: str) -> tuple[str, dict[str, str]]:
    """A new administrator; their id and header."""
    return world.person(email, ("org.admin", world.installed.org_id))


def code_of(html: str) -> str | None:
    """The refusal code a page shows, if any."""
    found = re.search(r'id="refusal-code"><code>([A-Z_]+)</code>', html)
    return found.group(1) if found else None


def said(done: str, html: str) -> bool:
    """Whether a page shows the sentence of the ``done`` key (as the template escapes it)."""
    return str(escape(DONE[done])) in html


def count(world: World, table: Any) -> int:
    with world.node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


# Pure decisions ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("placed", "lifted", "approval", "state"), [
    (False, False, None, PauseState.REQUESTED),
    (False, False, "pending", PauseState.REQUESTED),
    (True, False, "approved", PauseState.IN_FORCE),
    (True, True, "approved", PauseState.LIFTED),
    (False, False, "denied", PauseState.DENIED),
    (False, False, "unsatisfiable", PauseState.UNSATISFIABLE),
    (False, False, "cancelled", PauseState.CANCELLED),
    (False, False, "a state from the future", PauseState.REQUESTED),
])
def test_a_pauses_state(placed: bool, lifted: bool, approval: str | None, state: PauseState) -> None:
    assert pause_reads.state_of(placed=placed, lifted=lifted, approval_state=approval) is state


@pytest.mark.parametrize(("state", "reader", "is_admin", "decided", "actions"), [
    (PauseState.REQUESTED, "b", True, False, {PauseAction.DECIDE}),
    (PauseState.REQUESTED, "a", True, False, set()),  # the one who asked never decides
    (PauseState.REQUESTED, "b", True, True, set()),  # one decision per person
    (PauseState.REQUESTED, "b", False, False, set()),  # not an administrator
    (PauseState.IN_FORCE, "a", True, False, {PauseAction.LIFT}),  # any administrator lifts, the asker too
    (PauseState.IN_FORCE, "b", False, False, set()),
    (PauseState.LIFTED, "b", True, False, set()),
    (PauseState.DENIED, "b", True, False, set()),
])
def test_a_pauses_forms(state: PauseState, reader: str, is_admin: bool, decided: bool,
                        actions: set[PauseAction]) -> None:
    assert pause_reads.actions_for(state=state, reader_id=reader, reader_is_admin=is_admin, requested_by="a",
                                   decided=decided) == actions


@pytest.mark.parametrize(("in_force", "approval", "state"), [
    (True, None, LiftState.NONE), (True, "pending", LiftState.REQUESTED), (True, "denied", LiftState.REFUSED),
    (True, "unsatisfiable", LiftState.REFUSED), (True, "cancelled", LiftState.REFUSED),
    (True, "approved", LiftState.REQUESTED), (True, "unknown", LiftState.REQUESTED),
    (False, "approved", LiftState.LIFTED),
])
def test_a_holds_lift_state(in_force: bool, approval: str | None, state: LiftState) -> None:
    assert hold_reads.lift_state(in_force=in_force, approval_state=approval) is state


@pytest.mark.parametrize(("state", "reader", "is_admin", "decides", "decided", "actions"), [
    (LiftState.NONE, "a", True, False, False, {HoldAction.REQUEST_LIFT}),
    (LiftState.REFUSED, "a", True, False, False, {HoldAction.REQUEST_LIFT}),
    (LiftState.NONE, "a", False, True, False, set()),
    (LiftState.REQUESTED, "b", True, True, False, {HoldAction.DECIDE}),
    (LiftState.REQUESTED, "a", True, True, False, set()),  # the one who asked
    (LiftState.REQUESTED, "b", True, False, False, set()),  # holds no approval.decide on the mailbox
    (LiftState.REQUESTED, "b", True, True, True, set()),
    (LiftState.LIFTED, "b", True, True, False, set()),
])
def test_a_holds_forms(state: LiftState, reader: str, is_admin: bool, decides: bool, decided: bool,
                       actions: set[HoldAction]) -> None:
    assert hold_reads.actions_for(state=state, reader_id=reader, reader_is_admin=is_admin, requested_by="a",
                                  reader_decides_mailbox=decides, decided=decided) == actions


def test_what_an_approval_still_needs_counts_standing_approvals_per_stage() -> None:
    from datetime import UTC, datetime
    t = datetime(2026, 1, 1, tzinfo=UTC)
    two = (Stage(1, 2),)
    assert still_needed(Standing(two, ())) == 2
    assert still_needed(Standing(two, (Decision("b", "approve", 1, t, None),))) == 1
    assert still_needed(Standing(two, (Decision("b", "approve", 1, t, t),))) == 2  # withdrawn
    assert still_needed(Standing(two, (Decision("b", "deny", 1, t, None),))) == 2
    assert still_needed(Standing(two, (Decision("b", "approve", 1, t, None), Decision("c", "approve", 1, t, None),
                                       Decision("d", "approve", 1, t, None)))) == 0


@pytest.mark.parametrize(("typed", "value"), [("", None), ("  ", None), ("86400", 86400), (" 7 ", 7), ("-5", -5),
                                              ("ten", "ten"), ("1.5", "1.5"), ("١٢", "١٢")])
def test_a_retention_field(typed: str, value: object) -> None:
    assert seconds_field(typed) == value


def test_done_words_are_fixed_sentences() -> None:
    assert done_words("pause_lifted") == DONE["pause_lifted"]
    assert done_words("<script>") is None and done_words(None) is None


# Domain pauses ----------------------------------------------------------------------------------------------------


def test_a_lone_administrator_is_told_and_refused_with_nothing_written(world: World) -> None:
    csrf = as_(world, world.admin)
    page = world.api.get("/limits/pauses")
    assert page.status_code == 200 and 'id="too-few-admins"' in page.text
    assert 'id="subnav-pauses" aria-current="page"' in page.text and 'id="no-pauses"' in page.text
    r = world.api.post("/limits/pauses", data={"csrf_token": csrf, "domain": "example.test", "reason": "spam run"})
    assert r.status_code == 409 and code_of(r.text) == "E_DOMAIN_PAUSE_UNSATISFIABLE"
    assert "POST /api/policies" in r.text  # the fix names what a lone administrator can still do
    assert count(world, domain_pauses) == 0


def test_a_pause_is_requested_by_one_placed_by_two_others_and_lifted(world: World) -> None:
    b, b_h = admin(world, "bea@example.test")
    _, c_h = admin(world, "cem@example.test")
    csrf = as_(world, world.admin)
    r = world.api.post("/limits/pauses", data={"csrf_token": csrf, "domain": "Example.TEST", "reason": "spam run"})
    assert r.status_code == 200 and 'id="notice"' in r.text, r.text
    row = re.search(r'<tr class="pause state-requested" id="pause-(dpz_[^"]+)"', r.text)
    assert row, r.text
    pause_id = row.group(1)
    assert "waiting for 2 more approvals" in r.text and "You asked; two other administrators decide." in r.text
    approval = re.search(r'action="/limits/approvals/(apr_[^"]+)/decide"', r.text)
    assert approval is None  # the requester is offered no decision
    # The requester deciding anyway is refused by the approvals service, in words.
    with world.node.read() as conn:
        apr = pause_reads.read(conn, org_id=world.installed.org_id, reader_id=b, limit=10).pauses[0].approval_id
    own = world.api.post(f"/limits/approvals/{apr}/decide", data={"csrf_token": csrf, "decision": "approve",
                                                                  "back": "pauses"})
    assert own.status_code == 409 and code_of(own.text) == "E_APPROVER_IS_ACTOR"

    csrf = as_(world, b_h)
    seen = world.api.get("/limits/pauses").text
    assert f'id="approve-{apr}"' in seen and "Approve the pause of example.test" in seen
    r = world.api.post(f"/limits/approvals/{apr}/decide", data={"csrf_token": csrf, "decision": "approve",
                                                                "back": "pauses"})
    assert r.status_code == 200 and said("approved", r.text)
    assert "waiting for 1 more approval" in r.text and "Approved by: bea@example.test" in r.text
    assert f'id="approve-{apr}"' not in r.text and "You have decided." in r.text

    csrf = as_(world, c_h)
    r = world.api.post(f"/limits/approvals/{apr}/decide", data={"csrf_token": csrf, "decision": "approve",
                                                                "back": "pauses"})
    assert r.status_code == 200 and f'class="pause state-in_force" id="pause-{pause_id}"' in r.text
    assert "Approved by: bea@example.test, cem@example.test" in r.text
    assert world.api.get("/api/domain-pauses", headers=c_h).json()["pauses"][0]["pause_id"] == pause_id

    r = world.api.post(f"/limits/pauses/{pause_id}/lift", data={"csrf_token": csrf, "reason": "cleaned up"})
    assert r.status_code == 200 and said("pause_lifted", r.text)
    assert f'class="pause state-lifted" id="pause-{pause_id}"' in r.text and "(cleaned up)" in r.text
    again = world.api.post(f"/limits/pauses/{pause_id}/lift", data={"csrf_token": csrf})
    assert again.status_code == 409 and code_of(again.text) == "E_DOMAIN_PAUSE_ALREADY_LIFTED"
    assert world.api.get("/api/domain-pauses", headers=c_h).json()["pauses"] == []


def test_a_denied_request_is_shown_as_never_placed(world: World) -> None:
    _, b_h = admin(world, "bea@example.test")
    admin(world, "cem@example.test")
    csrf = as_(world, world.admin)
    world.api.post("/limits/pauses", data={"csrf_token": csrf, "domain": "example.test", "reason": "spam run"})
    csrf = as_(world, b_h)
    apr = re.search(r'action="/limits/approvals/(apr_[^"]+)/decide"', world.api.get("/limits/pauses").text)
    assert apr
    r = world.api.post(f"/limits/approvals/{apr.group(1)}/decide", data={"csrf_token": csrf, "decision": "deny",
                                                                         "back": "pauses"})
    assert r.status_code == 200 and said("denied", r.text)
    assert 'class="pause state-denied"' in r.text and "never placed" in r.text
    assert "Denied by: bea@example.test" in r.text


def test_a_form_without_the_csrf_token_is_refused(world: World) -> None:
    as_(world, world.admin)
    r = world.api.post("/limits/pauses", data={"domain": "example.test", "reason": "x"})
    assert r.status_code == 403 and code_of(r.text) == "E_CSRF_INVALID"


def test_the_pauses_page_reads_at_a_fixed_number_of_statements(world: World) -> None:
    b, _ = admin(world, "bea@example.test")
    admin(world, "cem@example.test")
    statements: list[str] = []

    def record(*args: Any) -> None:
        statements.append(str(args[2]))

    engine = world.node.engine
    for n in range(4):
        with world.node.begin() as conn:
            from mailnode.governance import pauses
            pauses.request(conn, org_id=world.installed.org_id, actor_id=world.installed.user_id,
                           domain=f"d{n}.test", reason="r", now=world.node.clock.now())
        event.listen(engine, "before_cursor_execute", record)
        try:
            with world.node.read() as conn:
                found = pause_reads.read(conn, org_id=world.installed.org_id, reader_id=b, limit=50)
        finally:
            event.remove(engine, "before_cursor_execute", record)
        assert len(found.pauses) == n + 1
        assert len(statements) == 4, statements
        statements.clear()


# Legal holds ------------------------------------------------------------------------------------------------------


def test_a_hold_is_placed_and_its_lift_approved_by_two_deciders(world: World) -> None:
    mbx = world.installed.mailbox_id
    _, b_h = world.person("bea@example.test", ("org.admin", world.installed.org_id), ("approval.decide", mbx))
    _, c_h = world.person("cem@example.test", ("approval.decide", mbx))
    csrf = as_(world, world.admin)
    page = world.api.get("/limits/holds")
    assert page.status_code == 200 and 'id="no-holds"' in page.text and "does not show their mail" in page.text
    assert f'<option value="{mbx}">Support ({mbx})</option>' in page.text
    bad = world.api.post("/limits/holds", data={"csrf_token": csrf, "mailbox_id": mbx, "from_date": "soon"})
    assert bad.status_code == 422 and code_of(bad.text) == "E_HOLD_BOUND_UNREADABLE"
    r = world.api.post("/limits/holds", data={"csrf_token": csrf, "mailbox_id": mbx, "matter_id": "M-2026-014",
                                              "from_date": "2026-01-01", "to_date": ""})
    assert r.status_code == 200 and said("hold_placed", r.text)
    hold_id = re.search(r'id="hold-(hld_[^"]+)"', r.text)
    assert hold_id and "M-2026-014" in r.text and "no lift requested" in r.text
    hid = hold_id.group(1)
    no_reason = world.api.post(f"/limits/holds/{hid}/lift", data={"csrf_token": csrf, "reason": ""})
    assert no_reason.status_code == 422 and code_of(no_reason.text) == "E_HOLD_LIFT_REASON_REQUIRED"
    r = world.api.post(f"/limits/holds/{hid}/lift", data={"csrf_token": csrf, "reason": "matter settled"})
    assert r.status_code == 200 and said("lift_requested", r.text)
    assert "lift requested" in r.text and "waiting for 2 more approvals" in r.text
    assert f'id="lift-{hid}"' not in r.text  # one request at a time

    csrf = as_(world, b_h)
    r = world.api.get("/limits/holds")
    apr = re.search(r'action="/limits/approvals/(apr_[^"]+)/decide"', r.text)
    assert apr, r.text
    r = world.api.post(f"/limits/approvals/{apr.group(1)}/decide", data={"csrf_token": csrf, "decision": "approve",
                                                                         "back": "holds"})
    assert r.status_code == 200 and "waiting for 1 more approval" in r.text
    # Cem decides the mailbox's approvals but is no administrator: the holds page refuses him; his decision
    # goes through the same route (as from Waiting for me), and it completes the lift.
    csrf = as_(world, c_h)
    assert code_of(world.api.get("/limits/holds").text) == "E_NOT_AN_ADMINISTRATOR"
    r = world.api.post(f"/limits/approvals/{apr.group(1)}/decide", data={"csrf_token": csrf, "decision": "approve",
                                                                         "back": "holds"})
    assert r.status_code == 403 and code_of(r.text) == "E_NOT_AN_ADMINISTRATOR" and said("approved", r.text)
    hold = world.api.get("/api/holds", headers=world.admin).json()["holds"][0]
    assert hold["in_force"] is False and hold["lifted_reason"] == "matter settled"
    as_(world, world.admin)
    r = world.api.get("/limits/holds")
    assert 'class="hold lift-lifted"' in r.text and "Approved by: bea@example.test, cem@example.test" in r.text


# Retention --------------------------------------------------------------------------------------------------------


def test_retention_is_read_and_changed_by_an_administrator(world: World) -> None:
    csrf = as_(world, world.admin)
    page = world.api.get("/limits/retention")
    assert page.status_code == 200 and "604800 s (7 days)" in page.text
    r = world.api.post("/limits/retention", data={"csrf_token": csrf, "inbound_raw_seconds": "86400",
                                                  "sealed_body_seconds": "", "ceiling_seconds": ""})
    assert r.status_code == 200 and said("retention_saved", r.text) and "86400 s (1 day)" in r.text
    got = world.api.get("/api/settings/retention", headers=world.admin).json()["retention"]
    assert got["inbound_raw_seconds"] == 86400
    too_long = world.api.post("/limits/retention", data={"csrf_token": csrf, "sealed_body_seconds": "99999999",
                                                         "ceiling_seconds": ""})
    assert too_long.status_code == 422 and code_of(too_long.text) == "E_RETENTION_INCOHERENT"
    assert 'value="99999999"' in too_long.text  # what was typed stays in the form
    words = world.api.post("/limits/retention", data={"csrf_token": csrf, "ceiling_seconds": "ten"})
    assert words.status_code == 422 and code_of(words.text) is not None
    assert world.api.get("/api/settings/retention", headers=world.admin).json()["retention"] == got


# Suppressions -----------------------------------------------------------------------------------------------------


def test_an_address_is_added_found_and_removed_with_a_reason(world: World) -> None:
    csrf = as_(world, world.admin)
    assert 'id="no-suppressions">The list is empty.' in world.api.get("/limits/suppressions").text
    r = world.api.post("/limits/suppressions", data={"csrf_token": csrf, "address": "Gone@Remote.test", "note": "left"})
    assert r.status_code == 200 and said("suppression_added", r.text)
    assert 'data-address="gone@remote.test"' in r.text and "added by alex@example.test" in r.text
    bad = world.api.post("/limits/suppressions", data={"csrf_token": csrf, "address": "not an address"})
    assert bad.status_code == 422 and code_of(bad.text) == "E_ADDRESS_MALFORMED"
    assert 'data-address="gone@remote.test"' in world.api.get("/limits/suppressions?q=remote").text
    assert "No address on the list matches." in world.api.get("/limits/suppressions?q=nobody").text
    assert "No address on the list matches." in world.api.get("/limits/suppressions?reason=complaint").text
    unknown = world.api.get("/limits/suppressions?reason=whim")
    assert unknown.status_code == 422 and code_of(unknown.text) == "E_SUPPRESSION_REASON_UNKNOWN"
    no_reason = world.api.post("/limits/suppressions/remove", data={"csrf_token": csrf, "address": "gone@remote.test"})
    assert no_reason.status_code == 422 and code_of(no_reason.text) == "E_SUPPRESSION_REMOVAL_REASON_MISSING"
    r = world.api.post("/limits/suppressions/remove", data={"csrf_token": csrf, "address": "gone@remote.test",
                                                           "reason": "fixed their mailbox"})
    assert r.status_code == 200 and said("suppression_removed", r.text) and count(world, suppressions) == 0


def test_the_list_round_trips_through_csv_and_a_bad_file_writes_nothing(world: World) -> None:
    csrf = as_(world, world.admin)
    for a in ("one@remote.test", "two@remote.test"):
        world.api.post("/limits/suppressions", data={"csrf_token": csrf, "address": a})
    exported = world.api.get("/limits/suppressions/export.csv")
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    assert 'attachment; filename="suppressions.csv"' == exported.headers["content-disposition"]
    assert exported.text.splitlines()[0].startswith("address,reason")
    world.api.post("/limits/suppressions/remove", data={"csrf_token": csrf, "address": "one@remote.test",
                                                       "reason": "test"})
    r = world.api.post("/limits/suppressions/import", data={"csrf_token": csrf},
                       files={"file": ("suppressions.csv", exported.content, "text/csv")})
    assert r.status_code == 200, r.text
    assert "1 added, 1 already on the list" in r.text
    lines = re.findall(r'<tr class="import-line"><td>(\d+)</td><td>([^<]+)</td><td>([^<]+)</td>', r.text)
    assert sorted(lines) == [("2", "one@remote.test", "added"), ("3", "two@remote.test",
                                                                 "already on the list (manual)")]
    assert count(world, suppressions) == 2
    bad = b"address,reason\nthree@remote.test,\nnot-an-address,\n"
    r = world.api.post("/limits/suppressions/import", data={"csrf_token": csrf},
                       files={"file": ("bad.csv", bad, "text/csv")})
    assert r.status_code == 422 and code_of(r.text) == "E_SUPPRESSION_IMPORT_BAD_LINE" and "Line 3" in r.text
    assert count(world, suppressions) == 2  # nothing half-written
    headless = world.api.post("/limits/suppressions/import", data={"csrf_token": csrf},
                              files={"file": ("x.csv", b"just,words\n", "text/csv")})
    assert headless.status_code == 422 and code_of(headless.text) == "E_SUPPRESSION_IMPORT_MALFORMED"


# Permissions ------------------------------------------------------------------------------------------------------


def test_someone_who_is_not_an_administrator_reads_the_pauses_and_is_refused_the_rest(world: World) -> None:
    admin(world, "bea@example.test")
    admin(world, "cem@example.test")
    csrf = as_(world, world.admin)
    world.api.post("/limits/pauses", data={"csrf_token": csrf, "domain": "example.test", "reason": "spam run"})
    _, olga = world.person("olga@example.test", ("mailbox.content.read", world.installed.mailbox_id))
    csrf = as_(world, olga)
    pauses_page = world.api.get("/limits/pauses")
    assert pauses_page.status_code == 200 and 'id="read-only"' in pauses_page.text
    assert "example.test" in pauses_page.text and "<form method=\"post\" action=\"/limits/" not in pauses_page.text
    r = world.api.post("/limits/pauses", data={"csrf_token": csrf, "domain": "other.test", "reason": "x"})
    assert r.status_code == 403 and code_of(r.text) == "E_NOT_AN_ADMINISTRATOR"
    for path in ("/limits/holds", "/limits/retention", "/limits/suppressions", "/limits/suppressions/export.csv"):
        got = world.api.get(path)
        assert got.status_code == 403 and code_of(got.text) == "E_NOT_AN_ADMINISTRATOR", path
        assert 'id="subnav-' in got.text
    for path, data in (("/limits/holds", {"mailbox_id": world.installed.mailbox_id}),
                       ("/limits/retention", {"ceiling_seconds": "86400"}),
                       ("/limits/suppressions", {"address": "x@remote.test"})):
        got = world.api.post(path, data={"csrf_token": csrf, **data})
        assert got.status_code == 403 and code_of(got.text) == "E_NOT_AN_ADMINISTRATOR", path
    imp = world.api.post("/limits/suppressions/import", data={"csrf_token": csrf},
                         files={"file": ("x.csv", b"address\nx@remote.test\n", "text/csv")})
    assert imp.status_code == 403 and count(world, suppressions) == 0
