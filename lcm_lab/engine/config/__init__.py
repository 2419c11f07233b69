"""Configuration: every plugin knob with its default, its ``LCM_*`` variable and its coercion,
resolved as ``src/db/config.ts`` ``resolveLcmConfig`` does."""
