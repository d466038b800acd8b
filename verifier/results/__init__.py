"""The results stage: the vocabulary every later stage writes and reads — findings, notes, typed cells, the
per-kernel report, the Options of a run and its run-level table, a run's Result and the one serialization.
Early in the order so that launch, judge, battery, isolation and report all share it."""
