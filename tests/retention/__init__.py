"""Tests of issue 9 part B: legal holds, retention and notices, on SQLite and PostgreSQL."""
