"""The answers of the send routes (``api.sends``, ``api.butler_release``), as the OpenAPI document states them:
field for field what ``outbound.reads`` (``send_summary``, ``get_send``), ``outbound.seal`` (``Sealed.to_json``,
``sealed_json``) and ``butler.release`` build. Closed models: a field the service adds and the model lacks
fails loudly (500 in the tests) instead of vanishing from the answer, so keep the two together.

Instants are strings in ISO 8601 UTC as the node writes them (``datetime.isoformat``), not re-serialised.
States and reasons stay strings (the vocabulary is ``vocabulary.send_states``; a value the node does not
know is still shown, with words that say so, rather than refused).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.responses import id_field
from mailnode.butler.release import Resumption

_INSTANT: JsonDict = {"format": "date-time"}


class _Answer(BaseModel):
    """An answer's part: closed (a field the service adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


class SendRetryOffer(_Answer):
    """What retrying the send may do (``send_states.RetryOffer.to_json``)."""

    mode: str = Field(description="none | retry-effect | resend-may-duplicate")
    basis: str = Field(description="why: not_yet_attempted, decided, acceptance_observed, refused, ..., "
                                   "content_deleted")
    duplicate_possible: bool = Field(description="true only for resend-may-duplicate")


class SendSummary(_Answer):
    """One send as ``GET /api/sends`` lists it (``reads.send_summary``)."""

    id: str = id_field("snd")
    mailbox_id: str = id_field("mbx")
    author_id: str = Field(description="the person, application or Butler that sealed it")
    author_kind: str = Field(description="person | butler | application | node (the node's own mail)")
    mail_class: str = Field(description="correspondence | realtime | deferrable")
    state: str = Field(description="held | awaiting | handed_over | withheld | cancelled | ... (send_states)")
    state_reason: str | None = Field(description="why it is in that state (null: no reason to give)")
    reason_words: str = Field(description="the state and its reason as a person reads them")
    subject: str
    from_: str = Field(alias="from", description="the envelope sender (the mailbox's address)")
    to: list[str]
    cc: list[str]
    bcc: list[str]
    sealed_at: str | None = Field(json_schema_extra=_INSTANT)
    release_at: str | None = Field(json_schema_extra=_INSTANT,
                                   description="when the hold window ends and it may be handed over")
    state_at: str | None = Field(json_schema_extra=_INSTANT)
    attempts: int = Field(ge=0, description="hand-over attempts made")
    last_error: str | None = Field(description="the specifics behind the reason: a pause, a breaker, a shortfall")
    rfc_message_id: str = Field(description="the Message-ID header it carries (RFC 5322 §3.6.4)")
    in_reply_to_message_id: str | None = id_field("msg")
    conversation_id: str | None = id_field("cnv")
    resend_of: str | None = id_field("snd", description="the send this one resends (resend-may-duplicate)")
    auto_submitted: str | None = Field(description="the Auto-Submitted value it carries (RFC 3834), if any")
    retry: SendRetryOffer
    content_deleted_at: str | None = Field(json_schema_extra=_INSTANT,
                                           description="when retention deleted its sealed body (null: kept)")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SendPage(_Answer):
    """One page of ``GET /api/sends``: newest first, and the cursor of the next page (null at the end)."""

    sends: list[SendSummary]
    next_cursor: str | None = id_field("snd")


class SendApprovalStage(_Answer):
    """One stage of a send's approval: how many approvers it needs, from which team, and how many stand."""

    ordinal: int
    required: int
    team_id: str | None = id_field("tm")
    approved: int = Field(ge=0, description="standing approvals (not withdrawn) at this stage")


class SendApproval(_Answer):
    """The approval a ``require_approval`` send waits on (``reads.approval_of``); counts only, no names."""

    id: str = id_field("apr")
    state: str = Field(description="pending | approved | denied | unsatisfiable | expired | cancelled")
    requested_at: str | None = Field(json_schema_extra=_INSTANT)
    expires_at: str | None = Field(json_schema_extra=_INSTANT)
    resolved_at: str | None = Field(json_schema_extra=_INSTANT)
    stages: list[SendApprovalStage]
    open_stage: SendApprovalStage | None = Field(description="the first stage still short (null unless pending)")


class SendContentDeleted(_Answer):
    """Retention deleted the sealed body (``retention.rules.deletion_note``): the same words as
    ``E_CONTENT_DELETED``."""

    at: str = Field(json_schema_extra=_INSTANT)
    setting: str = Field(description="the retention setting that aged it out")
    words: str
    fix: str


class SendRecipientRow(_Answer):
    """One recipient of a send: submission and delivery state, the last error and the transport's ids."""

    id: str = id_field("srp")
    kind: str = Field(description="to | cc | bcc")
    address: str
    submission_state: str
    submission_state_at: str | None = Field(json_schema_extra=_INSTANT)
    delivery_state: str | None = Field(description="null until the provider reported one")
    delivery_state_at: str | None = Field(json_schema_extra=_INSTANT)
    bounce_type: str | None
    last_error: str | None
    attempts: int = Field(ge=0)
    transport_message_id: str | None
    provider_message_id: str | None
    suppression_reason: str | None = Field(description="why it is suppressed (null unless it is)")


