"""Compaction: when summaries are written and from what (``src/compaction.ts``
``CompactionEngine``, the deferred debt of ``src/engine.ts``, ``src/summarize.ts`` sources and
fallbacks)."""
