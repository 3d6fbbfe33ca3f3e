"""The Butler lifecycle through the HTTP API: create, draft, publish, supersede, refuse; with the audit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select, update

from mailnode import budgets
from mailnode.butler.check import check
from mailnode.schema.butler import butler_versions

from .conftest import People, audit_of, docs_example, program


def _create(api: Any, people: People, name: str = "Quiet", source: str | None = None) -> dict[str, Any]:
    r = api.post("/api/butlers", json={"name": name, "source": source or program()}, headers=people.admin)
    assert r.status_code == 201, r.text
    return dict(r.json()["butler"])


def test_publish_refuse_the_same_program_then_supersede_with_a_new_version(api: Any, people: People) -> None:
    made = _create(api, people)
    bid, first = made["id"], made["draft"]["id"]
    assert made["live"] is None and made["draft"]["source"] == program() and made["draft"]["version"] is None

    r = api.post(f"/api/butlers/{bid}/publish", headers=people.admin)
    assert r.status_code == 200, r.text
    assert r.json()["published"] == {"version_id": first, "version": 1, "superseded_version_id": None}
    live = r.json()["butler"]["live"]
    assert live["id"] == first and live["state"] == "published" and live["published_by"] == people.admin_id
    assert r.json()["butler"]["draft"] is None

    # The same program again (even reformatted, a new source digest) is refused, and nothing changes.
    again = api.put(f"/api/butlers/{bid}/draft", json={"source": program(indent=4)}, headers=people.admin)
    assert again.json()["butler"]["draft"]["source_sha256"] != live["source_sha256"]
    refused = api.post(f"/api/butlers/{bid}/publish", headers=people.admin)
    assert refused.status_code == 409 and refused.json()["error"] == "E_BUTLER_UNCHANGED", refused.text
    assert refused.json()["detail"]["live_version_id"] == first and refused.json()["fix"]
    assert api.get(f"/api/butlers/{bid}", headers=people.admin).json()["butler"]["live"]["id"] == first

    # A different program supersedes version 1 in the same act.
    second = api.put(f"/api/butlers/{bid}/draft", json={"source": program("changed my mind")},
                     headers=people.admin).json()["butler"]["draft"]["id"]
    done = api.post(f"/api/butlers/{bid}/publish", headers=people.admin)
    assert done.status_code == 200, done.text
    assert done.json()["published"] == {"version_id": second, "version": 2, "superseded_version_id": first}

    shown = api.get(f"/api/butlers/{bid}", headers=people.admin).json()["butler"]
    assert shown["live"]["id"] == second and shown["live"]["source"] == program("changed my mind")
    assert [(v["id"], v["state"], v["version"]) for v in shown["versions"]] == [
        (second, "published", 2), (first, "superseded", 1)]
    assert shown["versions"][1]["superseded_at"] is not None
    assert all("source" not in v for v in shown["versions"]), "history carries no bodies"

    published = audit_of(api, people, "butler.published")
    assert [(e["subject"], e["actor_id"], e["detail"]["version_id"], e["detail"]["version"],
             e["detail"]["superseded_version_id"], e["detail"]["sponsor"]) for e in published] == [
        (bid, people.admin_id, first, 1, None, people.admin_id),
        (bid, people.admin_id, second, 2, first, people.admin_id)]
    assert published[0]["detail"]["trigger"] == {"event": "mail.received", "mailbox": "support@example.test"}
    drafted = audit_of(api, people, "butler.drafted")
    assert next(e["detail"]["version_id"] for e in drafted) == first and len(drafted) == 3
    assert api.post("/api/audit/verify", headers=people.admin).json()["verification"]["intact"]


def test_saving_a_draft_replaces_the_one_draft(api: Any, people: People) -> None:
    made = _create(api, people)
    bid, first = made["id"], made["draft"]["id"]
    r = api.put(f"/api/butlers/{bid}/draft", json={"source": program("second thoughts")}, headers=people.admin)
    assert r.status_code == 200, r.text
    draft = r.json()["butler"]["draft"]
    assert draft["id"] != first and draft["source"] == program("second thoughts")
    assert [v["id"] for v in r.json()["butler"]["versions"]] == [draft["id"]]
    entry = audit_of(api, people, "butler.drafted")[-1]
    assert entry["detail"]["replaced_draft_id"] == first and entry["detail"]["version_id"] == draft["id"]


def test_a_program_that_does_not_check_is_refused_with_every_finding(api: Any, people: People) -> None:
    bad = json.loads(program())
    bad["nodes"] = [{"id": "done", "type": "join", "next": "gone"}, {"id": "x", "type": "stop", "to": "a@b.c"}]
    r = api.post("/api/butlers", json={"name": "Bad", "source": json.dumps(bad)}, headers=people.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_BUTLER_DOES_NOT_CHECK", r.text
    codes = [f["code"] for f in r.json()["detail"]["findings"]]
    assert codes == [f.code for f in check(json.dumps(bad), pot=budgets.BUTLER_RUN_POT_STATEMENTS).findings]
    assert len(codes) >= 2
    assert "E_BUTLER_NODE_UNKNOWN_PARAMETER" in codes and "E_BUTLER_EDGE_DANGLING" in codes
    assert all(f["what"] and f["why"] and f["fix"] for f in r.json()["detail"]["findings"])
    assert api.get("/api/butlers", headers=people.admin).json()["butlers"] == []
    not_json = api.post("/api/butlers", json={"name": "Bad", "source": "name: yaml"}, headers=people.admin)
    assert [f["code"] for f in not_json.json()["detail"]["findings"]] == ["E_BUTLER_SOURCE_NOT_JSON"]


def test_publish_refuses_a_draft_that_no_longer_checks(api: Any, people: People) -> None:
    made = _create(api, people, source=docs_example())
    price = made["draft"]["price"]
    # The configured pot (Settings.butler_run_pot, what the engine meters against) shrank after the draft
    # was saved: publication prices against that same setting, not a constant (issue 17 item 10).
    api.app.state.node.settings.butler_run_pot = price - 1
    r = api.post(f"/api/butlers/{made['id']}/publish", headers=people.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_BUTLER_DOES_NOT_CHECK", r.text
    assert [f["code"] for f in r.json()["detail"]["findings"]] == ["E_BUTLER_UNAFFORDABLE"]
    assert f"butler_run_pot, MAILNODE_BUTLER_RUN_POT) is {price - 1}" in r.json()["detail"]["findings"][0]["what"]
    assert api.get(f"/api/butlers/{made['id']}", headers=people.admin).json()["butler"]["live"] is None
    assert audit_of(api, people, "butler.published") == []


def test_publish_refuses_a_draft_edited_behind_mailnodes_back(api: Any, people: People) -> None:
    made = _create(api, people)
    node = api.app.state.node
    with node.begin() as conn:
        conn.execute(update(butler_versions).where(butler_versions.c.id == made["draft"]["id"])
                     .values(source_text=program("not what was checked")))
    r = api.post(f"/api/butlers/{made['id']}/publish", headers=people.admin)
    assert r.status_code == 409 and r.json()["error"] == "E_BUTLER_DRAFT_INCOHERENT", r.text
    with node.begin() as conn:
        conn.execute(update(butler_versions).where(butler_versions.c.id == made["draft"]["id"])
                     .values(source_text="{}"))
    r = api.post(f"/api/butlers/{made['id']}/publish", headers=people.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_BUTLER_DOES_NOT_CHECK", r.text


def test_publish_without_a_draft_is_refused(api: Any, people: People) -> None:
    made = _create(api, people)
    assert api.post(f"/api/butlers/{made['id']}/publish", headers=people.admin).status_code == 200
    r = api.post(f"/api/butlers/{made['id']}/publish", headers=people.admin)
    assert r.status_code == 409 and r.json()["error"] == "E_BUTLER_NO_DRAFT", r.text


def test_names_are_needed_trimmed_bounded_and_unique(api: Any, people: People) -> None:
    blank = api.post("/api/butlers", json={"name": "  ", "source": program()}, headers=people.admin)
    assert blank.status_code == 422 and blank.json()["error"] == "E_BUTLER_NEEDS_A_NAME"
    long = api.post("/api/butlers", json={"name": "x" * (budgets.BUTLER_NAME_MAX_CHARS + 1), "source": program()},
                    headers=people.admin)
    assert long.json()["error"] == "E_BUDGET_EXCEEDED"
    assert long.json()["detail"]["limit_name"] == "BUTLER_NAME_MAX_CHARS"
    made = _create(api, people, name="  Quiet ")
    assert made["name"] == "Quiet"
    taken = api.post("/api/butlers", json={"name": "Quiet", "source": program()}, headers=people.admin)
    assert taken.status_code == 409 and taken.json()["error"] == "E_BUTLER_NAME_TAKEN"
    assert taken.json()["detail"]["butler_id"] == made["id"]


def test_a_source_over_the_budget_is_refused_naming_it(api: Any, people: People) -> None:
    huge = program() + " " * budgets.BUTLER_SOURCE_MAX_BYTES
    r = api.post("/api/butlers", json={"name": "Huge", "source": huge}, headers=people.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_BUDGET_EXCEEDED", r.text
    assert r.json()["detail"] == {"limit_name": "BUTLER_SOURCE_MAX_BYTES", "limit": budgets.BUTLER_SOURCE_MAX_BYTES,
                                  "observed": len(huge)}
    assert "BUTLER_SOURCE_MAX_BYTES" in r.json()["message"] and r.json()["fix"]


def test_a_version_over_the_stored_budget_is_refused_naming_it(api: Any, people: People,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    source = program()
    monkeypatch.setattr(budgets, "BUTLER_VERSION_MAX_BYTES", len(source) + 10)
    r = api.post("/api/butlers", json={"name": "Quiet", "source": source}, headers=people.admin)
    assert r.status_code == 422 and r.json()["detail"]["limit_name"] == "BUTLER_VERSION_MAX_BYTES", r.text


def test_non_administrators_get_404_on_reads_and_403_on_writes(api: Any, people: People) -> None:
    made = _create(api, people)
    bid = made["id"]
    absent = "btl_01HZY00000000000000000000Z"
    for path in ("/api/butlers", f"/api/butlers/{bid}"):
        r = api.get(path, headers=people.member)
        assert r.status_code == 404 and r.json()["error"] == "E_NO_SUCH_BUTLER", (path, r.text)
    # Existing and absent answer alike.
    seen, unseen = api.get(f"/api/butlers/{bid}", headers=people.member), api.get(f"/api/butlers/{absent}",
                                                                                  headers=people.member)
    assert seen.json()["why"] == unseen.json()["why"] and seen.json()["fix"] == unseen.json()["fix"]
    writes = [("post", "/api/butlers", {"name": "Mine", "source": program()}),
              ("put", f"/api/butlers/{bid}/draft", {"source": program("hijacked")}),
              ("post", f"/api/butlers/{bid}/publish", None)]
    for method, path, body in writes:
        r = api.request(method.upper(), path, json=body, headers=people.member)
        assert r.status_code == 403 and r.json()["error"] == "E_NOT_AN_ADMINISTRATOR", (path, r.text)
    shown = api.get(f"/api/butlers/{bid}", headers=people.admin).json()["butler"]
    assert shown["live"] is None and shown["draft"]["id"] == made["draft"]["id"]
    assert api.get("/api/butlers").json()["error"] == "E_UNAUTHENTICATED"


def test_administrators_get_404_for_an_absent_butler_and_422_for_a_malformed_id(api: Any, people: People) -> None:
    absent = "btl_01HZY00000000000000000000Z"
    for r in (api.get(f"/api/butlers/{absent}", headers=people.admin),
              api.put(f"/api/butlers/{absent}/draft", json={"source": program()}, headers=people.admin),
              api.post(f"/api/butlers/{absent}/publish", headers=people.admin)):
        assert r.status_code == 404 and r.json()["error"] == "E_NO_SUCH_BUTLER", r.text
    r = api.get("/api/butlers/mbx_01HZY00000000000000000000Z", headers=people.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_ID_MALFORMED"


def test_the_list_is_by_name_without_sources_and_pages_by_name(api: Any, people: People) -> None:
    b = _create(api, people, name="Bravo")
    _create(api, people, name="Alpha")
    _create(api, people, name="Charlie")
    api.post(f"/api/butlers/{b['id']}/publish", headers=people.admin)
    first = api.get("/api/butlers", params={"limit": 2}, headers=people.admin).json()
    assert [x["name"] for x in first["butlers"]] == ["Alpha", "Bravo"] and first["next_cursor"] == "Bravo"
    bravo = first["butlers"][1]
    assert bravo["draft"] is None and bravo["live"]["version"] == 1 and bravo["live"]["id"] == b["draft"]["id"]
    assert bravo["live"]["published_by"] == people.admin_id
    assert "source" not in json.dumps(first["butlers"])
    rest = api.get("/api/butlers", params={"limit": 2, "cursor": "Bravo"}, headers=people.admin).json()
    assert [x["name"] for x in rest["butlers"]] == ["Charlie"] and rest["next_cursor"] is None
    assert rest["butlers"][0]["live"] is None and rest["butlers"][0]["draft"]["id"]


def test_a_publication_decided_on_stale_facts_is_refused_as_raced(api: Any, people: People) -> None:
    from mailnode.butler import lifecycle

    made = _create(api, people)
    bid = made["id"]
    node = api.app.state.node
    with node.read() as conn:
        draft = conn.execute(select(butler_versions).where(butler_versions.c.id == made["draft"]["id"])).one()
    stale = lifecycle.decide_publication(bid, lifecycle._stored(draft),
                                         lifecycle.checked(draft.source_text, node.settings.butler_run_pot), None, 0)
    # Another administrator replaces the draft between the decision and the write.
    api.put(f"/api/butlers/{bid}/draft", json={"source": program("newer")}, headers=people.admin)
    with pytest.raises(lifecycle.MailnodeError) as raised, node.begin() as conn:
        lifecycle.apply_publication(conn, org_id=people.org_id, actor_id=people.admin_id, at=node.clock.now(),
                                    name="Quiet", publication=stale)
    assert raised.value.code == "E_BUTLER_PUBLISH_RACED" and raised.value.status == 409
    # And a decision that would supersede a live version someone else already superseded.
    api.post(f"/api/butlers/{bid}/publish", headers=people.admin)
    live_id = api.get(f"/api/butlers/{bid}", headers=people.admin).json()["butler"]["live"]["id"]
    api.put(f"/api/butlers/{bid}/draft", json={"source": program("newest")}, headers=people.admin)
    with node.read() as conn:
        rows = {r.state: r for r in conn.execute(select(butler_versions).where(butler_versions.c.butler_id == bid))}
    stale = lifecycle.decide_publication(bid, lifecycle._stored(rows["draft"]),
                                         lifecycle.checked(rows["draft"].source_text, node.settings.butler_run_pot),
                                         lifecycle._stored(rows["published"]), 1)
    api.post(f"/api/butlers/{bid}/publish", headers=people.admin)
    api.put(f"/api/butlers/{bid}/draft", json={"source": program("again")}, headers=people.admin)
    with pytest.raises(lifecycle.MailnodeError) as raised, node.begin() as conn:
        lifecycle.apply_publication(conn, org_id=people.org_id, actor_id=people.admin_id, at=node.clock.now(),
                                    name="Quiet", publication=stale)
    assert raised.value.code == "E_BUTLER_PUBLISH_RACED" and raised.value.detail["version_id"] == live_id
    assert len(audit_of(api, people, "butler.published")) == 2


def test_a_guard_with_an_unsupported_operator_is_neither_stored_nor_published(api: Any, people: People) -> None:
    # Issue 17 item 8: "checks OK" used to accept &&; the Butler published and its first run failed.
    bad = json.loads(program())
    bad["entry"] = "g"
    bad["nodes"] = [{"id": "g", "type": "guard", "when": "event.subject == 'a' && event.automated == false",
                     "then": "done", "otherwise": None}, {"id": "done", "type": "stop", "reason": "end"}]
    r = api.post("/api/butlers", json={"name": "Ands", "source": json.dumps(bad)}, headers=people.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_BUTLER_DOES_NOT_CHECK", r.text
    [finding] = r.json()["detail"]["findings"]
    assert (finding["code"], finding["node"]) == ("E_BUTLER_EXPR_OPERATOR_UNSUPPORTED", "g")
    assert "&&" in finding["what"] and "chain guards" in finding["fix"]
    made = _create(api, people, name="Ands")
    r = api.put(f"/api/butlers/{made['id']}/draft", json={"source": json.dumps(bad)}, headers=people.admin)
    assert r.status_code == 422 and r.json()["error"] == "E_BUTLER_DOES_NOT_CHECK", r.text
