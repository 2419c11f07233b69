"""JavaScript-compatible JSON serialisation (values checked against node's JSON.stringify)."""

from __future__ import annotations

import json

import pytest
from conftest import same_json_value
from hypothesis import given, settings
from hypothesis import strategies as st

from lcm_lab.engine.js.json import UNDEFINED, js_number, js_parse, js_stringify


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
    from lcm_lab.engine.js.json import js_trim

    assert js_trim("\u3000 a \ufeff\n") == "a"
    assert js_trim("\x1fa\x85") == "\x1fa\x85"


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(blacklist_categories=()), max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(alphabet="0123456789ab:,.e-", max_size=4), children, max_size=4),
    max_leaves=20,
)


@settings(deadline=None)  # a shared 2-core machine: wall-clock deadlines are noise
@given(st.dictionaries(st.text(max_size=5), _json_values, max_size=5) | st.lists(_json_values, max_size=5))
def test_c_encoder_fast_path_matches_the_exact_writer(value: object) -> None:
    from lcm_lab.engine.js.json import _write

    exact: list[str] = []
    _write(value, exact)
    assert js_stringify(value) == "".join(exact)


@pytest.mark.parametrize(
    "text",
    ['{"b":1,"2":2,"a":{"10":0,"1":1}}', '{"\\u0031":1,"a":2}', '{"a":1,"a":2,"b":3}', '{"x" : 1, "3" : 2}', "[1.0, -0, 5e-06]"],
)
def test_parse_fast_path_keeps_javascript_key_order(text: str) -> None:
    from lcm_lab.engine.js.json import _object_pairs

    exact = json.loads(text, object_pairs_hook=_object_pairs)
    assert js_parse(text) == exact
    assert js_stringify(js_parse(text)) == js_stringify(exact)


# Values where orjson (the fast path) and JSON.stringify are known to part ways, or nearly so.
_TRICKY_STRINGS = ["\u2028", "\u2029", "\ud800", "\udfff", "a\ud83d", "\ud83d\ude00", "😀", "\x00", "\x1f", "\x7f",
                   "\x85", "\ufeff", "é", "\\", '"', "/", "</script>", "\b\f\n\r\t", "\u0000x"]  # fmt: skip
_TRICKY_NUMBERS = [0, -0.0, 0.0, 1.0, -1.0, 100.0, 1e15, 1e16, 1e20, 1e21, 1e-6, 1e-7, 1.5e-7, 5e-324, 1.7976931348623157e308,
                   0.1, 123.456, 2**53 - 1, 2**53, 2**53 + 1, -(2**53) - 1, 2**63, 2**64, 2**70, -(2**64),
                   float("nan"), float("inf"), float("-inf"), 1234567890123456, 12345678901234567]  # fmt: skip
_tricky_scalars = (
    st.sampled_from(_TRICKY_STRINGS)
    | st.sampled_from(_TRICKY_NUMBERS)
    | st.integers()
    | st.floats()
    | st.lists(st.sampled_from([*_TRICKY_STRINGS, "a", "1", " ", ".", "e", ":", ","]), max_size=6).map("".join)
)
_tricky_values = st.recursive(
    st.none() | st.booleans() | _tricky_scalars,
    lambda children: st.lists(children, max_size=4)
    | st.tuples(children, children)
    | st.dictionaries(st.text(alphabet="0123456789ab\u2028\ud800:,.e-", max_size=4), children, max_size=4),
    max_leaves=25,
)


@settings(deadline=None)  # a shared 2-core machine: wall-clock deadlines are noise
@given(st.dictionaries(st.text(max_size=5), _tricky_values, max_size=5) | st.lists(_tricky_values, max_size=6))
def test_orjson_fast_path_matches_the_exact_writer_on_tricky_values(value: object) -> None:
    from lcm_lab.engine.js.json import _c_stringify, _write

    exact: list[str] = []
    _write(value, exact)
    fast = _c_stringify(value)  # type: ignore[arg-type]
    assert fast is None or fast == "".join(exact)
    assert js_stringify(value) == "".join(exact)


