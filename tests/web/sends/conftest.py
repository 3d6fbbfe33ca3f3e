"""Fixtures for the Sends pages: the real ingress listener and smarthost sink of tests/outbound/db, the ASGI
client, and the search tests' world (people with grants)."""

from tests.outbound.db.conftest import hold_zero, listener, sink  # noqa: F401
from tests.search.conftest import world  # noqa: F401
from tests.web.conftest import web  # noqa: F401
