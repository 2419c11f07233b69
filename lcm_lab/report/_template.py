"""The report's page template (Jinja2, autoescaped: every string from data is HTML-escaped)."""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="lcm_lab {{ version }}">
<title>{{ title }}</title>
<style>
  body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1280px;
         padding: 1rem 2rem 4rem; color: #222; }
  h1 { margin-bottom: .2rem; } h2 { border-bottom: 2px solid #ddd; padding-bottom: .2rem; margin-top: 2.5rem; }
  .meta { color: #666; margin-top: 0; }
  table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .88rem; }
  th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
  th { background: #f5f5f5; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
  td.text { max-width: 60rem; white-space: pre-wrap; word-break: break-word; }
  nav a { margin-right: 1rem; } details { margin: .5rem 0; } summary { cursor: pointer; }
  .note { color: #666; font-size: .85rem; }
  .scroll { overflow-x: auto; max-width: 100%; }
  details.section { border-top: 2px solid #ddd; margin-top: 1.2rem; padding-top: .3rem; }
  details.section > summary { font-size: 1.25rem; font-weight: 600; padding: .3rem 0; }
  details.section > summary .note { font-weight: normal; font-size: .85rem; }
  li.verdict { margin: .25rem 0; } li.better, li.worse { font-weight: 600; }
</style>
<script type="application/gzip-base64" id="plotly-js-gzip">{{ plotly_js_gzip }}</script>
</head>
<body>
<header>
  <h1>{{ title }}</h1>
  <p class="meta">{{ runs|length }} run{{ "s" if runs|length != 1 }} · generated {{ generated }} by lcm_lab {{ version }} · terms: <a href="#glossary">glossary</a></p>
</header>

{% if verdicts %}
<section id="verdict">
  <h2>Verdict</h2>
  {% for group, found in verdicts %}
  <h3>{{ group }}</h3>
  {% if found %}<ul>{% for v in found %}<li class="verdict {{ v.outcome|replace(' ', '-') }}">{{ v.text }}</li>{% endfor %}</ul>
  {% else %}<p class="note">No headline both settings carry, so no verdict.</p>{% endif %}
  {% endfor %}
  <p class="note">{% for line in meanings %}{{ line }}. {% endfor %}</p>
</section>
{% endif %}

{% if scores and scores.headlines %}
<section id="headlines">
  <h2>Headlines</h2>
  <p class="note">Normalised between floor (0: plain truncation to the budget) and ceiling (1: the most a strategy can reach,
  see the <a href="#glossary">glossary</a>), read over probes across the conversation's life, with a 95% interval over the
  resampling unit (n, unit), clipped to the values the measure can take; chance = the same measure over another
  conversation's text. Offline QA numbers are a proxy for judged accuracy.</p>
  <div class="scroll"><table>
    <thead><tr>{% for c in scores.headline_columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in scores.headlines %}<tr>{% for v in row %}<td{% if 2 < loop.index < loop.length %} class="num"{% endif %}>{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table></div>
</section>
{% endif %}

{% if runs|length == 1 and not verdicts %}
<section id="summary">
  <h2>{{ runs[0].label }}</h2>
  <p class="meta">session {{ runs[0].session }} · lossless-claw {{ runs[0].engine }} · summarizer {{ runs[0].summarizer }} · budget {{ "{:,}".format(runs[0].token_budget) }} tokens</p>
  {{ runs[0].budget_figure }}
</section>
{% endif %}

{% if scores and scores.figure %}
<details class="section" id="headline-chart"><summary>Headlines as a chart</summary>
  {{ scores.figure }}
</details>
{% endif %}

{% if comparison %}
<details class="section" id="comparison"><summary>Runs side by side <span class="note">(counts, tokens per turn)</span></summary>
  <div class="scroll"><table>
    <thead><tr><th></th>{% for run in runs %}<th>{{ run.label }}</th>{% endfor %}</tr></thead>
    <tbody>
    {% for name, values in comparison.rows %}
      <tr><th>{{ name }}</th>{% for v in values %}<td class="num">{{ v }}</td>{% endfor %}</tr>
    {% endfor %}
    </tbody>
  </table></div>
  {{ comparison.budget_figure }}
  {{ comparison.bars_figure }}
</details>
{% endif %}

{% if strategies %}
<details class="section" id="strategies"><summary>Context strategies</summary>
  <p class="note">Every strategy scored by the same verdicts (lcm_lab.metrics.verdicts): retention = (recall − floor) / (ceiling − floor) over probes across the conversation's life, with a 95% bootstrap interval; floor = plain truncation to the budget, ceiling and chance as in the <a href="#glossary">glossary</a> (docs/strategies.md).</p>
  <div class="scroll"><table>
    <thead><tr>{% for c in strategies.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in strategies.rows %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table></div>
  {% for figure in strategies.figures %}{{ figure }}{% endfor %}
</details>
{% endif %}

{% if sweep %}
<details class="section" id="sweep" open><summary>Sweep {{ sweep.name }} ({{ sweep.sweep_id }}, {{ sweep.status }})</summary>
  <p class="note">{{ sweep.stats.get("runs_ok", 0) }} runs ok, {{ sweep.stats.get("runs_failed", 0) }} failed;
  summarizer requests: {{ sweep.stats.get("calls_made", 0) }} sent to a model of {{ sweep.stats.get("naive_calls", 0) }} a naive sweep sends.
  Recommended: {{ sweep.chosen }}.</p>
  {% if sweep.cost %}<p><strong>What it costs.</strong> {{ sweep.cost }}</p>{% endif %}
  {% if sweep.transfer %}<p><strong>Does it transfer?</strong> {{ sweep.transfer }}</p>{% endif %}
  <div class="scroll"><table>
    <thead><tr>{% for c in sweep.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in sweep.rows %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table></div>
  {% if sweep.figure %}{{ sweep.figure }}{% endif %}
  <pre>{{ sweep.snippet }}</pre>
</details>
{% endif %}

{% if upgrade %}
<details class="section" id="upgrade" open><summary>Upgrading lossless-claw: {{ upgrade.versions }} <span class="note">({{ upgrade.title }})</span></summary>
  <p class="note">The same conversation and settings replayed under each version (summarizer {{ upgrade.summarizer }}).
  Headlines are probes over the conversation's life (0 = truncation floor, 1 = ceiling); the difference is paired over the same probes.</p>
  {% for line in upgrade.verdict %}<p>{{ line }}</p>{% endfor %}
  <div class="scroll"><table>
    <thead><tr><th></th>{% for e in upgrade.engines %}<th>{{ e }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in upgrade.totals %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table></div>
  <div class="scroll"><table>
    <thead><tr>{% for c in upgrade.headline_columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in upgrade.headlines %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table></div>
  {{ upgrade.figure }}
</details>
{% endif %}

{% if cost %}
<details class="section" id="cost"><summary>What it costs <span class="note">(main model {{ cost.model }})</span></summary>
  <p class="note">Priced per API call through the provider's prompt cache (docs/cost.md).
  "Rules' total" is the bill if the cache behaved exactly as documented. "Expected" adds the cache misses the rules cannot
  predict (the provider sometimes re-writes a warm cache, more often after a longer idle gap), simulated from the real
  sessions' record, with the range that holds the bill in 90% of simulations. "Saving vs first row" is {{ cost.reference }}'s
  bill minus the row's, with the same simulated misses on both sides (paired): positive means the row is cheaper, and
  "within noise" means its 90% interval includes 0.</p>
  <div class="scroll"><table>
    <thead><tr>{% for c in cost.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in cost.rows %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table></div>
  {{ cost.figure }}
  <h3>What broke the cache ({{ cost.focus }})</h3>
  <table>
    <thead><tr><th>reason</th><th>calls</th><th>tokens sent again</th><th>extra $</th></tr></thead>
    <tbody>{% for row in cost.breaks %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
</details>
{% endif %}

{% if recoverability %}
<details class="section" id="recoverability"><summary>Recoverability</summary>
  <p class="note">Of the facts and LoCoMo answers the model can no longer see after the last turn, the share that
  grep → describe → expand finds again (stopping when found), with tokens and tool calls per item. Ceiling: the item
  is in the raw history; floor 0; chance: expanding random summaries; 95% bootstrap interval over items.
  Answers by: {{ recoverability.answerers }}{% if recoverability.offline %} (the offline deterministic answerer quotes
  source passages; it is not a model){% endif %}.</p>
  <div class="scroll"><table>
    <thead><tr>{% for c in recoverability.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in recoverability.rows %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table></div>
  {{ recoverability.figure }}
</details>
{% endif %}

{% if scores and scores.metric_rows %}
<details class="section" id="scores"><summary>Every run-level score <span class="note">({{ scores.metric_rows|length }} metrics with a value)</span></summary>
  <p class="note">One row per metric; metrics with no value for any run are left out. The {{ "{:,}".format(scores.item_scores) }} per-item scores
  (per summary, turn, QA item, ...) are in the lab store: <code>lab.scores_df(store)</code>.</p>
  <div class="scroll"><table>
    <thead><tr><th>metric</th>{% for r in scores.runs %}<th>{{ r }}</th>{% endfor %}</tr></thead>
    <tbody>{% for metric, values in scores.metric_rows %}<tr><th>{{ metric }}</th>{% for v in values %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table></div>
</details>
{% endif %}

{% for run in runs %}
<details class="section" id="{{ run.anchor }}"{% if runs|length == 1 and not verdicts %} open{% endif %}><summary>{{ run.label }} <span class="note">(budget, DAG, what the model sees)</span></summary>
  <p class="meta">session {{ run.session }} · lossless-claw {{ run.engine }} · summarizer {{ run.summarizer }} · budget {{ "{:,}".format(run.token_budget) }} tokens · fidelity {{ run.fidelity }}</p>
  <table>
    <tbody>
    {% for name, value in run.stats %}<tr><th>{{ name }}</th><td class="num">{{ value }}</td></tr>{% endfor %}
    </tbody>
  </table>
  <details><summary>Configuration: {{ run.config_changes|length }} setting{{ "s" if run.config_changes|length != 1 }} differ from the plugin defaults</summary>
    <table><thead><tr><th>setting</th><th>value</th><th>default</th></tr></thead><tbody>
    {% for name, value, default in run.config_changes %}<tr><td>{{ name }}</td><td>{{ value }}</td><td>{{ default }}</td></tr>{% endfor %}
    </tbody></table>
  </details>

  {% if not (runs|length == 1 and not verdicts) %}
  <h3>Token budget, turn by turn</h3>
  {{ run.budget_figure }}
  {% endif %}

  <h3>Summary DAG</h3>
  {% if run.dag_figure %}{{ run.dag_figure }}{% else %}<p class="note">No summaries were created.</p>{% endif %}

  <h3>What the model sees after the last turn</h3>
  {{ run.context_figure }}
  <p class="note">{{ run.context_note }}</p>
  <details><summary>The {{ run.context_rows|length }} items, in order</summary>
  <div class="scroll"><table>
    <thead><tr><th>#</th><th>kind</th><th>ref</th><th>role</th><th>tokens</th><th>text</th></tr></thead>
    <tbody>
    {% for item in run.context_rows %}
      <tr><td class="num">{{ item.position }}</td><td>{{ item.kind }}</td><td>{{ item.ref }}</td><td>{{ item.role }}</td>
          <td class="num">{{ "{:,}".format(item.tokens) }}</td><td class="text">{{ item.text }}</td></tr>
    {% endfor %}
    </tbody>
  </table></div>
  </details>

  {% if run.summary_rows %}
  <details><summary>Summaries: {{ run.summary_note }}</summary>
  <div class="scroll"><table>
    <thead><tr><th>id</th><th>kind</th><th>depth</th><th>level</th><th>tokens</th><th>messages</th><th>turn</th><th>content</th></tr></thead>
    <tbody>
    {% for s in run.summary_rows %}
      <tr><td>{{ s.summary_id }}</td><td>{{ s.kind }}</td><td class="num">{{ s.depth }}</td><td>{{ s.level }}</td>
          <td class="num">{{ "{:,}".format(s.tokens) }}</td><td>{{ s.span }}</td><td class="num">{{ s.turn }}</td>
          <td class="text">{{ s.text }}</td></tr>
    {% endfor %}
    </tbody>
  </table></div>
  </details>
  {% endif %}
</details>
{% endfor %}

<details class="section" id="glossary"><summary>Glossary</summary>
  <dl>{% for term, meaning in glossary.items() %}<dt><strong>{{ term }}</strong></dt><dd>{{ meaning }}</dd>{% endfor %}</dl>
</details>
<script type="text/javascript">{{ loader }}</script>
</body>
</html>
"""