@settings(deadline=None)  # a shared 2-core machine: wall-clock deadlines are noise
@given(st.text() | st.sampled_from(_TRICKY_STRINGS))
def test_string_fast_path_matches_javascript_escaping(text: str) -> None:
    from lcm_lab.engine.js.json import _SHORT_ESCAPES

    expected = '"' + "".join(
        _SHORT_ESCAPES.get(ch) or (f"\\u{ord(ch):04x}" if ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF else ch)
        for ch in text
    ) + '"'
    from lcm_lab.engine.js.json import js_string

    assert js_string(text) == expected


def test_fast_path_is_taken_for_plain_transcript_data() -> None:
    from lcm_lab.engine.js.json import _c_stringify

    block = {"type": "toolCall", "id": "toolu_01", "name": "read", "arguments": {"path": "/a/b.ts", "limit": 20}}
    message = {"role": "assistant", "content": [block, {"type": "text", "text": "é\u2028 ok\n"}], "cost": 0.0175}
    assert _c_stringify(message) == json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    for refused in ({"a": 1.0}, {"a": 1e21}, {"a": 2**60}, {"10": 1}, {"a": "\ud800"}, {1: 1}, {"a": UNDEFINED}):
        assert _c_stringify(refused) is None  # the exact writer decides these


# Split surrogate pairs (two code points that JSON.parse joins into one), keys JavaScript treats
# specially or that look numeric, and values whose text parses back to another type.
_ROUND_TRIP_TRAPS = [
    "\ud83d" + "\ude00", "a\udbff" + "\udfffb", "\\ud83d\\ude00", "\\\ud83d", "__proto__", "constructor",
    "-0", "1e21", "0x1", " 1", "1 ", "01", "4294967294", "4294967295",
]  # fmt: skip
_round_trip_values = st.recursive(
    st.none() | st.booleans() | _tricky_scalars | st.sampled_from(_ROUND_TRIP_TRAPS) | st.just(UNDEFINED),
    lambda children: st.lists(children, max_size=4)
    | st.tuples(children)
    | st.dictionaries(st.sampled_from(_ROUND_TRIP_TRAPS) | st.text(alphabet="0123456789ab\ud800:_", max_size=4),
                      children, max_size=4),  # fmt: skip
    max_leaves=25,
)


@settings(deadline=None)  # a shared 2-core machine: wall-clock deadlines are noise
@given(_round_trip_values)
def test_stringify_checked_says_exactly_when_parse_gives_the_value_back(value: object) -> None:
    from lcm_lab.engine.js.json import js_stringify_checked

    if value is UNDEFINED:
        with pytest.raises(ValueError):
            js_stringify_checked(value)
        return
    text, round_trips = js_stringify_checked(value)
    assert text == js_stringify(value)
    if round_trips:
        assert same_json_value(js_parse(text), value)


def test_stringify_checked_refuses_values_parse_would_change() -> None:
    from lcm_lab.engine.js.json import js_stringify_checked

    for value in ({"a": 1.0}, {"a": -0.0}, [float("nan")], [2**53 + 1], {"10": 1}, {"1a": 1}, ("x",), [("x",)],
                  {"a": UNDEFINED}, ["\ud83d" + "\ude00"], {"\ud83d" + "\ude00": 1}):  # fmt: skip
        text, round_trips = js_stringify_checked(value)
        assert text == js_stringify(value)
        assert not round_trips
    for value in ({"a": [1, None, True, "é\u2028", "\ud800"], "__proto__": {}}, [], {}, "😀", "\ud800x", 2**53, None):
        text, round_trips = js_stringify_checked(value)
        assert round_trips and same_json_value(js_parse(text), value)


@pytest.mark.parametrize(
    "text", ['{"b":1,"2":[1.5,"x"]}', '{"\\u0062":1}', "[1e400]", '"NaN"', "null", '{"a" : 1, "10" : 2}']
)
def test_strict_parse_is_js_parse_for_json(text: str) -> None:
    from lcm_lab.engine.js.values import strict_json_parse

    assert strict_json_parse(text) == js_parse(text)
    assert list(js_stringify(strict_json_parse(text))) == list(js_stringify(js_parse(text)))


@pytest.mark.parametrize("text", ["[NaN]", '{"a":Infinity}', '{"\\u0031":-Infinity}', '{"1" : NaN}', "{", ""])
def test_strict_parse_refuses_what_json_parse_refuses(text: str) -> None:
    from lcm_lab.engine.js.values import strict_json_parse

    with pytest.raises(ValueError):
        strict_json_parse(text)
