"""Who answers ``expand_query``: a model through the summarizer boundary, or the offline quoter.

* :class:`ModelAnswerer` — any litellm model through the lab's ledger-backed chat call
  (:class:`~lcm_lab.summarizers.judge_model.LedgerJudge`: cached, recorded, never retried
  silently); one model call per question.
* :class:`OfflineAnswerer` — no model: quotes the best source passages verbatim under a label
  that says so (``[offline deterministic answerer: …]``). Zero model calls.

>>> a = OfflineAnswerer().answer("Which host?", [Passage("7", 7, "user", "deploy to db01", 4, 1, "t", "sum_a")], 50)
>>> a.text.splitlines()[0]
'[offline deterministic answerer: no model configured; quoting the best source passages]'
>>> a.cited_ids, a.model_calls
(('7',), 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.io.redaction import redact, register_secret

OFFLINE_LABEL = "[offline deterministic answerer: no model configured; quoting the best source passages]"
ANSWER_TEMPLATE_NAME = "expand-query-v1"


class Passage(NamedTuple):
    """One source message read during expansion."""

    message_id: str
    seq: int
    role: str | None
    content: str
    tokens: int
    conversation_id: int | None
    target: str
    via_summary: str


class Answer(NamedTuple):
    text: str
    cited_ids: tuple[str, ...]
    tokens: int
    model_calls: int


class Answerer(Protocol):
    label: str

    def answer(self, prompt: str, passages: Sequence[Passage], max_tokens: int) -> Answer: ...


def _quote(p: Passage) -> str:
    return f"[msg {p.message_id}, {p.role}] " + " ".join(p.content.split())


class OfflineAnswerer:
    """Quotes passages in reading order until ``max_tokens`` (labelled; not a model)."""

    label = "offline-quote"

    def answer(self, prompt: str, passages: Sequence[Passage], max_tokens: int) -> Answer:
        lines, cited = [OFFLINE_LABEL], []
        used = estimate_tokens(OFFLINE_LABEL)
        for p in passages:
            line = _quote(p)
            cost = estimate_tokens(line) + 1
            if used + cost > max_tokens:
                room = (max_tokens - used) * 4
                if room > 40:
                    lines.append(line[:room] + " …")
                    cited.append(p.message_id)
                break
            lines.append(line)
            cited.append(p.message_id)
            used += cost
        if not cited:
            lines.append("(no source passages found for this question)")
        text = "\n".join(lines)
        return Answer(text, tuple(cited), estimate_tokens(text), 0)


class ModelAnswerer:
    """A litellm model answers from the passages (through the ledger: cached and recorded)."""

    def __init__(self, model: str, *, ledger: object | None = None, api_base: str | None = None, api_key: str | None = None) -> None:
        from lcm_lab.summarizers.judge_model import LedgerJudge

        self.model = model
        self.label = f"model:{model}"
        register_secret(api_key)  # a key given in code is redacted from the answers too
        self._chat = LedgerJudge(model, ledger=ledger, api_base=api_base, api_key=api_key)  # type: ignore[arg-type]

    def answer(self, prompt: str, passages: Sequence[Passage], max_tokens: int) -> Answer:
        import hashlib

        sources = "\n\n".join(_quote(p) for p in passages) or "(no source passages found)"
        system = (
            "You answer a question about an earlier conversation using only the quoted source messages. "
            "Cite message ids in brackets like [msg 12]. If the sources do not contain the answer, say so."
        )
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Question: {prompt}\n\nSource messages:\n{sources}"},
        ]
        template_hash = hashlib.sha256((ANSWER_TEMPLATE_NAME + system).encode()).hexdigest()[:16]
        # derived text, redacted like the ledger's copy: a live answer reads as the cached one does
        text = redact(self._chat(messages, max_tokens=max_tokens, purpose="expand-query", template_name=ANSWER_TEMPLATE_NAME,
                                 template_hash=template_hash))  # fmt: skip
        cited = tuple(p.message_id for p in passages if f"msg {p.message_id}]" in text)
        return Answer(text, cited, estimate_tokens(text), 1)


def get_answerer(answerer: Answerer | str | None, **options: object) -> Answerer:
    """``None``/``"offline"`` → :class:`OfflineAnswerer`; a model name → :class:`ModelAnswerer`."""
    if answerer is None or answerer == "offline":
        return OfflineAnswerer()
    if isinstance(answerer, str):
        return ModelAnswerer(answerer, **options)  # type: ignore[arg-type]
    return answerer
