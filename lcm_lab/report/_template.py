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
</style>
<script type="text/javascript">{{ plotly_js }}</script>
</head>
<body>
<header>
  <h1>{{ title }}</h1>
  <p class="meta">{{ runs|length }} run{{ "s" if runs|length != 1 }} · generated {{ generated }} by lcm_lab {{ version }}</p>
  {% if runs|length > 1 %}<nav>{% for run in runs %}<a href="#{{ run.anchor }}">{{ run.label }}</a>{% endfor %}</nav>{% endif %}
</header>

{% if comparison %}
<section id="comparison">
  <h2>Comparison</h2>
  <table>
    <thead><tr><th></th>{% for run in runs %}<th>{{ run.label }}</th>{% endfor %}</tr></thead>
    <tbody>
    {% for name, values in comparison.rows %}
      <tr><th>{{ name }}</th>{% for v in values %}<td class="num">{{ v }}</td>{% endfor %}</tr>
    {% endfor %}
    </tbody>
  </table>
  {{ comparison.budget_figure }}
  {{ comparison.bars_figure }}
</section>
{% endif %}

{% if strategies %}
<section id="strategies">
  <h2>Context strategies</h2>
  <p class="note">Every run scored on what the model receives at the end-of-run call. Retention = (recall − floor) / (ceiling − floor) with a 95% bootstrap interval, floor = truncation to the budget, ceiling = full history, chance = another conversation when given (docs/strategies.md).</p>
  <table>
    <thead><tr>{% for c in strategies.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in strategies.rows %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
  {% for figure in strategies.figures %}{{ figure }}{% endfor %}
</section>
{% endif %}

{% if sweep %}
<section id="sweep">
  <h2>Sweep {{ sweep.name }} ({{ sweep.sweep_id }}, {{ sweep.status }})</h2>
  <p class="note">{{ sweep.stats.get("runs_ok", 0) }} runs ok, {{ sweep.stats.get("runs_failed", 0) }} failed;
  summarizer requests: {{ sweep.stats.get("calls_made", 0) }} sent to a model of {{ sweep.stats.get("naive_calls", 0) }} a naive sweep sends.
  Recommended: {{ sweep.chosen }}.</p>
  {% if sweep.cost %}<p><strong>What it costs.</strong> {{ sweep.cost }}</p>{% endif %}
  <table>
    <thead><tr>{% for c in sweep.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in sweep.rows %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
  {% if sweep.figure %}{{ sweep.figure }}{% endif %}
  <pre>{{ sweep.snippet }}</pre>
</section>
{% endif %}

{% if upgrade %}
<section id="upgrade">
  <h2>Upgrading lossless-claw: {{ upgrade.versions }} · {{ upgrade.title }}</h2>
  <p class="note">The same conversation and settings replayed under each version (summarizer {{ upgrade.summarizer }}).
  Headlines are probes over the conversation's life (0 = truncation floor, 1 = ceiling); the difference is paired over the same probes.</p>
  {% for line in upgrade.verdict %}<p>{{ line }}</p>{% endfor %}
  <table>
    <thead><tr><th></th>{% for e in upgrade.engines %}<th>{{ e }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in upgrade.totals %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
  <table>
    <thead><tr>{% for c in upgrade.headline_columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in upgrade.headlines %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
  {{ upgrade.figure }}
</section>
{% endif %}

{% if scores %}
<section id="scores">
  <h2>Scores</h2>
  {% if scores.headlines %}
  <h3>Headlines</h3>
  <p>Normalised between floor (0) and ceiling (1), 95% interval over the resampling unit; chance = the same
  measure over another conversation's text. Offline QA numbers are a proxy for judged accuracy.</p>
  <table>
    <thead><tr>{% for c in scores.headline_columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in scores.headlines %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
  {% endif %}
  <table>
    <thead><tr>{% for c in scores.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in scores.rows %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
  {% if scores.figure %}{{ scores.figure }}{% endif %}
</section>
{% endif %}

{% if cost %}
<section id="cost">
  <h2>What it costs</h2>
  <p class="note">Main model {{ cost.model }}, priced per API call through the provider's prompt cache (docs/cost.md).
  "Rules' total" is the bill if the cache behaved exactly as documented. "Expected" adds the cache misses the rules cannot
  predict (the provider sometimes re-writes a warm cache, more often after a longer idle gap), simulated from the real
  sessions' record, with the range that holds the bill in 90% of simulations. "Saving vs first row" is {{ cost.reference }}'s
  bill minus the row's, with the same simulated misses on both sides (paired): positive means the row is cheaper, and
  "within noise" means its 90% interval includes 0.</p>
  <table>
    <thead><tr>{% for c in cost.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in cost.rows %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
  {{ cost.figure }}
  <h3>What broke the cache ({{ cost.focus }})</h3>
  <table>
    <thead><tr><th>reason</th><th>calls</th><th>tokens sent again</th><th>extra $</th></tr></thead>
    <tbody>{% for row in cost.breaks %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
</section>
{% endif %}

{% if recoverability %}
<section id="recoverability">
  <h2>Recoverability</h2>
  <p class="meta">Of the facts and LoCoMo answers the model can no longer see after the last turn, the share that
  grep → describe → expand finds again (stopping when found), with tokens and tool calls per item. Ceiling: the item
  is in the raw history; floor 0; chance: expanding random summaries; 95% bootstrap interval over items.
  Answers by: {{ recoverability.answerers }}{% if recoverability.offline %} (the offline deterministic answerer quotes
  source passages; it is not a model){% endif %}.</p>
  <table>
    <thead><tr>{% for c in recoverability.columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
    <tbody>{% for row in recoverability.rows %}<tr>{% for v in row %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
  {{ recoverability.figure }}
</section>
{% endif %}

{% for run in runs %}
<section id="{{ run.anchor }}">
  <h2>{{ run.label }}</h2>
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

  <h3>Token budget, turn by turn</h3>
  {{ run.budget_figure }}

  <h3>Summary DAG</h3>
  {% if run.dag_figure %}{{ run.dag_figure }}{% else %}<p class="note">No summaries were created.</p>{% endif %}

  <h3>What the model sees after the last turn</h3>
  {{ run.context_figure }}
  <p class="note">{{ run.context_note }}</p>
  <table>
    <thead><tr><th>#</th><th>kind</th><th>ref</th><th>role</th><th>tokens</th><th>text</th></tr></thead>
    <tbody>
    {% for item in run.context_rows %}
      <tr><td class="num">{{ item.position }}</td><td>{{ item.kind }}</td><td>{{ item.ref }}</td><td>{{ item.role }}</td>
          <td class="num">{{ "{:,}".format(item.tokens) }}</td><td class="text">{{ item.text }}</td></tr>
    {% endfor %}
    </tbody>
  </table>

  {% if run.summary_rows %}
  <h3>Summaries</h3>
  <p class="note">{{ run.summary_note }}</p>
  <table>
    <thead><tr><th>id</th><th>kind</th><th>depth</th><th>level</th><th>tokens</th><th>messages</th><th>turn</th><th>content</th></tr></thead>
    <tbody>
    {% for s in run.summary_rows %}
      <tr><td>{{ s.summary_id }}</td><td>{{ s.kind }}</td><td class="num">{{ s.depth }}</td><td>{{ s.level }}</td>
          <td class="num">{{ "{:,}".format(s.tokens) }}</td><td>{{ s.span }}</td><td class="num">{{ s.turn }}</td>
          <td class="text">{{ s.text }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  {% endif %}
</section>
{% endfor %}
</body>
</html>
"""
