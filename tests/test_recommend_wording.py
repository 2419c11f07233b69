"""What a user pastes and reads from a recommendation: rounded settings, and no "recommended" beside "within noise"."""

from __future__ import annotations

import pandas as pd

from lcm_lab.sweeps.recommend import Recommendation, _openclaw, _plugin_config


def _rec(warnings: list[str], params: dict[str, object]) -> Recommendation:
    plugin = _plugin_config({}, "c_1", params)
    return Recommendation("sw_1", "c_1", dict(params), _openclaw(plugin), {}, [], warnings, ["c_1"], pd.DataFrame())


def test_settings_are_rounded_for_pasting() -> None:
    plugin = _plugin_config({}, "c_1", {"contextThreshold": 0.5993780416989186, "freshTailCount": 12})
    assert plugin["contextThreshold"] == 0.599 and plugin["freshTailCount"] == 12
    text = _rec([], {"contextThreshold": 0.5993780416989186}).snippet()
    assert '"contextThreshold": 0.599' in text and "rounded to 3 significant digits" in text
    assert "0.5993780416989186" not in text.split("\n", 2)[2]  # only the measured value in the first line keeps every digit


def test_no_recommendation_is_named_beside_within_noise() -> None:
    sure = _rec([], {"freshTailCount": 8}).snippet().splitlines()[0]
    assert "recommended configuration c_1" in sure
    doubt = _rec(["fact_retention: the difference to the defaults is within noise (95% interval -0.1 .. +0.2 includes 0)"],
                 {"freshTailCount": 8}).snippet().splitlines()[0]
    assert "recommended configuration" not in doubt and "not a recommendation" in doubt
