"""Self-contained HTML reports: ``report(replays) -> str`` and ``write_report(replays_or_run_ids, path)``.

>>> from lcm_lab.report import write_report
>>> write_report(replay, "reports/run.html")  # doctest: +SKIP
PosixPath('reports/run.html')
"""

from lcm_lab.report.build import report, write_report

__all__ = ["report", "write_report"]
