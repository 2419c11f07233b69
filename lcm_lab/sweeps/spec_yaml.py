"""Reading a sweep spec's YAML: a mapping, with every key given once, nested within bounds.

PyYAML's safe loader keeps the last of two equal keys (``token_budget`` twice: the first value
is dropped without a word) and composes nested collections by recursion, so text nested a few
thousand levels deep ends in a ``RecursionError``. Aliases (``*name``) share what their anchor
holds, so a few lines that alias aliases stand for billions of values, which every later step
(the depth check, validation) walks one by one: such a spec ran until it was killed. An alias
may even hold itself. This loader refuses all of these, naming the key and its lines, the depth,
or the size, as a :class:`~lcm_lab.sweeps.spec.SweepSpecError`. Merge keys (``<<: *base``)
still override as YAML means them: only keys written twice in one mapping count.

>>> read_spec_yaml("name: a\\ntoken_budget: 10\\n", "s.yaml")
{'name': 'a', 'token_budget': 10}
>>> try:
...     read_spec_yaml("name: a\\ntoken_budget: 10\\ntoken_budget: 20\\n", "s.yaml")
... except SweepSpecError as exc:
...     print(exc)
s.yaml: key 'token_budget' is given twice (lines 2 and 3); keep one
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from lcm_lab.engine.js.depth import MAX_JSON_DEPTH
from lcm_lab.sweeps.spec import SweepSpecError

_MERGE = "tag:yaml.org,2002:merge"
# The values (keys, scalars, lists and mappings) a spec may hold once its aliases are expanded.
MAX_SPEC_VALUES = 100_000


class _Refused(Exception):
    """What the loader refuses, before the file's name is added to the message."""


class _SpecLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_JSON_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise _Refused(f"nested more than {MAX_JSON_DEPTH} levels deep (line {line}); a spec is read to at most "
                               f"{MAX_JSON_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # an unhashable key: the constructor itself says so below
                if first is not None:
                    where = f"line {line}" if first == line else f"lines {first} and {line}"
                    raise _Refused(f"key {key!r} is given twice ({where}); keep one")
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_spec_yaml(text: str, name: str) -> Any:
    """The value the YAML ``text`` holds (``name``, the file's, starts every error message)."""
    loader = _SpecLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node)
        if size == math.inf:
            raise _Refused("an alias holds itself (its anchor is inside what it names)")
        if size > MAX_SPEC_VALUES:
            raise _Refused(f"holds {size:,.0f} values once its aliases (*name) are expanded; a spec holds at most "
                           f"{MAX_SPEC_VALUES:,}")
        return loader.construct_document(node)
    except _Refused as exc:
        raise SweepSpecError(f"{name}: {exc}") from None
    except yaml.YAMLError as exc:
        raise SweepSpecError(f"{name}: not valid YAML ({' '.join(str(exc).split())})") from None
    finally:
        loader.dispose()


def _expanded_size(root: yaml.Node) -> float:
    """How many nodes ``root`` stands for with every alias expanded (``inf`` when an alias holds
    itself), counted once per distinct node: linear in the text, however much it expands to."""
    sizes: dict[int, float] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        children = _children(node)
        if finished:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
        elif id(node) in open_nodes:
            return math.inf  # reached again from inside itself
        elif id(node) not in sizes:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []
