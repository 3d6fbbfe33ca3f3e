"""Mailboxes and their addresses, messages, conversations, cases and drafts."""
