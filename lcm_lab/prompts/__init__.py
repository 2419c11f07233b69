"""Prompt sets for model summarizers: the lab's own templates, lcm-tui directories, render, diff.

>>> from lcm_lab.prompts import default_prompt_set, render_request
>>> sorted(default_prompt_set())[:2]
['condensed-d1', 'condensed-d2']
"""

from lcm_lab.prompts.diff import TemplateDiff, diff_prompt_sets, format_diffs
from lcm_lab.prompts.gotemplate import Template, TemplateError
from lcm_lab.prompts.promptset import (
    DEFAULT_SOURCE,
    LCM_TUI_TEMPLATE_NAMES,
    TEMPLATE_NAMES,
    PromptSet,
    PromptTemplate,
    default_prompt_set,
    export_prompt_set,
    load_prompt_set,
    normalize_template_name,
    resolve_prompt_set,
    template_hash,
)
from lcm_lab.prompts.render import RenderedPrompt, prompt_variables, render_request, source_stats

__all__ = [
    "DEFAULT_SOURCE",
    "LCM_TUI_TEMPLATE_NAMES",
    "TEMPLATE_NAMES",
    "PromptSet",
    "PromptTemplate",
    "RenderedPrompt",
    "Template",
    "TemplateDiff",
    "TemplateError",
    "default_prompt_set",
    "diff_prompt_sets",
    "export_prompt_set",
    "format_diffs",
    "load_prompt_set",
    "normalize_template_name",
    "prompt_variables",
    "render_request",
    "resolve_prompt_set",
    "source_stats",
    "template_hash",
]
