"""``doctor``: findings about the node's health that never print a reassuring zero without observations.

A finding has a ``name``, a ``severity`` (``refuse | degraded | report``: how bad it is when it fails),
``ok``, ``detail`` and ``fix``. The verdict is the worst severity among failing findings (``ok`` when
none fails); the CLI exits 0 ok, 1 degraded, 2 refuse. Checks are registered explicitly in
``mailnode.doctor.checks.CHECKS``; an unknown name is an error, never a silent skip.
"""
