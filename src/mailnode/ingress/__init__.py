"""Inbound mail: pure parsing and classification of received bytes.

The modules here are pure functions over bytes and plain data that return frozen dataclasses and
never raise on hostile input: ``parse`` (headers, addresses, body), ``authresults``
(Authentication-Results verdicts), ``attachments`` (counts and dangerous files), ``classify``
(automated mail and whether it may be answered automatically) and ``reports`` (delivery and
feedback reports). Storage, SMTP and materialisation live beside them and call them.
"""
