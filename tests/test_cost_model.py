"""The provider prompt-cache model: rules, prices, calibration (lcm_lab.cost)."""

from __future__ import annotations

import pytest

from lcm_lab.cost.cache import CacheRules, Prompt, PromptCache
from lcm_lab.cost.calibrate import calibration_window, fit_calibration
from lcm_lab.cost.litellm_prices import load_prices
from lcm_lab.cost.model import Calibration, Request, simulate
from lcm_lab.cost.prices import Prices, UnknownModelError, prices_from_cost_map
from lcm_lab.cost.serialise import BlockCache

OPUS = Prices("claude-opus-4-5", "anthropic", input=5e-06, output=2.5e-05, cache_read=5e-07, cache_write=6.25e-06)


def _prompt(t: float, sizes: list[int], keys: str, bps: tuple[int, ...] | None = None) -> Prompt:
    digests = tuple(keys[: i + 1].encode() for i in range(len(sizes)))
    return Prompt(t, tuple(sizes), digests, breakpoints=bps if bps is not None else (0, len(sizes) - 1))


def test_anthropic_reads_the_cached_prefix_writes_the_rest_and_expires_after_the_ttl() -> None:
    cache = PromptCache(CacheRules("anthropic", ttl_s=300, min_tokens=1024))
    assert cache.call(_prompt(0, [1200, 800], "ab")).write == 2000
    warm = cache.call(_prompt(299_000, [1200, 800, 500], "abc"))
    assert (warm.read, warm.write, warm.uncached) == (2000, 500, 0)
    # the read at 299 s refreshed the entry: 500 s later it is still warm only for 300 s after that
    assert cache.call(_prompt(598_000, [1200, 800, 500], "abc")).read == 2500
    cold = cache.call(_prompt(598_000 + 301_000, [1200, 800, 500], "abc"))
    assert (cold.read, cold.write) == (0, 2500)
    assert cold.gap_s == pytest.approx(301)


def test_anthropic_minimum_length_and_lookback_window() -> None:
    short = PromptCache(CacheRules("anthropic", min_tokens=4096))
    first = short.call(_prompt(0, [800, 2000], "ab"))
    assert (first.write, first.uncached) == (0, 2800)  # below the minimum: nothing is cached
    # a breakpoint finds a cached prefix at most `lookback_blocks` boundaries back
    cache = PromptCache(CacheRules("anthropic", min_tokens=10, lookback_blocks=3))
    cache.call(_prompt(0, [100, 100], "ab"))
    near = cache.call(_prompt(1000, [100, 100, 1, 1], "abcd"))
    assert near.read == 200
    cache2 = PromptCache(CacheRules("anthropic", min_tokens=10, lookback_blocks=3))
    cache2.call(_prompt(0, [100, 100], "ab", bps=(1,)))
    far = cache2.call(_prompt(1000, [100, 100, 1, 1, 1, 1], "abcdef", bps=(5,)))
    assert far.read == 0


def test_parallel_sub_agents_cannot_read_an_entry_whose_writer_has_not_started_answering() -> None:
    # Recorded in the bundled Claude Code session: two sub-agents launched 0.13 s and 0.19 s after a
    # third both re-wrote the shared system prompt; one launched later read it.
    cache = PromptCache(CacheRules("anthropic", min_tokens=1024))
    system = lambda t, chain: Prompt(t, (11_000,), (b"s",), breakpoints=(0,), chain=chain)  # noqa: E731
    assert cache.call(system(0, "a")).write == 11_000
    assert cache.call(system(130, "b")).read == 0  # in flight: not readable by another chain yet
    assert cache.call(system(190, "c")).read == 0
    assert cache.call(system(300, "a")).read == 11_000  # the writer's own chain reads it
    assert cache.call(system(1_500, "d")).read == 11_000  # a second later every chain does


def test_openai_caches_automatically_in_128_token_steps_from_1024_and_writes_free() -> None:
    cache = PromptCache(CacheRules("openai"))
    assert cache.call(_prompt(0, [1000, 500], "ab")) .write == 0
    second = cache.call(_prompt(1000, [1000, 500, 300], "abc"))
    assert second.read == 1024 + 3 * 128  # 1500 shared tokens round down to 1408
    assert PromptCache(CacheRules("openai")).call(_prompt(0, [900], "a")).read == 0


