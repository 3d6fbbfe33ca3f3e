"""The statement meter follows its engine: a new engine never inherits the meter of a collected one."""

from __future__ import annotations

import gc

from sqlalchemy import create_engine, text

from mailnode.db.meter import StatementMeter


def _engines_until_an_id_is_reused() -> None:
    """Attach a meter to new engines, collecting each, until one reuses a collected engine's id."""
    seen: set[int] = set()
    reused = False
    for _ in range(200):
        engine = create_engine("sqlite://")
        reused = reused or id(engine) in seen
        seen.add(id(engine))
        meter = StatementMeter.attach(engine)
        with engine.connect() as conn, meter.measure() as m:
            conn.execute(text("SELECT 1"))
        assert m.count == 1
        if reused:
            break
        engine.dispose()
        del engine, meter
        gc.collect()
    assert reused, "no engine reused a collected one's id: the test proved nothing"


def test_a_new_engine_gets_a_meter_that_counts_even_when_it_reuses_a_collected_engines_id() -> None:
    # Late in the suite the session holds about 1 GB of objects, and each full collection would walk them all:
    # frozen, they are left out, so the loop costs what it costs in a fresh process.
    gc.freeze()
    try:
        _engines_until_an_id_is_reused()
    finally:
        gc.unfreeze()
