"""``doctor``: findings about the node's health that never print a reassuring zero without observations.

A finding has a ``name``, a ``severity`` (``refuse | degraded | report``: how bad it is when it fails),
``ok``, ``detail`` and ``fix``. The verdict is the worst severity among failing findings (``ok`` when
none fails); the CLI exits 0 ok, 1 degraded, 2 refuse. Checks are registered explicitly in
``mailnode.doctor.checks.CHECKS``; an unknown name is an error, never a silent skip.

``GET /api/doctor`` shows each finding only as far as the caller's relations reach
(``mailnode.doctor.visibility``; ``mailnode doctor`` at the data directory sees all). A new finding joins
by saying what it concerns, nothing else: leave ``concerns`` at its default (``ORGANISATION``,
administrators only) or set ``NODE`` for facts about the process; when it lists objects (runs,
receipts ...), build it with ``findings.listed`` from one ``Item`` per object carrying that object's
``Concern`` (``Concern("butler", btl_id)``, ``Concern("mailbox", mbx_id)`` ...), so a caller sees the
items whose object it may read and the rest are withheld.
"""
