"""PackedStrings, the id column of re-read entries: every value comes back as it went in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lcm_lab.io.transcripts.packed import PackedStrings

# Any str JSON can hold, lone surrogates included (JSON allows "\ud800").
_VALUES = st.lists(st.one_of(st.none(), st.text(st.characters(codec=None, min_codepoint=0)), st.just("\ud800x")), max_size=30)


@given(_VALUES)
def test_every_value_comes_back(values: list[str | None]) -> None:
    packed = PackedStrings(values)
    assert len(packed) == len(values)
    assert [packed[i] for i in range(len(values))] == values


@given(_VALUES, st.integers(-35, 35), st.integers(-35, 35), st.sampled_from([None, 1, 2, -1, 3]))
def test_a_part_is_the_slice_of_the_values(values: list[str | None], start: int, stop: int, step: int | None) -> None:
    part = PackedStrings(values).part(slice(start, stop, step))
    assert [part[i] for i in range(len(part))] == values[start:stop:step]


def test_empty_strings_and_none_are_different() -> None:
    packed = PackedStrings(["", None, ""])
    assert [packed[0], packed[1], packed[2]] == ["", None, ""]


@given(_VALUES, _VALUES, st.integers(0, 30), st.integers(0, 30), st.integers(0, 30), st.sampled_from([1, 2, 3, 7, 1 << 20]))
def test_a_run_is_the_same_exactly_when_its_values_are(one: list[str | None], other: list[str | None],
                                                        start: int, other_start: int, count: int, chunk: int) -> None:  # fmt: skip
    # Compared as buffers, a chunk at a time: values that split the same bytes differently ("ab",
    # "" against "a", "b") or a None against "" must not pass for equal.
    count = max(0, min(count, len(one) - start, len(other) - other_start))
    expected = one[start : start + count] == other[other_start : other_start + count]
    assert PackedStrings(one).same_run(start, PackedStrings(other), other_start, count, chunk=chunk) == expected


def test_the_same_bytes_split_differently_are_different_runs() -> None:
    assert not PackedStrings(["ab", ""]).same_run(0, PackedStrings(["a", "b"]), 0, 2)
    assert not PackedStrings([None, "x"]).same_run(0, PackedStrings(["", "x"]), 0, 2)
    assert PackedStrings(["q", "ab", "c"]).same_run(1, PackedStrings(["ab", "c"]), 0, 2)
