"""Webhooks to applications (issue 20): mail events read from what the node records, signed and delivered."""
