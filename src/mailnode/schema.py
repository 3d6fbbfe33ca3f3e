"""The complete schema: importing this module registers every table on ``mailnode.db.meta.metadata``.

Each domain declares its tables in its own ``tables.py``; add a new module to the list below (an
unlisted module's tables would be missing from migrations, which the drift test catches).
"""

from __future__ import annotations

from mailnode import audit as _audit  # noqa: F401
from mailnode.butler import run_tables as _butler_runs  # noqa: F401
from mailnode.butler import tables as _butlers  # noqa: F401
from mailnode.db.meta import metadata
from mailnode.directory import contact_tables as _contacts  # noqa: F401
from mailnode.directory import tables as _directory  # noqa: F401
from mailnode.governance import provider_tables as _provider  # noqa: F401
from mailnode.governance import supervised_tables as _supervised  # noqa: F401
from mailnode.governance import tables as _governance  # noqa: F401
from mailnode.ingress import tables as _ingress  # noqa: F401
from mailnode.mail import message_tables as _messages  # noqa: F401
from mailnode.mail import tables as _mail  # noqa: F401
from mailnode.notices import tables as _notices  # noqa: F401
from mailnode.outbound import tables as _outbound  # noqa: F401
from mailnode.retention import tables as _retention  # noqa: F401
from mailnode.search import tables as _search  # noqa: F401

__all__ = ["metadata"]
