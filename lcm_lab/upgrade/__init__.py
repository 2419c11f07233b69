"""What an upgrade of lossless-claw changes: the same conversation and settings replayed under
several engine versions, compared turn by turn and headline by headline.

>>> from lcm_lab.upgrade import compare_versions, VersionComparison
"""

from lcm_lab.upgrade._comparison import VersionComparison, compare_versions
from lcm_lab.upgrade._render import comparison_markdown

__all__ = ["VersionComparison", "comparison_markdown", "compare_versions"]
