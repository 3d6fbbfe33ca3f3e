"""Fixtures for the conversation page's services: the real ingress listener and smarthost sink of tests/outbound/db."""

from tests.outbound.db.conftest import hold_zero, listener, sink  # noqa: F401
from tests.web.conftest import web  # noqa: F401
