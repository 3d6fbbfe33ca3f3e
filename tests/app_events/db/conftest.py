"""The API tests' principals (``tests.api.conftest.cast``) for the webhook tests on a real database, whose
node may call webhook receivers on ``127.0.0.2``."""

from __future__ import annotations

import pytest

from mailnode.config import Settings
from tests.api.conftest import cast  # noqa: F401 (a fixture)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The shared settings with ``127.0.0.2`` allowed for webhooks (the receivers of these tests listen there)."""
    return settings.model_copy(update={"webhook_allow_hosts": ["127.0.0.2"]})
