"""Transactional mail that fails safe (seed 002; spec/transactional.md): the pure decisions.

Mail classes (``classes``), the provider-availability breaker (``provider``), the sweeper's refusals
(``sweeper_rules``), verification codes (``verification``), retention (``retention``) and notices to
people (``notices``). Every module here is pure: no database, no clock, no network. The I/O layer reads
facts into the frozen dataclasses these modules define, calls one function, and writes what it returns.
"""
