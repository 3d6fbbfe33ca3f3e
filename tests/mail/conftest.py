"""The queue tests reuse the search tests' builders: an installed node, its API, mail through the real ingress."""

from tests.search.conftest import world  # noqa: F401  (the fixture)
