"""The Butler document: strict pydantic models, one per node type, and the JSON Schema for editors.

Seed 003 ("The expression language", "Who a Butler's reply goes to") and spec/butler.md §1 (Part A
§1-§2 win). A document is ``{apiVersion: "mailnode/v1", kind: "Butler", metadata {name, owner},
capabilities [{action, resource}], trigger {event: "mail.received", mailbox}, entry, nodes}``.
Every object is strict: a key the model does not declare is refused, never stripped. No node takes
a recipient, a CC or a BCC; the engine derives the one recipient from the triggering delivery, so
``to``/``cc``/``bcc`` are simply undeclared keys.

The 14 shipped node types are in ``NODE_MODELS``; the reserved types parse as ``ReservedNode`` and
the checker refuses them with ``RESERVED_BECAUSE``. This module validates shapes only: the graph
rules (entry, edges, cycles, capabilities, price) are ``mailnode.butler.check``'s.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from mailnode import budgets

API_VERSION = "mailnode/v1"
KIND = "Butler"
TRIGGER_EVENTS = ("mail.received",)

#: The capability actions a document may declare (spec/butler.md §2, §7).
CAPABILITY_ACTIONS = ("mailbox.metadata.read", "mailbox.content.read", "send.propose")

#: What a ``lookup`` may read (spec/butler.md §1.5).
LOOKUP_ENTITIES = ("message", "conversation", "case", "mailbox", "draft")

#: A node id and a binding name: lower-case ASCII letter, then letters, digits and underscores.
NODE_ID_PATTERN = r"^[a-z][a-z0-9_]*$"


def _integral(value: Any) -> Any:
    """Let ``50.0`` stand for ``50``: JSON (and RFC 8785) does not tell them apart; ``True`` stays a bool."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


NodeId = Annotated[str, StringConstraints(pattern=NODE_ID_PATTERN)]
Expr = Annotated[str, StringConstraints(min_length=1)]
#: An edge: a node id, or null/absent meaning "the run ends here" (the canonical form drops it).
Ref = Annotated[NodeId | None, Field(default=None)]
MaxItems = Annotated[int, BeforeValidator(_integral), Field(ge=1, le=budgets.JSON_SAFE_INTEGER_MAX)]
WaitSeconds = Annotated[int, BeforeValidator(_integral), Field(ge=1, le=budgets.BUTLER_WAIT_MAX_SECONDS)]


class _Strict(BaseModel):
    """Base of every document object: strict types, undeclared keys refused, frozen."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Metadata(_Strict):
    """``metadata``: the program's name and an opaque owner string (e.g. ``team:sales``)."""

    name: Annotated[str, StringConstraints(min_length=1)]
    owner: Annotated[str, StringConstraints(min_length=1)]


class Capability(_Strict):
    """One ``capabilities`` entry: an action on a resource of the grain ``mailbox:<address>``.

    The grain is checked by the checker (``E_BUTLER_CAPABILITY_RESOURCE_UNKNOWN``), not here, so a
    wrong grain is reported with its own code rather than as a malformed envelope.
    """

    action: Literal["mailbox.metadata.read", "mailbox.content.read", "send.propose"]
    resource: Annotated[str, StringConstraints(min_length=1)]


class Trigger(_Strict):
    """``trigger``: the one event type, and the address whose deliveries start a run."""

    event: Literal["mail.received"]
    mailbox: Annotated[str, StringConstraints(min_length=1)]


class Node(_Strict):
    """Every node has an ``id`` and a ``type``; subclasses add exactly their parameters.

    ``EDGES`` names the fields that are successor edges (a loop's ``body`` among them);
    ``successors()`` lists their non-null targets in declaration order.
    """

    EDGES: ClassVar[tuple[str, ...]] = ()
    #: The fields that hold an expression: ``PREDICATES`` are comparisons (``expr.evaluate_predicate``),
    #: ``VALUES`` are value fields (``expr.evaluate``). Together they are every ``Expr`` field.
    PREDICATES: ClassVar[tuple[str, ...]] = ()
    VALUES: ClassVar[tuple[str, ...]] = ()

    id: NodeId
    type: str

    def expressions(self) -> list[tuple[str, str, bool]]:
        """``(parameter as written, text, is a predicate)`` for every expression this node holds."""
        out: list[tuple[str, str, bool]] = []
        for names, predicate in ((self.PREDICATES, True), (self.VALUES, False)):
            for name in names:
                text = getattr(self, name)
                if text is not None:
                    out.append((type(self).model_fields[name].alias or name, text, predicate))
        return out

    def edges(self) -> list[tuple[str, str]]:
        """``(parameter, target id)`` for every non-null edge, in declaration order."""
        out: list[tuple[str, str]] = []
        for name in self.EDGES:
            target = getattr(self, name)
            if target is not None:
                out.append((name, target))
        return out

    def successors(self) -> list[str]:
        """The ids this node may hand control to, in declaration order (nulls left out)."""
        return [target for _, target in self.edges()]

    @classmethod
    def parameters(cls) -> list[str]:
        """The parameter names a document uses for this node type (``id`` and ``type`` excluded)."""
        return [f.alias or name for name, f in cls.model_fields.items() if name not in ("id", "type")]


