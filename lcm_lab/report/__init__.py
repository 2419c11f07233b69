"""Self-contained HTML reports: ``report(replays) -> str`` and ``write_report(replays_or_run_ids, path)``.

>>> import lcm_lab as lab
>>> lab.write_report(replay, "reports/run.html")  # doctest: +SKIP
PosixPath('reports/run.html')
"""

from lcm_lab.report.build import report, write_report

__all__ = ["report", "write_report"]
