"""Assembly: what the model receives — the bare ``src/assembler.ts`` ``ContextAssembler.assemble``
and the engine-level ``src/engine.ts`` ``assemble`` (fallbacks, degraded paths, clamp) around it."""
