"""Who may reply to a message: the one rule the seal and save-draft share (``E_NO_SUCH_PARENT`` otherwise).

A person (or application) may reply to a message they can read: ``mailbox.content.read`` on the mailbox it
was delivered to. A Butler may also reply to the message that triggered one of its runs, without content
read: the run was handed that message's facts by the node (seed 003, the trigger), and answering it is the
point of an acknowledgement Butler granted only ``send.propose``. Any other message needs content read
for a Butler too.
"""

from __future__ import annotations

from sqlalchemy import Connection, exists, select

from mailnode.authz import holds
from mailnode.ids import prefix_of


def may_reply_to(conn: Connection, *, org_id: str, author_id: str, parent_id: str, parent_mailbox_id: str,
                 triggered_by: str | None = None) -> bool:
    """True when ``author_id`` may name ``parent_id`` as the message it replies to (1 or 2 statements).

    ``triggered_by`` is the message that triggered the Butler run the author is walking, when the caller
    knows it without a row: the dry run, which walks a recorded run and writes none (a live run of this
    Butler on that message is exactly the row the query below finds). It counts as that row.
    """
    if holds(conn, org_id, author_id, "mailbox.content.read", "mailbox", parent_mailbox_id):
        return True
    if prefix_of(author_id) != "btl":
        return False
    if triggered_by is not None and triggered_by == parent_id:
        return True
    from mailnode.schema.butler_runs import butler_runs

    triggered = conn.execute(select(exists().where(butler_runs.c.org_id == org_id,
                                                   butler_runs.c.butler_id == author_id,
                                                   butler_runs.c.trigger_key == parent_id))).scalar()
    return bool(triggered)