class GuardNode(Node):
    """``guard``: evaluate ``when`` (a predicate) and go to ``then`` or ``otherwise``."""

    PREDICATES = ("when",)
    EDGES = ("then", "otherwise")
    type: Literal["guard"]
    when: Expr
    then: Ref
    otherwise: Ref


class SwitchCase(_Strict):
    """One ``switch`` case: the string the ``on`` value must equal, and where to go."""

    equals: str
    next: Ref


class SwitchNode(Node):
    """``switch``: the first case whose ``equals`` matches the ``on`` value wins, else ``default``."""

    PREDICATES = ("on",)
    type: Literal["switch"]
    on: Expr
    cases: Annotated[list[SwitchCase], Field(min_length=1)]
    default: Ref

    def edges(self) -> list[tuple[str, str]]:
        """Each case's ``next`` in order (as ``cases[i].next``), then ``default``."""
        out = [(f"cases[{i}].next", c.next) for i, c in enumerate(self.cases) if c.next is not None]
        if self.default is not None:
            out.append(("default", self.default))
        return out


class MapNode(Node):
    """``map``: run ``body`` once per item of ``over`` (at most ``maxItems``), collecting ``collectAs``."""

    VALUES = ("over",)
    EDGES = ("body", "next")
    type: Literal["map"]
    over: Expr
    as_: NodeId = Field(alias="as")
    max_items: MaxItems = Field(alias="maxItems")
    body: NodeId
    collect_as: NodeId = Field(alias="collectAs")
    next: Ref


class ForeachNode(Node):
    """``foreach``: run ``body`` once per item of ``over`` (at most ``maxItems``); collects nothing."""

    VALUES = ("over",)
    EDGES = ("body", "next")
    type: Literal["foreach"]
    over: Expr
    as_: NodeId = Field(alias="as")
    max_items: MaxItems = Field(alias="maxItems")
    body: NodeId
    next: Ref


class JoinNode(Node):
    """``join``: a merge point (not a barrier)."""

    EDGES = ("next",)
    type: Literal["join"]
    next: Ref


class WaitNode(Node):
    """``wait``: a durable sleep of ``seconds`` (1 .. ``BUTLER_WAIT_MAX_SECONDS``)."""

    EDGES = ("next",)
    type: Literal["wait"]
    seconds: WaitSeconds
    next: Ref


class StopNode(Node):
    """``stop``: end the run as ``stopped`` with ``reason``. The only node with no successor."""

    type: Literal["stop"]
    reason: Annotated[str, StringConstraints(min_length=1)]


class TransformNode(Node):
    """``transform``: bind ``steps.<as>`` to the value of ``value``."""

    VALUES = ("value",)
    EDGES = ("next",)
    type: Literal["transform"]
    as_: NodeId = Field(alias="as")
    value: Expr
    next: Ref


class ValidateNode(Node):
    """``validate``: refuse the run unless ``value`` satisfies ``schema`` (the subset in ``schema_subset``)."""

    VALUES = ("value",)
    EDGES = ("next",)
    type: Literal["validate"]
    value: Expr
    schema_: dict[str, Any] = Field(alias="schema")
    next: Ref


class LookupNode(Node):
    """``lookup``: read one ``entity`` row by ``entityId`` and bind its projection to ``steps.<as>``."""

    VALUES = ("entity_id",)
    EDGES = ("next",)
    type: Literal["lookup"]
    entity: Literal["message", "conversation", "case", "mailbox", "draft"]
    entity_id: Expr = Field(alias="entityId")
    as_: NodeId = Field(alias="as")
    next: Ref


class CaseAssignNode(Node):
    """``case.assign``: the claim, with the Butler as the principal."""

    VALUES = ("case_id", "assignee")
    EDGES = ("next",)
    type: Literal["case.assign"]
    case_id: Expr = Field(alias="caseId")
    assignee: Expr
    next: Ref


class CaseCloseNode(Node):
    """``case.close``: the close of a case this Butler holds."""

    VALUES = ("case_id",)
    EDGES = ("next",)
    type: Literal["case.close"]
    case_id: Expr = Field(alias="caseId")
    next: Ref


