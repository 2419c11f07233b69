"""Figures in the report: plotly.js once, gzip-compressed, and every figure drawn when it is seen.

plotly.js is most of a self-contained page (4.8 MB of 6.1 MB in the demo report). It is
embedded gzip-compressed and base64-encoded (1.96 MB) and unpacked by the browser's own
``DecompressionStream`` (no network, no library). Each figure is a ``<div>`` plus its figure
JSON in a ``<script type="application/json">``; :data:`LOADER` draws a figure the first time it
is visible — so a figure inside a closed ``<details>`` is drawn at the width it is shown at,
never at the zero width of a hidden box — and redraws nothing else.
"""

from __future__ import annotations

import base64
import functools
import gzip
import itertools
import json
from typing import TYPE_CHECKING

from markupsafe import Markup

if TYPE_CHECKING:
    import plotly.graph_objects as go

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
_IDS = itertools.count(1)


@functools.lru_cache(maxsize=1)
def plotly_js_gzip_base64() -> str:
    """plotly.js as shipped with the plotly package, gzip-compressed and base64-encoded."""
    import plotly.offline

    return base64.b64encode(gzip.compress(plotly.offline.get_plotlyjs().encode("utf-8"), 9, mtime=0)).decode("ascii")


def figure_html(fig: go.Figure) -> Markup:
    """A figure's placeholder and data: drawn by :data:`LOADER` once visible."""
    fid = f"lcm-fig-{next(_IDS)}"
    # JSON inside <script> must not close the element or open a comment
    data = fig.to_json().replace("</", "<\\/").replace("<!--", "<\\!--")
    height = int(fig.layout.height or 450)
    return Markup(f'<div class="plotly-graph-div lcm-figure" id="{fid}" style="height:{height}px; width:100%"></div>'
                  f'<script type="application/json" class="lcm-figure-data" data-for="{fid}">{data}</script>')


# Our own loader: unpack plotly.js, then draw each visible figure (again whenever a <details> opens).
LOADER = """
(function () {
  var config = __CONFIG__;
  function visible(el) { return el.getClientRects().length > 0; }
  function draw() {
    document.querySelectorAll('script.lcm-figure-data').forEach(function (node) {
      var div = document.getElementById(node.dataset.for);
      if (!div || div.dataset.drawn || !visible(div)) return;
      div.dataset.drawn = '1';
      var spec = JSON.parse(node.textContent);
      window.Plotly.newPlot(div, spec.data, spec.layout, config);
    });
  }
  async function load() {
    var text = document.getElementById('plotly-js-gzip').textContent.trim();
    var bytes = Uint8Array.from(atob(text), function (c) { return c.charCodeAt(0); });
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    var code = await new Response(stream).text();
    var script = document.createElement('script');
    script.textContent = code;
    document.head.appendChild(script);
    document.addEventListener('toggle', draw, true);
    draw();
    document.body.dataset.figuresReady = '1';
  }
  load();
})();
""".replace("__CONFIG__", json.dumps(PLOTLY_CONFIG))


_DATA_KEYS = ("x", "y", "z", "values", "lat", "lon", "r", "dimensions", "cells", "header", "ids", "labels", "node", "link")


def _has_values(value: object) -> bool:
    if isinstance(value, dict):
        return bool(value.get("bdata")) or any(_has_values(v) for k, v in value.items() if k not in ("dtype", "shape"))
    if isinstance(value, list | tuple):
        return any(v is not None for v in value)
    return False


def figure_has_data(spec: dict[str, object]) -> bool:
    """Whether a plotly figure (its JSON dict) draws anything: some trace with values (plain lists
    or plotly's base64 typed arrays), or shapes/images standing in for data."""
    traces = spec.get("data") or []
    assert isinstance(traces, list)
    return any(isinstance(t, dict) and any(_has_values(t.get(k)) for k in _DATA_KEYS) for t in traces)


def figure_specs(page: str) -> list[dict[str, object]]:
    """The figure JSON of every figure in a report page (for checks without a browser)."""
    import re

    pattern = r'<script type="application/json" class="lcm-figure-data" data-for="[^"]+">(.*?)</script>'
    return [json.loads(m.replace("<\\/", "</").replace("<\\!--", "<!--")) for m in re.findall(pattern, page, re.S)]


def figures_page(specs: list[dict[str, object]], title: str = "figures") -> str:
    """A self-contained page drawing figure JSON dicts (e.g. a notebook's plotly outputs), one under
    another at the report's width, for the same browser checks as the report."""
    import html

    import plotly.graph_objects as go

    body = "".join(f"<div>{figure_html(go.Figure(spec))}</div>" for spec in specs)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<script type="application/gzip-base64" id="plotly-js-gzip">{plotly_js_gzip_base64()}</script></head>'
            f'<body style="max-width:1280px; margin:0 auto; padding:1rem 2rem">{body}<script>{LOADER}</script></body></html>')
