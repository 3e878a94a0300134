"""Token estimates near tiktoken's o200k_base (counts measured once with it, bench/tokens.py)
and context windows from the bundled table."""

from __future__ import annotations

import pytest

from recovery_proxy import tokens

# text -> its o200k_base token count (tiktoken 0.14)
MEASURED = {
    'Traceback (most recent call last):\n  File "/srv/app/main.py", line 12, in <module>\n'
    "    from config import settings\nModuleNotFoundError: No module named 'config'\n": 41,
    "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
    "npm ERR! Found: react@18.2.0\nnpm ERR! node_modules/react\n": 40,
    "The proxy adds a short recovery block after each failed tool result, so the agent sees "
    "what went wrong and what to try next.": 26,
    '{"error": {"message": "Rate limit reached for gpt-4o-mini in organization org-abc on '
    'tokens per min (TPM): Limit 200000, Used 199812", "type": "tokens", '
    '"code": "rate_limit_exceeded"}}': 55,
    "错误：找不到配置文件。请检查路径后重试。": 14,
}


@pytest.mark.parametrize("text", MEASURED)
def test_the_estimate_is_within_ten_percent_of_o200k_base(text: str) -> None:
    assert tokens.count(text) == pytest.approx(MEASURED[text], rel=0.1)


def test_empty_text_is_no_tokens_and_any_text_at_least_one() -> None:
    assert tokens.count("") == 0
    assert tokens.count(".") == tokens.count(" ") == 1


def test_a_message_list_counts_its_texts_and_parts() -> None:
    text = next(iter(MEASURED))
    messages = [
        {"role": "user", "content": text},
        {"role": "tool", "content": [{"type": "text", "text": text}]},
        {"role": "assistant", "content": None},
    ]
    assert tokens.count_messages(messages) == 3 * 4 + 2 * tokens.count(text)


def test_context_windows_by_name_then_by_the_part_after_the_last_slash() -> None:
    assert tokens.context_window("gpt-4.1") == 1_047_576
    assert tokens.context_window("my-gateway/gpt-4.1") == 1_047_576
    assert tokens.context_window("claude-sonnet-4-5") == 200_000
    assert tokens.context_window("a-model-nobody-knows") == tokens.DEFAULT_WINDOW == 128_000
    assert tokens.context_window("gpt-4.1", 50_000) == 50_000


def test_long_runs_of_one_character_count_one_token_per_eight() -> None:
    """o200k_base merges at most ~8 repeated letters: 1,000 x "a" is 125 tokens (measured),
    where the patterns alone see one word."""
    assert tokens.count("a" * 1000) == 125
