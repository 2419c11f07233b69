"""Interactive notebook controls over the engine and the plots (no logic of their own).

>>> from lcm_lab.widgets import CostExplorer, DagExplorer, ReplayScrubber, ParameterPlayground, SummaryDiff  # doctest: +SKIP
"""

from lcm_lab.errors import require_extra

require_extra("ipywidgets", "widgets", "the notebook widgets (lab.widgets)")
require_extra("anywidget", "widgets", "the notebook widgets (lab.widgets)")

from lcm_lab.widgets.cost import CostExplorer  # noqa: E402  (after the clear error for a missing extra)
from lcm_lab.widgets.dag_explorer import DagExplorer  # noqa: E402
from lcm_lab.widgets.playground import KNOBS, ParameterPlayground  # noqa: E402
from lcm_lab.widgets.scrubber import ReplayScrubber  # noqa: E402
from lcm_lab.widgets.strategies import StrategyComparison  # noqa: E402
from lcm_lab.widgets.summary_diff import SummaryDiff  # noqa: E402

__all__ = ["KNOBS", "CostExplorer", "DagExplorer", "ParameterPlayground", "ReplayScrubber", "StrategyComparison", "SummaryDiff"]
