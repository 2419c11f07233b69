"""The pure replay engine, grouped by the plugin's pipeline stages.

A message travels left to right; each folder is one stage, and a second version of a stage
(lossless-claw 1.0 beside 0.15.3) lives next to the first in the folder of the stage it changes:

* :mod:`~lcm_lab.engine.js` — JavaScript value, string and JSON semantics the plugin's byte-exact
  behaviour depends on;
* :mod:`~lcm_lab.engine.ingest` — one runtime message to the row the plugin stores (content
  projection, identity, large-payload interception; ``src/engine.ts`` ``ingestSingle``);
* :mod:`~lcm_lab.engine.compaction` — when and how summaries are written (the sweep of
  ``src/compaction.ts``, its operations, deferred debt, deterministic fallbacks, source text);
* :mod:`~lcm_lab.engine.assembly` — what the model receives (the bare ``src/assembler.ts``
  ``ContextAssembler.assemble`` and the engine-level ``src/engine.ts`` ``assemble`` around it);
* :mod:`~lcm_lab.engine.replay` — the host's side: turn split, live messages, the turn-by-turn
  driver, the reference trace format and what-if edits;
* :mod:`~lcm_lab.engine.config` — every plugin knob, resolved as ``src/db/config.ts`` does.

Shared by every stage: :mod:`~lcm_lab.engine.types` (core values), :mod:`~lcm_lab.engine.state`
(one conversation's working state), :mod:`~lcm_lab.engine.tokens` (the estimator),
:mod:`~lcm_lab.engine.tail` (the fresh-tail rule), :mod:`~lcm_lab.engine.timefmt`,
:mod:`~lcm_lab.engine.protocol` (the summarizer boundary) and :mod:`~lcm_lab.engine.quirks`.

Nothing here opens a file, reads the clock or talks to a network (``tests/test_engine_purity.py``).
"""
