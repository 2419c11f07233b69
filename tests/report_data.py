"""A small real replay whose transcript plants HTML/JS in messages (for report escaping tests)."""

from __future__ import annotations

from functools import cache

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.summarizers import get_summarizer

PLANTED = "<script>window.__planted = 1; console.error('planted script ran')</script>"
PLANTED_IMG = '<img src="x" onerror="window.__planted_img = 1">'


def _entries() -> tuple[InputEntry, ...]:
    entries = []
    line = 2
    for turn in range(8):
        user = f"Turn {turn}: please look at this snippet {PLANTED} and {PLANTED_IMG} " + "details " * 120
        reply = f"Reply {turn}: the snippet contains a script tag & an img tag; " + "notes " * 150
        for role, text in (("user", user), ("assistant", reply)):
            content = text if role == "user" else [{"type": "text", "text": text}]
            entries.append(InputEntry(line, "message", {"role": role, "content": content, "timestamp": 1_700_000_000_000 + line * 1000}))
            line += 1
    return tuple(entries)


@cache
def planted_replay(run_id: str = "planted-run") -> Replay:
    conv = Conversation("planted-session", entries=_entries(), title="planted <b>title</b>")
    config = LcmConfig(fresh_tail_count=2, leaf_chunk_tokens=600, leaf_min_fanout=2, condensed_min_fanout=2,
                       condensed_target_tokens=100, sweep_max_depth=-1)
    return replay(conv, config, get_summarizer("offline"), token_budget=1200, run_id=run_id)
