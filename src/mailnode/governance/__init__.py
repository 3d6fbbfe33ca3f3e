"""Governance: the policy plane, approvals, the two-administrator domain pause and the rate breakers (seed 000).

Modules: ``tables`` (storage), ``policy`` (pure evaluation), ``policies`` (lifecycle and loader),
``matching`` (stage satisfiability), ``approvals`` (the one approval machinery), ``send_approval`` (the
``send_manifest`` subject's effects), ``pauses`` (the domain pause), ``breakers`` (the one breaker
statement and its reading), ``limits`` (the per-organisation breaker limits' one writer, its bounds and
sources), ``gatefacts`` (what the seal and the dispatch read from governance), ``cli`` (``mailnode
breakers``).
"""
