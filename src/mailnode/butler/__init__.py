"""Butlers: small deterministic programs that answer or triage mail (seed 003, issue 6).

This package holds the half of a Butler that does not run and touches no database: the document
(``ast``), the checker that refuses bad programs with readable findings (``check``), the canonical
form and its digests (``canonical``), the price of a program in SQL statements (``cost``), the
expression language (``expr``), the JSON Schema subset ``validate`` honours (``schema_subset``) and
the offline command line (``cli``). The language reference is ``docs/butlers.md``.

Nothing here imports the database or DBOS, so ``mailnode butler check`` works offline.
"""
