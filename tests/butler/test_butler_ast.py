"""The document's node shapes: the parameter surface is pinned, and no node names a recipient."""

from __future__ import annotations

import json

from mailnode.butler.ast import NODE_MODELS, RESERVED_BECAUSE, ButlerDocument, ReservedNode, json_schema

#: Every shipped node type and exactly its parameters. A new parameter on any node fails this test.
SURFACE = {
    "guard": ["when", "then", "otherwise"],
    "switch": ["on", "cases", "default"],
    "map": ["over", "as", "maxItems", "body", "collectAs", "next"],
    "foreach": ["over", "as", "maxItems", "body", "next"],
    "join": ["next"],
    "wait": ["seconds", "next"],
    "stop": ["reason"],
    "transform": ["as", "value", "next"],
    "validate": ["value", "schema", "next"],
    "lookup": ["entity", "entityId", "as", "next"],
    "case.assign": ["caseId", "assignee", "next"],
    "case.close": ["caseId", "next"],
    "draft": ["mailboxId", "subject", "body", "inReplyTo", "as", "next"],
    "mail.send.propose": ["draft", "next"],
}


def test_the_parameter_surface_is_pinned() -> None:
    assert {t: m.parameters() for t, m in NODE_MODELS.items()} == SURFACE


def test_no_parameter_names_a_recipient() -> None:
    names = {p.lower() for params in SURFACE.values() for p in params}
    assert not names & {"to", "cc", "bcc", "recipients", "recipient", "forwardto", "replyto", "from", "sender"}


def test_fifteen_reserved_types_parse_with_their_extra_keys() -> None:
    assert len(RESERVED_BECAUSE) == 15 and not set(RESERVED_BECAUSE) & set(NODE_MODELS)
    node = ReservedNode.model_validate({"id": "x", "type": "connector.call", "url": "https://example.org"})
    assert node.model_dump()["url"] == "https://example.org"


def test_the_json_schema_offers_the_shipped_types_only() -> None:
    text = json.dumps(json_schema())
    assert all(f'"{t}"' in text for t in NODE_MODELS)
    assert not any(f'"{t}"' in text for t in RESERVED_BECAUSE)


def test_the_document_is_strict_at_every_level() -> None:
    doc = {"apiVersion": "mailnode/v1", "kind": "Butler", "metadata": {"name": "a", "owner": "b"}, "capabilities": [],
           "trigger": {"event": "mail.received", "mailbox": "a@b", "filter": "x"}, "entry": "s",
           "nodes": [{"id": "s", "type": "stop", "reason": "r"}]}
    try:
        ButlerDocument.model_validate(doc)
    except ValueError as exc:
        assert "filter" in str(exc)
    else:
        raise AssertionError("an undeclared trigger key was accepted")
