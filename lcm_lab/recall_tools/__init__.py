"""Recall over replays and loaded lcm.db conversations: the plugin's grep → describe → expand_query.

>>> import lcm_lab as lab
>>> lab.recall.__name__, Recall.__name__
('recall', 'Recall')
"""

from lcm_lab.recall_tools.answer import ModelAnswerer, OfflineAnswerer, Passage
from lcm_lab.recall_tools.api import (
    ExpandResult,
    GrepMatch,
    GrepResult,
    Recall,
    index_replay,
    index_store,
    recall,
)
from lcm_lab.recall_tools.query import FullTextQueryError, parse_full_text

__all__ = [
    "ExpandResult", "FullTextQueryError", "GrepMatch", "GrepResult", "ModelAnswerer", "OfflineAnswerer", "Passage",
    "Recall", "index_replay", "index_store", "parse_full_text", "recall",
]  # fmt: skip
