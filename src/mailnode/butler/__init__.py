"""Butlers: small deterministic programs that answer or triage mail (seed 003, issues 6 and 7).

The program, which touches no database and imports no DBOS, so ``mailnode butler check`` works
offline: the document (``ast``), the checker (``check``), the canonical form (``canonical``), the price
in SQL statements (``cost``), the expression language (``expr``), the ``validate`` schema subset
(``schema_subset``), the capability table (``capability``), the command line (``cli``), and the walk
(``walk``) with who a reply goes to (``parent``) and the states and reasons it ends runs with
(``states``), all pure so the dry run can share them.

The stored and running half, which does touch the database: versions and their lifecycle (``tables``,
``lifecycle``), the run record (``run_tables``, ``record``), the trigger (``trigger``), the durable
engine on DBOS (``engine``), the effects through the people's functions (``effects``), the three-term
authority (``authority``) and the human release gate (``release``). The language reference is
``docs/butlers.md``.
"""
