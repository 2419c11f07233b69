"""No network but the model server the user names: ``replay --summarizer litellm --model
huggingface/… --api-base http://127.0.0.1:PORT/v1`` looked ``huggingface.co`` up 132 times in one
run (litellm fetches a ``huggingface/`` model's ``config.json`` from the hub in each call and each
price lookup, whatever its offline mode says), while every summary came from the local server.

The replay runs in a child process whose name lookups and connections are watched: any host other
than the local server's is written down and refused (``lcm_lab.summarizers.provider.import_litellm``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from faults import child_env
from test_hostile_model_calls import session

from lcm_lab.testing import FakeOpenAIServer

# The child: every getaddrinfo and connect to a host that is not this machine is recorded in the
# file argv[1] and fails; then `lcm-lab ARGS`.
WATCHED = """
import socket, sys
LOCAL = {"127.0.0.1", "localhost", "::1"}
record = open(sys.argv[1], "a", buffering=1)

def refuse(host):
    record.write(f"{host}\\n")
    raise OSError(f"the test allows no network but 127.0.0.1 (asked for {host})")

real_getaddrinfo = socket.getaddrinfo
def getaddrinfo(host, *args, **kwargs):
    if str(host) not in LOCAL:
        refuse(host)
    return real_getaddrinfo(host, *args, **kwargs)
socket.getaddrinfo = getaddrinfo

for name in ("connect", "connect_ex"):
    real = getattr(socket.socket, name)
    def watched(self, address, _real=real):
        if isinstance(address, tuple) and str(address[0]) not in LOCAL:
            refuse(address[0])
        return _real(self, address)
    setattr(socket.socket, name, watched)

from lcm_lab.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("model", [
    "huggingface/meta-llama/Llama-3.1-8B-Instruct",
    pytest.param("ollama_chat/llama3", marks=pytest.mark.slow),
    pytest.param("anthropic/claude-3-5-haiku-20241022", marks=pytest.mark.slow),
    pytest.param("gemini/gemini-1.5-flash", marks=pytest.mark.slow),
])  # fmt: skip
def test_a_replay_reaches_only_the_model_server_it_names(tmp_path: Path, model: str) -> None:
    transcript = session(tmp_path / "s.jsonl")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"freshTailCount": 2}))
    contacted = tmp_path / "contacted.txt"
    contacted.touch()
    keys = {"OPENAI_API_KEY": "sk-test-notreal1234", "HUGGINGFACE_API_KEY": "hf_notrealnotreal123",
            "ANTHROPIC_API_KEY": "sk-ant-notreal1234", "GEMINI_API_KEY": "notrealgemini1234"}
    with FakeOpenAIServer() as server:
        done = subprocess.run(
            [sys.executable, "-c", WATCHED, str(contacted), "replay", str(transcript), "--no-save", "--json",
             "--token-budget", "1200", "--config", str(config), "--summarizer", "litellm", "--model", model,
             "--api-base", server.base_url, "--cache", "off", "--max-retries", "0"],
            capture_output=True, text=True, timeout=300, env=child_env(**keys))
        answered = len(server.completion_requests)
    assert contacted.read_text() == "", done.stderr[-2000:]  # before: huggingface.co, for each call
    if model.startswith("huggingface/"):  # the fake server speaks OpenAI's protocol, as Hugging Face's router does
        assert done.returncode == 0, done.stderr[-2000:]
        assert answered > 0 and json.loads(done.stdout.splitlines()[0])["summarizer_calls"] == answered
    else:  # other protocols: the calls fail at the local server, and nothing else was asked
        assert done.returncode == 2 and "model calls failed" in done.stderr, done.stderr[-2000:]


def test_the_hub_lookup_the_lab_answers_is_still_litellms() -> None:
    """The lab replaces one private function of litellm; if litellm renames it, this says so
    (and the test above would see the hub contacted)."""
    from lcm_lab.summarizers.provider import _HUB_LOOKUP, _no_hub_lookup, import_litellm

    import_litellm()
    assert getattr(sys.modules["litellm.utils"], _HUB_LOOKUP) is _no_hub_lookup
