"""The lossless-claw engine versions a replay can run, and the upstream commit each one mirrors.

``0.15.3`` is the plugin's main line (``afterTurn`` host path); ``1.0`` is the ``next/1.0`` line that
OpenClaw from 2026.7.2 on requires (``commitTurn`` host path, pending-summary pipeline).
"""

from __future__ import annotations

from typing import Final, Literal

EngineVersion = Literal["0.15.3", "1.0"]

DEFAULT_ENGINE: Final[EngineVersion] = "0.15.3"

UPSTREAM: Final[dict[str, tuple[str, str]]] = {
    "0.15.3": ("main", "4214b4809a819ec847fd7ba1463cab131e304d34"),
    "1.0": ("next/1.0", "bf3d69ef376030f749dbfa92be0c5e2abee59550"),
}

ENGINE_VERSIONS: Final[tuple[EngineVersion, ...]] = ("0.15.3", "1.0")