class SendEventRow(_Answer):
    """One delivery event recorded for the send (a provider event, a DSN, an ARF report)."""

    id: str = id_field("sev")
    event_type: str
    recipient: str | None
    recipient_id: str | None = id_field("srp")
    status: str | None = Field(description="the DSN status, e.g. 5.1.1, when one was given")
    bounce_type: str | None
    source: str
    received_at: str | None = Field(json_schema_extra=_INSTANT)
    detail: dict[str, Any] | None = Field(description="what the source said; its keys depend on the source")


class SendBody(_Answer):
    """The sealed body (``mail.thread.body_of``): text, and HTML when it has an HTML part."""

    text: str
    html: str | None


class SendAttachmentRecord(_Answer):
    """One attachment as the manifest records it: name, type, decoded size in bytes and SHA-256 (hex)."""

    filename: str
    content_type: str
    size_bytes: int = Field(ge=0)
    sha256: str


class SendDetail(SendSummary):
    """One send (``reads.get_send``) with its policy outcome, approval, next step, recipients and events.

    ``GET /api/sends/{send_id}`` adds ``display_names``, ``attachments``, ``body_visible_because`` and
    ``body``; cancel, release-hold and retry-effect answer without them (``SendActed``)."""

    content_deleted: SendContentDeleted | None
    policy_outcome: str | None = Field(description="allow | hold | require_approval | deny (null: not decided)")
    policy_versions: list[str] | None = Field(description="the policy versions that decided it")
    approval: SendApproval | None
    next_step: str | None = Field(description="what changes its reason, and who does it")
    recipients: list[SendRecipientRow]
    events: list[SendEventRow]


class SendRead(SendDetail):
    """``GET /api/sends/{send_id}``'s send: the detail, and the body to whoever may release, approve or
    cancel it (``mail.thread.send_body_grant``)."""

    display_names: dict[str, str] = Field(description="display names of To and Cc recipients, by address")
    attachments: list[SendAttachmentRecord]
    body_visible_because: str | None = Field(description="the grant that shows the body (null: not shown)")
    body: SendBody | None = Field(description="null without a grant, and once retention deleted it")


class SendReadAnswer(_Answer):
    """``{"send": SendRead}``: ``GET /api/sends/{send_id}``."""

    send: SendRead


class SendActedAnswer(_Answer):
    """``{"send": SendDetail}``: the send as it reads after cancel, release-hold or retry-effect."""

    send: SendDetail


class SendSealed(_Answer):
    """What a seal made (``Sealed.to_json``; a replay answers ``sealed_json``, the same shape)."""

    id: str = id_field("snd")
    state: str
    state_reason: str | None
    release_at: str = Field(json_schema_extra=_INSTANT)
    rfc_message_id: str
    conversation_id: str | None = id_field("cnv")
    recipients: int = Field(ge=0, description="how many recipients it has")
    policy_outcome: str | None
    approval_id: str | None = id_field("apr")
    last_error: str | None
    mail_class: str = Field(description="correspondence | realtime | deferrable")


class SendSealedAnswer(_Answer):
    """``{"send": SendSealed}``: ``POST /api/sends``."""

    send: SendSealed


class SendRetried(_Answer):
    """``POST /api/sends/{send_id}/retry``: ``retry-effect`` answers the send as it now reads
    (``SendDetail``, ``resend_of`` absent); ``resend-may-duplicate`` the new send (``SendSealed``) and
    ``resend_of``, the send it resends."""

    send: SendDetail | SendSealed
    resend_of: str | None = id_field("snd", default=None)


class SendRelease(_Answer):
    """A Butler's send released (``butler.release``)."""

    send_id: str = id_field("snd")
    state: str = Field(description="held")
    run_id: str | None = Field(description="the run that sealed it (null when none did)")
    resumed: bool = Field(description="true only when a workflow live in this process received the release")
    resumption: Resumption = Field(description="what telling the run did")


class SendReleaseAnswer(_Answer):
    """``{"release": SendRelease}``: ``POST /api/sends/{send_id}/release``."""

    release: SendRelease


class DeliveryEvent(_Answer):
    """One provider event or delivery report as ``GET /api/delivery-events`` lists it; ``manifest_id`` and
    ``recipient_id`` are null when it could not be attributed to a send."""

    id: str = id_field("sev")
    event_type: str
    recipient: str | None
    manifest_id: str | None = id_field("snd", description="the send it concerns (null: unattributed)")
    recipient_id: str | None = id_field("srp")
    status: str | None = Field(description="the DSN status, e.g. 5.1.1, when one was given")
    bounce_type: str | None
    source: str
    message_id: str | None = Field(description="the inbound message that carried the report, if any")
    received_at: str = Field(json_schema_extra=_INSTANT)
    detail: dict[str, Any] | None = Field(description="what the source said; its keys depend on the source")


class DeliveryEventPage(_Answer):
    """One page of ``GET /api/delivery-events``, newest first; ``next_cursor`` is the last id (null at the end)."""

    events: list[DeliveryEvent]
    next_cursor: str | None = id_field("sev")
