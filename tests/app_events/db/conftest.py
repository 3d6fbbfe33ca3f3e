"""The API tests' principals (``tests.api.conftest.cast``) for the webhook tests on a real database."""

from __future__ import annotations

from tests.api.conftest import cast  # noqa: F401 (a fixture)
