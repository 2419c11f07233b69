"""Reading a sweep spec's YAML: a mapping, with every key given once, nested within bounds.

PyYAML's safe loader keeps the last of two equal keys (``token_budget`` twice: the first value
is dropped without a word) and composes nested collections by recursion, so text nested a few
thousand levels deep ends in a ``RecursionError``. This loader refuses both, naming the key and
its lines or the depth, as a :class:`~lcm_lab.sweeps.spec.SweepSpecError`. Merge keys
(``<<: *base``) still override as YAML means them: only keys written twice in one mapping count.

>>> read_spec_yaml("name: a\\ntoken_budget: 10\\n", "s.yaml")
{'name': 'a', 'token_budget': 10}
>>> try:
...     read_spec_yaml("name: a\\ntoken_budget: 10\\ntoken_budget: 20\\n", "s.yaml")
... except SweepSpecError as exc:
...     print(exc)
s.yaml: key 'token_budget' is given twice (lines 2 and 3); keep one
"""

from __future__ import annotations

from typing import Any

import yaml

from lcm_lab.engine.js.depth import MAX_JSON_DEPTH
from lcm_lab.sweeps.spec import SweepSpecError

_MERGE = "tag:yaml.org,2002:merge"


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
        return loader.get_single_data()
    except _Refused as exc:
        raise SweepSpecError(f"{name}: {exc}") from None
    except yaml.YAMLError as exc:
        raise SweepSpecError(f"{name}: not valid YAML ({' '.join(str(exc).split())})") from None
    finally:
        loader.dispose()