class DraftNode(Node):
    """``draft``: save a reply draft; the recipient is derived from the delivery, never named here."""

    VALUES = ("mailbox_id", "subject", "body", "in_reply_to")
    EDGES = ("next",)
    type: Literal["draft"]
    mailbox_id: Expr = Field(alias="mailboxId")
    subject: Expr
    body: Expr
    in_reply_to: Annotated[Expr | None, Field(default=None, alias="inReplyTo")]
    as_: NodeId = Field(alias="as")
    next: Ref


class SendProposeNode(Node):
    """``mail.send.propose``: seal the draft as a send that awaits a person's release."""

    VALUES = ("draft",)
    EDGES = ("next",)
    type: Literal["mail.send.propose"]
    draft: Expr
    next: Ref


#: The 14 shipped node types, in the order the docs list them.
NODE_MODELS: dict[str, type[Node]] = {
    "guard": GuardNode,
    "switch": SwitchNode,
    "map": MapNode,
    "foreach": ForeachNode,
    "join": JoinNode,
    "wait": WaitNode,
    "stop": StopNode,
    "transform": TransformNode,
    "validate": ValidateNode,
    "lookup": LookupNode,
    "case.assign": CaseAssignNode,
    "case.close": CaseCloseNode,
    "draft": DraftNode,
    "mail.send.propose": SendProposeNode,
}

LOOP_TYPES = ("map", "foreach")

#: Reserved node types and why each is not available (spec/butler.md §1.3, in our words).
RESERVED_BECAUSE: dict[str, str] = {
    "llm.classify": "There is no language-model control plane or approved model profile on this node.",
    "llm.extract": "There is no language-model control plane or approved model profile on this node.",
    "llm.summarize": "There is no language-model control plane or approved model profile on this node.",
    "llm.draft": "There is no language-model control plane or approved model profile on this node.",
    "llm.evaluate": "There is no language-model control plane or approved model profile on this node.",
    "label": "Messages have no labels or tags to set.",
    "route": "Moving mail from one mailbox to another has nowhere to be stored.",
    "archive": "There is no archived state for a message or a case.",
    "quarantine": "Quarantine needs an access-split subsystem that does not exist.",
    "case.upsert": "Typed case fields are undecided; use case.assign and case.close.",
    "case.task": "Cases have no tasks.",
    "case.note": "Cases have no notes.",
    "connector.call": "There is no connector catalogue and no egress policy for one.",
    "approval.request": "Approvals are asked for only by the policy plane at seal, never by a program.",
    "template.render": "There is no template subsystem; interpolate with ${...} instead.",
}


class ReservedNode(BaseModel):
    """A reserved node: parses (``id``, ``type`` and any other keys kept) and is refused by the checker."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    id: NodeId
    type: Literal[
        "llm.classify", "llm.extract", "llm.summarize", "llm.draft", "llm.evaluate", "label", "route",
        "archive", "quarantine", "case.upsert", "case.task", "case.note", "connector.call",
        "approval.request", "template.render",
    ]


class RawNode(BaseModel):
    """The loose first reading of a node: a valid ``id`` and a non-empty ``type``; other keys kept."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    id: NodeId
    type: Annotated[str, StringConstraints(min_length=1)]


AnyNode = Annotated[
    GuardNode | SwitchNode | MapNode | ForeachNode | JoinNode | WaitNode | StopNode | TransformNode | ValidateNode
    | LookupNode | CaseAssignNode | CaseCloseNode | DraftNode | SendProposeNode,
    Field(discriminator="type"),
]


class Envelope(_Strict):
    """The document with its nodes unread: what the checker validates first (``E_BUTLER_MALFORMED``)."""

    api_version: Literal["mailnode/v1"] = Field(alias="apiVersion")
    kind: Literal["Butler"]
    metadata: Metadata
    capabilities: list[Capability]
    trigger: Trigger
    entry: NodeId
    nodes: Annotated[list[dict[str, Any]], Field(min_length=1)]


class ButlerDocument(_Strict):
    """A whole Butler program of shipped nodes; what ``check`` returns when the program is clean."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        title="Butler",
        json_schema_extra={"description": "A mailnode Butler program (docs/butlers.md)."},
    )

    api_version: Literal["mailnode/v1"] = Field(alias="apiVersion")
    kind: Literal["Butler"]
    metadata: Metadata
    capabilities: list[Capability]
    trigger: Trigger
    entry: NodeId
    nodes: Annotated[list[AnyNode], Field(min_length=1)]

    def to_json(self) -> dict[str, Any]:
        """The parsed document as JSON data with the document's own key names.

        Absent and null optional edges (and ``inReplyTo``) mean the same thing, so nulls among model
        fields are dropped (spec Part A §2); a ``null`` inside a ``validate`` schema is data and kept.
        """
        data: dict[str, Any] = self.model_dump(mode="python", by_alias=True, exclude_none=True)
        return data


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12, as pydantic writes it) of a Butler document, for editors."""
    schema = ButlerDocument.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
