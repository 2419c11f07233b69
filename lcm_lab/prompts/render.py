"""Render a :class:`SummaryRequest` into chat messages with a prompt set.

Template variables (``{{.Name}}``): ``SourceText``, ``TargetTokens``, ``PreviousContext``
(``""`` when the plugin passes none), ``CustomInstructions`` (trimmed), ``Depth``, ``Kind``
(``leaf``/``condensed``), ``Aggressive``, and — as lcm-tui provides them — ``ChildCount`` (number
of messages or child summaries in the source) and ``TimeRange`` (``first – last`` timestamp
found in the source headers).

Templates written for lcm-tui may not mention ``SourceText`` or ``CustomInstructions``; the
renderer then appends the source in a tagged block (and the operator instructions before it)
so that the model always sees the text it must summarise. Such additions are listed in
:attr:`RenderedPrompt.additions`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.protocol import SummaryRequest
from lcm_lab.prompts.promptset import PromptSet, PromptTemplate

# Leaf source headers (src/compaction.ts leafPass, resolveLeafSummaryMessageContent): "[2024-05-01 14:03 UTC | user]" (sender suffix optional),
# or "[2024-05-01 14:03 UTC]" before v0.15. Condensed headers (condensedPass): "[<fmt> - <fmt>]".
_STAMP = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?: [A-Za-z][A-Za-z0-9+\-:]*)?"
LEAF_HEADER = re.compile(rf"^\[(?P<at>{_STAMP})(?: \| (?P<role>[a-zA-Z]+)(?P<sender> \|[^\n]*)?)?\]$", re.MULTILINE)
CONDENSED_HEADER = re.compile(rf"^\[(?P<start>{_STAMP}) - (?P<end>{_STAMP})\]$", re.MULTILINE)


@dataclass(frozen=True)
class RenderedPrompt:
    """The messages of one call and the hashes of the templates that produced them."""

    system: str
    user: str
    template_name: str
    template_hash: str
    system_hash: str
    additions: tuple[str, ...] = field(default=())

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]


def source_stats(source_text: str, kind: str) -> tuple[int, str]:
    """``(ChildCount, TimeRange)`` read from the source's block headers.

    >>> source_stats("[2024-01-02 10:00 UTC | user]\\nhi\\n\\n[2024-01-02 11:30 UTC | assistant]\\nyo", "leaf")
    (2, '2024-01-02 10:00 UTC – 2024-01-02 11:30 UTC')
    """
    if kind == "condensed":
        spans = [(m.group("start"), m.group("end")) for m in CONDENSED_HEADER.finditer(source_text)]
        if not spans:
            return (0, "")
        return (len(spans), _range(spans[0][0], spans[-1][1]))
    stamps = [m.group("at") for m in LEAF_HEADER.finditer(source_text)]
    if not stamps:
        return (0, "")
    return (len(stamps), _range(stamps[0], stamps[-1]))


def _range(first: str, last: str) -> str:
    return first if first == last else f"{first} – {last}"


def prompt_variables(request: SummaryRequest) -> dict[str, Any]:
    """The variables every template receives for ``request``."""
    child_count, time_range = source_stats(request.source_text, request.kind)
    return {
        "SourceText": request.source_text,
        "TargetTokens": request.target_tokens,
        "PreviousContext": request.previous_summary or "",
        "CustomInstructions": request.custom_instructions.strip(),
        "Depth": request.depth,
        "Kind": request.kind,
        "Aggressive": request.aggressive,
        "ChildCount": child_count,
        "TimeRange": time_range,
    }


def render_template(template: PromptTemplate, variables: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """Render one template; append source/instructions the template does not reference."""
    text = template.compiled.render(variables)
    additions: list[str] = []
    if template.name == "system":
        return text.strip(), ()
    fields = template.compiled.fields
    if "CustomInstructions" not in fields and variables["CustomInstructions"]:
        text = text.rstrip() + "\n\nOperator instructions:\n" + variables["CustomInstructions"]
        additions.append("CustomInstructions")
    if "SourceText" not in fields:
        tag = "conversation_segment" if variables["Kind"] == "leaf" else "conversation_to_condense"
        text = text.rstrip() + f"\n\n<{tag}>\n{variables['SourceText']}\n</{tag}>"
        additions.append("SourceText")
    return text.strip(), tuple(additions)


def render_request(prompts: PromptSet, request: SummaryRequest) -> RenderedPrompt:
    """Pick the template for ``request`` (kind, depth, aggressive) and render system + user.

    >>> from lcm_lab.prompts.promptset import default_prompt_set
    >>> req = SummaryRequest("[2024-01-02 10:00 UTC | user]\\nship it", "leaf", 0, False, None, 192, 2240)
    >>> rendered = render_request(default_prompt_set(), req)
    >>> rendered.template_name, "ship it" in rendered.user, "about 192 tokens" in rendered.user
    ('leaf', True, True)
    """
    name = prompts.template_name_for(request.kind, request.depth, request.aggressive)
    template = prompts[name]
    variables = prompt_variables(request)
    user, additions = render_template(template, variables)
    system_template = prompts["system"]
    system, _ = render_template(system_template, variables)
    return RenderedPrompt(
        system=system,
        user=user,
        template_name=name,
        template_hash=template.hash,
        system_hash=system_template.hash,
        additions=additions,
    )
