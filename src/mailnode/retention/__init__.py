"""Retention and legal holds (issue 9 part B; spec/transactional.md §5, spec/outbound.md §7).

``rules`` decides whether a piece of content may be deleted now (pure); ``io`` keeps the ledger of
content, the organisation's settings, the deletion sweep and ``retain_until``; ``holds`` places and lifts
legal holds and answers the coverage check every destroying act asks first; ``tables`` holds holds, hold
lifts, retention settings, the retained-content ledger and the sweeps' cursors.
"""
