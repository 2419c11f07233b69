"""Moved to :mod:`lcm_lab.testing`; this re-export keeps older test modules working (to be removed)."""

from lcm_lab.testing import FakeOpenAIServer, LoggedRequest, Reply, default_completion, detailed_style

__all__ = ["FakeOpenAIServer", "LoggedRequest", "Reply", "default_completion", "detailed_style"]