def test_prices_come_from_the_offline_cost_map_and_unknown_models_are_errors() -> None:
    opus = load_prices("claude-opus-4-5")
    assert opus.provider == "anthropic"
    assert opus.cache_read == pytest.approx(opus.input * 0.1)
    assert opus.cache_write == pytest.approx(opus.input * 1.25)
    assert opus.cache_write_1h == pytest.approx(opus.input * 2)
    # the recorded pi session's own dollars: 33,637 written tokens cost $0.21023125
    assert opus.dollars(write=33_637, uncached=1, output=114) == pytest.approx(0.21023125 + 5e-06 + 0.00285)
    gpt = load_prices("gpt-4o")
    assert gpt.provider == "openai" and gpt.cache_write is None
    with pytest.raises(UnknownModelError, match="no-such-model.*Pass prices explicitly"):
        load_prices("no-such-model")
    with pytest.raises(UnknownModelError):
        prices_from_cost_map("m", {"m": {"litellm_provider": "x"}})


def test_calibration_recovers_system_size_and_ratio_per_agent() -> None:
    points = [(e, "main", 900 + round(1.3 * e)) for e in (1000, 5000, 20000)]
    points += [(e, "sidechain", 400 + round(1.3 * e)) for e in (2000, 9000)]
    cal = fit_calibration(points)
    assert cal.ratio == pytest.approx(1.3, abs=1e-3)
    assert cal.system_tokens["main"] == pytest.approx(900, abs=2)
    assert cal.system_tokens["sidechain"] == pytest.approx(400, abs=2)
    assert calibration_window(453) == 46
    with pytest.raises(ValueError, match="nothing to calibrate"):
        fit_calibration([])
    with pytest.raises(KeyError, match="ghost"):
        Calibration({"main": 1.0}, 1.0).system("ghost")


def _text(n: int, fill: str = "x") -> dict[str, object]:
    return {"role": "user", "content": fill * n}


def test_simulate_prices_a_compaction_as_a_full_rewrite_and_keeps_a_stable_prefix_cached() -> None:
    cal = Calibration({"main": 5000.0}, ratio=1.0)
    history = [_text(8000, "a"), _text(4000, "b")]
    summary = [_text(400, "s")]
    reqs = [
        Request(0, tuple(history[:1])),
        Request(10_000, tuple(history)),
        Request(20_000, tuple(summary), compacted=True),
    ]
    calls = simulate(reqs, cal, OPUS)
    assert [c.read for c in calls] == [0, 7000, 5000]  # the long system prompt stays cached on its own breakpoint
    assert calls[2].break_reason == "lcm compaction" and calls[2].lost_tokens == 3000
    assert calls[1].dollars == pytest.approx(OPUS.dollars(read=7000, write=1000))
    # a thinking-level change invalidates the message prefix but not the (long) system prompt
    after = simulate([Request(0, tuple(history)), Request(1000, tuple(history), settings="1")], cal, OPUS)
    assert after[1].read == 5000 and after[1].break_reason == "settings change"


def test_block_cache_drops_earlier_turns_thinking_only_when_asked() -> None:
    assistant = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm " * 50}, {"type": "text", "text": "ok"}]}
    messages = [_text(10), assistant, _text(10, "y")]
    blocks = BlockCache()
    assert len(blocks.request(messages)) == 4
    assert len(blocks.request(messages, strip_old_thinking=True)) == 3


def test_the_cache_model_core_imports_neither_litellm_nor_duckdb() -> None:
    import subprocess
    import sys

    code = (
        "import sys, lcm_lab.cost.cache, lcm_lab.cost.model, lcm_lab.cost.serialise, lcm_lab.cost.prices, "
        "lcm_lab.cost.calibrate, lcm_lab.cost.validate, lcm_lab.cost.replay_cost, lcm_lab.host.recorded; "
        "print(sorted(m for m in ('litellm', 'duckdb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
