"""PackedStrings, the id column of re-read entries: every value comes back as it went in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lcm_lab.io.transcripts.reread import PackedStrings

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
