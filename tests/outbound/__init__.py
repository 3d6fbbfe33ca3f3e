"""Tests for ``mailnode.outbound`` that need no database: addresses, render, transports, webhooks."""
