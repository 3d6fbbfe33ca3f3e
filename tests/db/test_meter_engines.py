"""The statement meter follows its engine: a new engine never inherits the meter of a collected one."""

from __future__ import annotations

import gc

from sqlalchemy import create_engine, text

from mailnode.db.meter import StatementMeter


def test_a_new_engine_gets_a_meter_that_counts_even_when_it_reuses_a_collected_engines_id() -> None:
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
        engine.dispose()
        del engine, meter
        gc.collect()
    assert reused, "no engine reused a collected one's id: the test proved nothing"
