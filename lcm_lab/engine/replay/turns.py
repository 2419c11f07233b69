"""The reference protocol's turn split (reference-runs README §1.1).

A transcript is replayed turn by turn. A new turn starts at every message entry whose
``message["role"] == "user"``; every following entry (assistant, toolResult, non-message
entries such as ``model_change`` or ``compaction``) belongs to the current turn until the next
user message. Entries before the first message are preamble (no turn); leading non-user
messages form turn 0 on their own. A turn's lines run from its first entry's line to the line
before the next turn starts, or to the last line of the file for the last turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

from lcm_lab.engine.types import InputEntry
from lcm_lab.errors import OptionError


@dataclass(frozen=True)
class Turn:
    """One turn: its entries (all types) and where it sits in the file."""

    index: int
    first_line: int
    last_line: int
    entries: tuple[InputEntry, ...]

    @property
    def lines(self) -> tuple[int, int]:
        """``(first_line, last_line)``, 1-based, inclusive (as ``turns[k].lines`` in traces)."""
        return (self.first_line, self.last_line)

    @property
    def messages(self) -> tuple[Mapping[str, Any], ...]:
        """The runtime message dicts of the turn's message entries, in order (all roles)."""
        return tuple(entry.message for entry in self.entries if entry.message is not None)


def check_turn(turn: Any, count: int, name: str = "turn") -> int:
    """``turn`` as an index from 0 into a run's ``count`` turns (negative counts from the end), or
    an :class:`~lcm_lab.errors.OptionError` naming ``name`` and the turns that exist.

    >>> check_turn(-1, 3)
    2
    >>> check_turn(True, 3)
    Traceback (most recent call last):
    lcm_lab.errors.OptionError: turn=True: the replay has 3 turn(s); turns that exist: 0 to 2, or -1 to -3 from the end
    """
    if isinstance(turn, bool) or not isinstance(turn, Integral) or not -count <= int(turn) < count:
        which = f"0 to {count - 1}, or -1 to -{count} from the end" if count else "none"
        raise OptionError(f"{name}={turn!r}: the replay has {count} turn(s); turns that exist: {which}")
    return int(turn) % count


def _is_user_message(entry: InputEntry) -> bool:
    return entry.message is not None and entry.message.get("role") == "user"


def split_turns(entries: Sequence[InputEntry], last_line: int | None = None) -> list[Turn]:
    """Split leaf-path entries into turns by the reference protocol's rule.

    ``last_line`` is the file's last line (``Conversation.meta["last_line"]`` from the
    readers); it closes the last turn and defaults to the last entry's line. When entries are
    not in increasing line order (a branched file's leaf path), a turn ends at its own last
    entry instead of running up to the next turn's first line.

    >>> from lcm_lab.engine.types import InputEntry as E
    >>> rows = [E(2, "model_change"), E(3, "message", {"role": "user"}), E(4, "message", {"role": "assistant"}),
    ...         E(5, "message", {"role": "user"})]
    >>> [(t.index, t.lines, len(t.messages)) for t in split_turns(rows)]
    [(0, (3, 4), 2), (1, (5, 5), 1)]
    """
    groups: list[list[InputEntry]] = []
    current: list[InputEntry] | None = None
    for entry in entries:
        if current is None:
            if entry.message is None:
                continue  # preamble
            current = [entry]
            groups.append(current)
        elif _is_user_message(entry):
            current = [entry]
            groups.append(current)
        else:
            current.append(entry)

    turns: list[Turn] = []
    for index, group in enumerate(groups):
        own_last = max(entry.line for entry in group)
        if index + 1 < len(groups):
            next_first = groups[index + 1][0].line
            end = next_first - 1 if next_first > own_last else own_last
        else:
            end = max(own_last, last_line) if last_line is not None else own_last
        turns.append(Turn(index, group[0].line, end, tuple(group)))
    return turns
