"""What the provider sees at one call, as an ordered list of content blocks.

A request is serialised in the provider's own order (tools and system prompt first, then the
messages, each message's content blocks in order) so that two requests share a cache prefix
exactly when their leading blocks are identical. Each block has a stable key (canonical JSON of
what the provider receives) and an estimated size: the lab's token estimator
(:func:`lcm_lab.engine.tokens.estimate_tokens`) on the block's text. The calibrated tokenizer
ratio turns estimates into provider tokens later (:mod:`lcm_lab.cost.calibrate`).

Messages map to Anthropic Messages blocks the way pi's provider sends them: ``toolResult``
becomes a user ``tool_result`` block, ``toolCall`` a ``tool_use`` block (name + JSON input),
thinking blocks are sent back with their text, and the host's synthesized messages
(``compactionSummary``, ``branchSummary``, ``bashExecution``, ``custom``) become user text. An
image counts :data:`IMAGE_TOKENS` (Anthropic's cost of a ~1.15-megapixel image; transcripts keep
no dimensions).

>>> [b.text for b in message_blocks({"role": "user", "content": "hello"})]
['hello']
>>> b = message_blocks({"role": "assistant", "content": [{"type": "toolCall", "id": "t1", "name": "read",
...                                                      "arguments": {"path": "a.py"}}]})[0]
>>> b.text, b.estimate
('read {"path": "a.py"}', 6)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lcm_lab.engine.tokens import estimate_tokens

IMAGE_TOKENS = 1600
SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n"


@dataclass(frozen=True)
class Block:
    """One content block as the provider receives it: a stable key and an estimated size."""

    key: str
    text: str
    estimate: int

    @property
    def thinking(self) -> bool:
        return self.key.startswith('["thinking"')


def _block(kind: str, role: str, payload: Any, text: str, fixed: int | None = None) -> Block:
    key = json.dumps([kind, role, payload], sort_keys=True, ensure_ascii=False, default=str)
    return Block(key, text, fixed if fixed is not None else estimate_tokens(text))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str))
    return ""


def _content_blocks(role: str, content: Any) -> list[Block]:
    if isinstance(content, str):
        return [_block("text", role, content, content)] if content else []
    out: list[Block] = []
    for raw in content if isinstance(content, list) else []:
        if not isinstance(raw, Mapping):
            continue
        kind = raw.get("type")
        if kind == "text" and raw.get("text"):
            out.append(_block("text", role, raw["text"], raw["text"]))
        elif kind == "thinking" and raw.get("thinking"):
            out.append(_block("thinking", role, raw["thinking"], raw["thinking"]))
        elif kind == "toolCall":
            args = json.dumps(raw.get("arguments", {}), ensure_ascii=False, sort_keys=True)
            name = str(raw.get("name", ""))
            out.append(_block("tool_use", role, [raw.get("id"), name, args], f"{name} {args}"))
        elif kind == "image":
            digest = hashlib.sha256(str(raw.get("data", "")).encode()).hexdigest()
            out.append(_block("image", role, digest, "", IMAGE_TOKENS))
    return out


def message_blocks(message: Mapping[str, Any]) -> list[Block]:
    """The provider blocks of one runtime message (an empty list for an empty message)."""
    role = message.get("role")
    if role == "toolResult":
        text = _text_of(message.get("content"))
        images = [b for b in _content_blocks("tool", message.get("content")) if b.key.startswith('["image"')]
        payload = [message.get("toolCallId"), text, bool(message.get("isError"))]
        return [_block("tool_result", "user", payload, text or " ")] + images
    if role == "compactionSummary":
        text = SUMMARY_PREFIX + str(message.get("summary", ""))
        return [_block("text", "user", text, text)]
    if role == "branchSummary":
        text = BRANCH_PREFIX + str(message.get("summary", ""))
        return [_block("text", "user", text, text)]
    if role == "bashExecution":
        text = f"Ran `{message.get('command', '')}`\n```\n{message.get('output', '')}\n```"
        return [_block("text", "user", text, text)]
    if role in ("custom", "user"):
        return _content_blocks("user", message.get("content"))
    return _content_blocks("assistant", message.get("content"))


class BlockCache:
    """Memoised :func:`message_blocks` for message dicts shared between many calls.

    Requests of one session reuse the same message dicts (each call's context is the previous
    one plus a few messages), so serialising each dict once makes a 500-call session cheap.
    """

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Mapping[str, Any], list[Block]]] = {}
        self.links: dict[tuple[bytes, str], bytes] = {}  # prefix_hashes memo

    def blocks(self, message: Mapping[str, Any]) -> list[Block]:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        blocks = message_blocks(message)
        self._memo[id(message)] = (message, blocks)
        return blocks

    def request(self, messages: Sequence[Mapping[str, Any]], *, strip_old_thinking: bool = False) -> list[Block]:
        """All blocks of a request's messages, in order.

        With ``strip_old_thinking``, thinking blocks of assistant messages before the last user
        message are left out (the Anthropic API drops previous turns' thinking from the context).
        """
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1) if strip_old_thinking else -1
        out: list[Block] = []
        for i, message in enumerate(messages):
            blocks = self.blocks(message)
            if i < last_user and message.get("role") == "assistant":
                blocks = [b for b in blocks if not b.thinking]
            out.extend(blocks)
        return out


def prefix_hashes(keys: Sequence[str], seed: str = "", memo: dict[tuple[bytes, str], bytes] | None = None) -> list[bytes]:
    """Chained digests: ``out[i]`` identifies the prefix ``keys[0..i]`` (with a ``seed``, e.g. the
    system prompt's identity). ``memo`` reuses links computed for earlier requests.

    >>> a, b = prefix_hashes(["x", "y"]), prefix_hashes(["x", "z"])
    >>> a[0] == b[0], a[1] == b[1]
    (True, False)
    """
    out: list[bytes] = []
    state = hashlib.blake2b(seed.encode(), digest_size=16).digest()
    for key in keys:
        link = (state, key)
        cached = memo.get(link) if memo is not None else None
        if cached is None:
            cached = hashlib.blake2b(state + key.encode(), digest_size=16).digest()
            if memo is not None:
                memo[link] = cached
        state = cached
        out.append(state)
    return out
