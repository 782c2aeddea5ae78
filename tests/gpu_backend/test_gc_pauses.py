"""gpu_backend/runtime/gc_pauses.py: start-up objects frozen out of the collector's sight, and
collections recorded for the pacing trace."""

import gc

from gpu_backend.runtime.gc_pauses import record_pauses, settle


def test_settle_freezes_what_is_alive_and_a_full_collection_then_skips_it():
    before = gc.get_freeze_count()
    kept = [[i] for i in range(20000)]          # long-lived objects, as start-up makes
    try:
        settle()
        assert gc.get_freeze_count() >= before + len(kept)
        assert all(id(k) not in map(id, gc.get_objects(2)) for k in kept[:3])
        settle(collect=False)                    # again, cheaply: nothing lost
        assert gc.get_freeze_count() >= before + len(kept)
    finally:
        gc.unfreeze()


def test_record_pauses_notes_each_collection_with_its_generation_and_length():
    out: list = []
    record_pauses(out)
    try:
        gc.collect(1)
        gc.collect()
    finally:
        gc.callbacks.pop()
    generations = [entry[2] for entry in out]
    assert generations[-2:] == [1, 2]
    assert all(entry[1] == "gc" and entry[3] >= 0 for entry in out)
