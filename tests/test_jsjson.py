"""JavaScript-compatible JSON serialisation (values checked against node's JSON.stringify)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lcm_lab.engine.jsjson import UNDEFINED, js_number, js_parse, js_stringify


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (0.1, "0.1"),
        (-2.5, "-2.5"),
        (100.0, "100"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1.5e-6, "0.0000015"),
        (1e-6, "0.000001"),
        (5e-324, "5e-324"),
        (1e300, "1e+300"),
        (-0.0, "0"),
        (float("nan"), "null"),
        (float("inf"), "null"),
        (2**53, "9007199254740992"),
        (12345678901234567890, "12345678901234567000"),
        (123.456e5, "12345600"),
    ],
)
def test_numbers_print_like_javascript(value: float, expected: str) -> None:
    assert js_number(value) == expected


def test_strings_escape_like_javascript() -> None:
    text = 'q" b\\ \b\f\n\r\t \x00\x1f \x7f é 你 🔥 \u2028 \ud800'
    assert js_stringify(text) == '"q\\" b\\\\ \\b\\f\\n\\r\\t \\u0000\\u001f \x7f é 你 🔥 \u2028 \\ud800"'


def test_objects_compact_with_javascript_key_order() -> None:
    value = {"b": 1, "a": [True, None, UNDEFINED], "10": {}, "2": [], "02": 0, "u": UNDEFINED}
    assert js_stringify(value) == '{"2":[],"10":{},"b":1,"a":[true,null,null],"02":0}'


def test_parse_reorders_integer_keys_and_keeps_first_position_of_duplicates() -> None:
    parsed = js_parse('{"b":1,"1":2,"a":0,"b":3}')
    assert list(parsed) == ["1", "b", "a"]
    assert parsed["b"] == 3


def test_round_trip_of_stored_json_is_identity() -> None:
    text = '{"type":"toolCall","id":"toolu_1","arguments":{"path":"a.txt","n":1.5,"deep":[1,{"x":null}]}}'
    assert js_stringify(js_parse(text)) == text


def test_rejects_non_json_values() -> None:
    with pytest.raises(TypeError):
        js_stringify({"a": object()})
    with pytest.raises(ValueError):
        js_stringify(UNDEFINED)


def test_trim_uses_javascript_whitespace() -> None:
    from lcm_lab.engine.jsjson import js_trim

    assert js_trim("\u3000 a \ufeff\n") == "a"
    assert js_trim("\x1fa\x85") == "\x1fa\x85"


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(blacklist_categories=()), max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(alphabet="0123456789ab:,.e-", max_size=4), children, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=5), _json_values, max_size=5) | st.lists(_json_values, max_size=5))
def test_c_encoder_fast_path_matches_the_exact_writer(value: object) -> None:
    from lcm_lab.engine.jsjson import _write

    exact: list[str] = []
    _write(value, exact)
    assert js_stringify(value) == "".join(exact)


@pytest.mark.parametrize(
    "text",
    ['{"b":1,"2":2,"a":{"10":0,"1":1}}', '{"\\u0031":1,"a":2}', '{"a":1,"a":2,"b":3}', '{"x" : 1, "3" : 2}', "[1.0, -0, 5e-06]"],
)
def test_parse_fast_path_keeps_javascript_key_order(text: str) -> None:
    from lcm_lab.engine.jsjson import _object_pairs

    exact = json.loads(text, object_pairs_hook=_object_pairs)
    assert js_parse(text) == exact
    assert js_stringify(js_parse(text)) == js_stringify(exact)
