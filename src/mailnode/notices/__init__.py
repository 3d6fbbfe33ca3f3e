"""Notices to people (issue 9; spec/transactional.md §1 and §5): who is told what, once per episode.

``rules`` is the pure vocabulary and its decisions (recipients, dedup keys, no notice about a notice);
``io`` is the notice sweep that reads what happened, decides with ``rules``, writes and seals;
``workflows`` is its DBOS schedule; ``tables`` holds the notices and their trip episodes.
"""
