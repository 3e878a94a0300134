"""`recovery-proxy demo`: scripted agent sessions through the real HTTP path, offline.

A mock model and the proxy run on free loopback ports; tiny scripted agents run tools against
a canned file tree, and the demo prints what the agent sent next to what the model received: a
Chat Completions walkthrough (repeats, a loop, compaction, then a model that acts on the
failure summary), then short runs in the other formats: OpenAI Responses (Codex's exec
output), Anthropic Messages (Claude Code's `is_error` results) and Gemini generateContent
(Gemini CLI's `functionResponse` errors). This module starts the two servers and runs the
plays: the script is `recovery_proxy.demo.scenario`, the plays are `recovery_proxy.demo.plays`.
"""

from __future__ import annotations

import httpx

from recovery_proxy.config import Settings
from recovery_proxy.demo.mock_model import create_mock_app
from recovery_proxy.demo.plays import FORMATS, play_chat, play_gemini, play_messages, play_responses
from recovery_proxy.demo.scenario import GEMINI_SCRIPT, MESSAGES_SCRIPT, RESPONSES_SCRIPT, SCRIPT
from recovery_proxy.demo.show import Mode, Show
from recovery_proxy.server.app import create_app
from recovery_proxy.server.background import BackgroundServer

LEGEND = (
    "legend: agent -> recovery-proxy -> mock model, all on loopback (nothing leaves this host);\n"
    "        'as the model received it' is the agent's text plus what the proxy spliced in."
)


def run_demo(formats: tuple[str, ...] = FORMATS, mode: Mode = "text") -> int:
    """Run the scripted sessions of `formats` (all four by default); returns the exit code."""
    show = Show(mode)
    show.say(LEGEND)
    scripts = {"responses": RESPONSES_SCRIPT, "messages": MESSAGES_SCRIPT, "gemini": GEMINI_SCRIPT}
    model = create_mock_app(SCRIPT, by_request=True, scripts=scripts)
    with BackgroundServer(model) as upstream:
        settings = Settings(
            upstream=f"{upstream.url}/v1",
            anthropic_upstream=upstream.url,
            gemini_upstream=upstream.url,
            store="memory",
            hot_reload=False,
        )
        with BackgroundServer(create_app(settings)) as proxy:
            show.say(f"mock model on {upstream.url}, recovery-proxy on {proxy.url}")
            headers = {"Authorization": "Bearer sk-demo"}
            with httpx.Client(base_url=proxy.url, headers=headers, timeout=30) as client:
                for fmt in formats:
                    if fmt == "chat":
                        play_chat(proxy.url, model, show)
                    elif fmt == "responses":
                        play_responses(client, model, show)
                    elif fmt == "messages":
                        play_messages(client, model, show)
                    else:
                        play_gemini(proxy.url, model, show)
    show.finish()
    return 0
