"""The controls under Limits and health in a real headless Chromium against a real served node: a domain pause
requested by one administrator and placed by two others in three browser sessions, then lifted; a legal hold
placed and its lift approved by two deciders; retention and the suppression list with a CSV import. Every
page passes axe-core's check and is photographed for docs/web-controls.md."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.support.served import MAILNODE, Served
from tests.web.browser.conftest import PAGE_TIMEOUT_MS, assert_accessible, shoot

expect.set_options(timeout=PAGE_TIMEOUT_MS)


def person(served: Served, email: str, name: str, *relations: tuple[str, str]) -> str:
    """A new person holding ``relations`` (relation, object id); their token, minted with ``mailnode token
    create``."""
    uid = served.call("POST", "/api/users", json={"email": email, "name": name})["user"]["id"]
    for relation, object_id in relations:
        served.call("POST", "/api/access", json={"subject_id": uid, "relation": relation, "object_id": object_id})
    out = subprocess.run([*MAILNODE, "token", "create", "--user", email, "--data-dir", str(served.data_dir),
                          "--json"], env=served.env, check=True, capture_output=True, text=True)
    return str(json.loads(out.stdout)["token"])


def test_a_pause_is_requested_by_one_administrator_placed_by_two_others_then_lifted(
        served: Served, signed_in_page: Callable[[str], Any], base_url: str) -> None:
    org = served.installed["org_id"]
    bea = person(served, "bea@example.test", "Bea Ortiz", ("org.admin", org))
    cem = person(served, "cem@example.test", "Cem Yilmaz", ("org.admin", org))
    alex_page, bea_page, cem_page = (signed_in_page(t) for t in (served.installed["token"], bea, cem))

    alex_page.goto(f"{base_url}/limits/pauses")
    expect(alex_page.locator("#no-pauses")).to_be_visible()
    assert_accessible(alex_page)
    alex_page.get_by_label("Sending domain (or an address of it)").fill("example.test")
    alex_page.get_by_label("Reason (the approvers decide on it)").fill("a compromised account is sending spam")
    alex_page.locator("#pause-request").click()
    expect(alex_page.locator("#notice")).to_contain_text("The pause was requested")
    row = alex_page.locator("tr.pause", has_text="example.test")
    expect(row.locator(".pause-state")).to_contain_text("waiting for 2 more approvals")
    expect(row.locator(".pause-actions")).to_have_text("You asked; two other administrators decide.")
    shoot(alex_page, "controls-pauses-requested")

    bea_page.goto(f"{base_url}/limits/pauses")
    bea_page.get_by_role("button", name="Approve the pause of example.test").click()
    expect(bea_page.locator("#notice")).to_have_text("Your approval was recorded.")
    row = bea_page.locator("tr.pause", has_text="example.test")
    expect(row.locator(".pause-state")).to_contain_text("waiting for 1 more approval")
    expect(row.locator(".pause-approvals")).to_contain_text("Approved by: Bea Ortiz")
    assert_accessible(bea_page)

    cem_page.goto(f"{base_url}/limits/pauses")
    cem_page.get_by_role("button", name="Approve the pause of example.test").click()
    row = cem_page.locator("tr.pause", has_text="example.test")
    expect(row.locator(".pause-state")).to_contain_text("in_force")
    expect(row.locator(".pause-approvals")).to_contain_text("Approved by: Bea Ortiz, Cem Yilmaz")
    assert [p["domain"] for p in served.call("GET", "/api/domain-pauses")["pauses"]] == ["example.test"]
    shoot(cem_page, "controls-pauses-in-force")
    assert_accessible(cem_page)

    # Any one administrator lifts it, the one who asked included.
    alex_page.goto(f"{base_url}/limits/pauses")
    row = alex_page.locator("tr.pause", has_text="example.test")
    row.get_by_label("Reason for lifting (optional)").fill("account secured")
    row.get_by_role("button", name="Lift the pause of example.test").click()
    expect(alex_page.locator("#notice")).to_contain_text("The pause was lifted")
    expect(alex_page.locator("tr.pause.state-lifted .pause-state")).to_contain_text("account secured")
    assert served.call("GET", "/api/domain-pauses")["pauses"] == []


def test_a_hold_is_placed_and_its_lift_approved_by_two_deciders(
        served: Served, signed_in_page: Callable[[str], Any], base_url: str) -> None:
    org, mbx = served.installed["org_id"], served.installed["mailbox_id"]
    bea = person(served, "bea@example.test", "Bea Ortiz", ("org.admin", org), ("approval.decide", mbx))
    cem = person(served, "cem@example.test", "Cem Yilmaz", ("org.admin", org), ("approval.decide", mbx))
    alex_page = signed_in_page(served.installed["token"])
    alex_page.goto(f"{base_url}/limits/holds")
    assert_accessible(alex_page)
    alex_page.get_by_label("Mailbox", exact=True).select_option(mbx)
    alex_page.get_by_label("Matter reference (optional)").fill("M-2026-014")
    alex_page.get_by_label("From (optional; a date alone is that whole UTC day)").fill("2026-01-01")
    alex_page.locator("#hold-place").click()
    expect(alex_page.locator("#notice")).to_contain_text("The legal hold was placed")
    row = alex_page.locator("tr.hold", has_text="M-2026-014")
    expect(row.locator(".hold-lift")).to_contain_text("no lift requested")
    row.get_by_label("Reason for lifting").fill("the matter is settled")
    row.locator("form.lift button").click()
    expect(alex_page.locator("#notice")).to_contain_text("The lift was requested")
    expect(alex_page.locator("tr.hold .hold-lift")).to_contain_text("waiting for 2 more approvals")
    shoot(alex_page, "controls-holds")

    for token in (bea, cem):
        page = signed_in_page(token)
        page.goto(f"{base_url}/limits/holds")
        page.locator("tr.hold button[value=approve]").click()
        expect(page.locator("#notice")).to_have_text("Your approval was recorded.")
    expect(page.locator("tr.hold .hold-lift")).to_contain_text("lifted")
    expect(page.locator("tr.hold .hold-lift")).to_contain_text("Approved by: Bea Ortiz, Cem Yilmaz")
    assert_accessible(page)
    assert served.call("GET", "/api/holds")["holds"][0]["in_force"] is False


def test_retention_and_the_suppression_list_with_an_import(
        served: Served, signed_in_page: Callable[[str], Any], base_url: str, tmp_path: Path) -> None:
    page = signed_in_page(served.installed["token"])
    page.goto(f"{base_url}/limits/retention")
    expect(page.locator("#row-inbound_raw_seconds .value")).to_have_text("604800 s (7 days)")
    page.get_by_label("sealed_body_seconds").fill("172800")
    page.locator("#retention-save").click()
    expect(page.locator("#row-sealed_body_seconds .value")).to_have_text("172800 s (2 days)")
    shoot(page, "controls-retention")
    assert_accessible(page)

    page.goto(f"{base_url}/limits/suppressions")
    page.get_by_label("Address", exact=True).fill("gone@remote.test")
    page.locator("#sup-add").click()
    expect(page.locator("tr.suppression")).to_have_count(1)
    csv = tmp_path / "list.csv"
    csv.write_text("address,reason,note\ngone@remote.test,,\nnew@remote.test,complaint,reported by phone\n")
    page.locator("#sup-file").set_input_files(str(csv))
    page.locator("#sup-import").click()
    expect(page.locator("#import-counts")).to_have_text(
        "1 added, 1 already on the list (kept as they were).")
    expect(page.locator("tr.suppression")).to_have_count(2)
    shoot(page, "controls-suppressions")
    assert_accessible(page)
    csv.write_text("address\nfine@remote.test\nnot an address\n")
    page.locator("#sup-file").set_input_files(str(csv))
    page.locator("#sup-import").click()
    expect(page.locator("#refusal-code")).to_have_text("E_SUPPRESSION_IMPORT_BAD_LINE")
    expect(page.locator("#refusal-what")).to_contain_text("Line 3")
    expect(page.locator("tr.suppression")).to_have_count(2)
    assert_accessible(page)
    with page.expect_download() as download:
        page.locator("#sup-export").click()
    text = Path(download.value.path()).read_text()
    assert text.splitlines()[0].startswith("address,reason") and "new@remote.test,complaint" in text
