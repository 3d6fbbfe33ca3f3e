"""Organisations, users, teams, API tokens and the organisation's domains."""
