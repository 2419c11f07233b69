"""What recorded hosts (pi/OpenClaw, Claude Code) actually sent to their models.

:func:`recorded_calls` rebuilds, from a transcript and its own compaction records, the message
list the host sent at every API call, with the call's time and recorded provider usage.
"""

from lcm_lab.host.recorded import HostCall, recorded_calls, recorded_session_calls

__all__ = ["HostCall", "recorded_calls", "recorded_session_calls"]
