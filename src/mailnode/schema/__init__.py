"""Every table of the node, one module per package that owns the noun; importing this package registers them
all on ``mailnode.db.meta.metadata`` (Alembic's ``env.py`` and the drift test read it from here).

Why the tables sit together, below every domain package (issue 18, "Layers run one way"): the database is
shared, so any package may need to *read* any table (the conversation view reads sends, retention reads
receipts, the gates read counts of sends). Putting the table declarations in this low layer lets every
package read them without importing a package above it; what a package may *call* still follows the layers
(``docs/development.md``). A table module holds only declarations: columns, constraints, indexes, and
imports nothing of mailnode but ``db.meta``.

The modules: ``directory`` (organisations, users, teams, tuples, tokens), ``directory_contacts`` (contact
addresses, applications), ``mail`` (mailboxes), ``mail_messages`` (messages, conversations, cases, notes),
``ingress`` (receipts), ``governance`` (policies, limits, approvals, pauses, breakers), ``governance_provider``
(the provider-availability breaker), ``governance_supervised`` (supervised grants), ``outbound`` (sends and
their recipients), ``outbound_suppression`` (the suppression list), ``butler`` (Butlers and versions),
``butler_runs`` (runs and effects), ``executors`` (the liveness of serve processes), ``notices``,
``retention`` (holds and purges), ``search``; the audit
chain's table is ``mailnode.audit``'s. Add a new module to the imports below (an unlisted module's tables
would be missing from migrations, which the drift test catches).
"""

from __future__ import annotations

from mailnode import audit as _audit  # noqa: F401
from mailnode.db.meta import metadata
from mailnode.schema import app_events as _app_events  # noqa: F401
from mailnode.schema import butler as _butler  # noqa: F401
from mailnode.schema import butler_runs as _butler_runs  # noqa: F401
from mailnode.schema import directory as _directory  # noqa: F401
from mailnode.schema import directory_contacts as _directory_contacts  # noqa: F401
from mailnode.schema import executors as _executors  # noqa: F401
from mailnode.schema import governance as _governance  # noqa: F401
from mailnode.schema import governance_provider as _governance_provider  # noqa: F401
from mailnode.schema import governance_supervised as _governance_supervised  # noqa: F401
from mailnode.schema import ingress as _ingress  # noqa: F401
from mailnode.schema import mail as _mail  # noqa: F401
from mailnode.schema import mail_messages as _mail_messages  # noqa: F401
from mailnode.schema import notices as _notices  # noqa: F401
from mailnode.schema import outbound as _outbound  # noqa: F401
from mailnode.schema import outbound_suppression as _outbound_suppression  # noqa: F401
from mailnode.schema import retention as _retention  # noqa: F401
from mailnode.schema import search as _search  # noqa: F401

__all__ = ["metadata"]
