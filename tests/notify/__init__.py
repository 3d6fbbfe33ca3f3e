"""Tests for ``mailnode.notify``: seed 002's decisions as tables and properties, no database."""
