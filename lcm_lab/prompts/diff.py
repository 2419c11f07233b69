"""Unified diffs between two prompt sets (e.g. a user's directory against the lab defaults)."""

from __future__ import annotations

import difflib
from typing import NamedTuple

from lcm_lab.prompts.promptset import TEMPLATE_NAMES, PromptSet


class TemplateDiff(NamedTuple):
    """The difference of one template between two sets; ``diff`` is empty when identical."""

    name: str
    old_source: str
    new_source: str
    old_hash: str
    new_hash: str
    diff: str

    @property
    def changed(self) -> bool:
        return self.old_hash != self.new_hash


def diff_prompt_sets(old: PromptSet, new: PromptSet, names: tuple[str, ...] | None = None) -> list[TemplateDiff]:
    """One :class:`TemplateDiff` per template name (all six unless ``names`` is given).

    >>> from lcm_lab.prompts.promptset import default_prompt_set
    >>> [d.changed for d in diff_prompt_sets(default_prompt_set(), default_prompt_set())]
    [False, False, False, False, False, False]
    """
    result: list[TemplateDiff] = []
    for name in names or TEMPLATE_NAMES:
        a, b = old[name], new[name]
        lines = difflib.unified_diff(
            a.text.splitlines(keepends=True),
            b.text.splitlines(keepends=True),
            fromfile=f"{name}.tmpl ({a.source})",
            tofile=f"{name}.tmpl ({b.source})",
        )
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        result.append(TemplateDiff(name, a.source, b.source, a.hash, b.hash, text))
    return result


def format_diffs(diffs: list[TemplateDiff]) -> str:
    """Human-readable report: the diff of every changed template, one line per unchanged one."""
    parts: list[str] = []
    for d in diffs:
        if d.changed:
            parts.append(d.diff)
        else:
            parts.append(f"= {d.name}.tmpl unchanged ({d.new_hash[:12]})\n")
    return "".join(parts)
