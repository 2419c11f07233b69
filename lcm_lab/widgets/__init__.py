"""Interactive notebook controls over the engine and the plots (no logic of their own).

>>> from lcm_lab.widgets import CostExplorer, DagExplorer, ReplayScrubber, ParameterPlayground, SummaryDiff  # doctest: +SKIP
"""

from lcm_lab.widgets.cost import CostExplorer
from lcm_lab.widgets.dag_explorer import DagExplorer
from lcm_lab.widgets.playground import KNOBS, ParameterPlayground
from lcm_lab.widgets.scrubber import ReplayScrubber
from lcm_lab.widgets.strategies import StrategyComparison
from lcm_lab.widgets.summary_diff import SummaryDiff

__all__ = ["KNOBS", "CostExplorer", "DagExplorer", "ParameterPlayground", "ReplayScrubber", "StrategyComparison", "SummaryDiff"]
