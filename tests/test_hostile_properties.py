"""Hostile input the hand-written cases do not have (issue 22 items 4, 5, 6, 11): properties over
generated text, nesting, path spellings and key-like strings."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_lab.engine.js.depth import MAX_JSON_DEPTH, text_depth, value_depth
from lcm_lab.io.data_paths import resolve_data_path
from lcm_lab.io.redaction import REDACTED, redact
from lcm_lab.io.terminal import json_text, terminal_text
from lcm_lab.io.transcripts.jsonl import parse_json_bytes

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
# text rich in the characters that matter: controls, C1, bidi, separators, and ordinary letters
HOSTILE_CHARS = st.characters(codec="utf-8") | st.sampled_from(
    [chr(c) for c in range(0x20)] + [chr(c) for c in range(0x7F, 0xA0)] + list("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029")
)
HOSTILE_TEXT = st.text(HOSTILE_CHARS, max_size=80)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(HOSTILE_TEXT)
def test_no_control_character_reaches_the_terminal(text: str) -> None:
    shown = terminal_text(text)
    assert UNSAFE.search(shown) is None
    assert shown.count("\n") == text.count("\n")  # newlines and tabs kept, nothing else raw
    assert UNSAFE.search(terminal_text(text, keep="")) is None and "\n" not in terminal_text(text, keep="")


@FAST
@given(st.dictionaries(st.text(HOSTILE_CHARS, max_size=8), HOSTILE_TEXT, max_size=4))
def test_json_output_is_safe_and_decodes_to_the_same_value(value: dict[str, str]) -> None:
    line = json_text(json.dumps(value, ensure_ascii=False))
    assert UNSAFE.search(line) is None and "\n" not in line
    assert json.loads(line) == value


@st.composite
def nested(draw: st.DrawFn) -> tuple[object, int]:
    """A JSON value nested a known number of levels, with brackets inside its strings."""
    depth = draw(st.integers(0, MAX_JSON_DEPTH + 60))
    value: object = draw(st.one_of(st.integers(), st.text(st.sampled_from('[]{}"\\ab'), max_size=5)))
    kinds = draw(st.lists(st.booleans(), min_size=depth, max_size=depth))
    for as_list in kinds:
        value = [value, "]"] if as_list else {"k[": value}
    return value, depth


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nested())
def test_depth_is_measured_exactly_and_the_limit_holds(case: tuple[object, int]) -> None:
    value, depth = case
    text = json.dumps(value)
    assert value_depth(value) == text_depth(text) == depth
    if depth <= MAX_JSON_DEPTH:
        assert parse_json_bytes(text.encode()) == value
    else:
        with pytest.raises(ValueError, match="levels deep"):
            parse_json_bytes(text.encode())


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state directory with payloads, a link staying inside, links escaping and a secret beside it."""
    base = tmp_path_factory.mktemp("state")
    root = base / "lcm-files"
    (root / "7" / "sub").mkdir(parents=True)
    (root / "7" / "a.txt").write_text("a")
    (root / "7" / "sub" / "b.txt").write_text("b")
    (base / "secret.txt").write_text("s")
    (root / "7" / "in").symlink_to(root / "7" / "a.txt")
    (root / "7" / "out").symlink_to(base / "secret.txt")
    (root / "7" / "updir").symlink_to(base)
    return root


SEGMENTS = st.sampled_from(["..", ".", "lcm-files", "7", "sub", "a.txt", "b.txt", "in", "out", "updir", "secret.txt", "etc", "passwd", ""])


@settings(max_examples=500, deadline=None)
@given(st.booleans(), st.lists(SEGMENTS, min_size=1, max_size=7))
def test_a_resolved_path_is_always_a_file_inside_the_payload_directory(tree: Path, absolute: bool, parts: list[str]) -> None:
    recorded = (str(tree.parent) + "/" if absolute else "") + "/".join(parts)
    found = resolve_data_path(recorded, tree)
    real_root = Path(os.path.realpath(tree))
    if found.path is not None:
        assert found.path.is_file() and real_root in found.path.parents
        assert found.path.read_text() in ("a", "b")  # never the secret beside the directory
    else:
        assert found.problem


KEYISH = st.lists(st.sampled_from(list("skpraAIzBe-_ .x9\n") + ["sk-", "Bearer ", "AIza", "task-"]), max_size=40).map("".join)
_OLD_SHAPES = re.compile(r"\b(?:sk|pk|rk|ak)-[A-Za-z0-9_\-]{8,}|\bAIza[0-9A-Za-z_\-]{20,}|\bBearer\s+[A-Za-z0-9._\-]{8,}")


@settings(max_examples=1000, deadline=None)
@given(KEYISH)
def test_key_shapes_match_the_plain_pattern(text: str) -> None:
    assert redact(text, []) == _OLD_SHAPES.sub(REDACTED, text)
