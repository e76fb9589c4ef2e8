"""Kept sessions through the SDK: turns continue one conversation on the
shards (the second prefills only its new tokens), the listing shows it,
closing frees it, and the errors are typed."""
import pytest

from conftest import run, submit_lines, text_of

from troupe_client import SessionBusyError, SessionExistsError, UnknownSessionError


def test_two_turns_reuse_the_cache_and_equal_the_cli_session(cluster, client):
    turns = ["What is the capital of France?", "And of Germany?"]
    with client.session(max_length=512) as s:
        first = s.chat(turns[0], max_tokens=16)
        second = s.chat(turns[1], max_tokens=16)
        listed = {k.name: k for k in client.sessions()}
        assert s.name in listed
        kept = listed[s.name]
        assert kept.jobs == 2 and kept.max_length == 512 and kept.running_job is None
        assert kept.context_tokens == second.usage.prompt_tokens + len(second.tokens) + (1 if second.finish_reason == "eos" else 0)
    assert s.name not in {k.name for k in client.sessions()}  # closed on leaving the block
    # Everything the first turn fed the model is reused by the second.
    assert second.usage.cached_tokens > 0
    assert second.usage.cached_tokens >= first.usage.prompt_tokens
    # The same conversation through `troupe submit --session` gives the same answers.
    a = submit_lines(cluster, turns[0], "--chat", "--max-tokens", "16", "--session", "cli-twin", "--keep",
                     "--max-length", "512")
    b = submit_lines(cluster, turns[1], "--chat", "--max-tokens", "16", "--session", "cli-twin")
    assert (first.text, second.text) == (text_of(a), text_of(b))
    assert b[-1]["cached_tokens"] == second.usage.cached_tokens
    assert run("session", "close", "--endpoint", cluster.endpoint, "cli-twin").returncode == 0


def test_session_errors_are_typed(cluster, client):
    with pytest.raises(UnknownSessionError, match="no kept session 'nobody-opened-me'"):
        with client.session("nobody-opened-me", resume=True) as s:
            s.chat("Hi", max_tokens=2)
    with client.session("sdk-dup") as s:
        s.generate("Hello", max_tokens=2)
        with pytest.raises(SessionExistsError):
            with client.session("sdk-dup") as twin:  # opening a live name
                twin.generate("Hello", max_tokens=2)
        assert not twin.opened  # refused: closing it does not close the live one
        assert "sdk-dup" in {k.name for k in client.sessions()}
        # One job at a time: a second job while a long one runs.
        long = s.stream(" one two three", max_tokens=200, min_tokens=200)
        next(long)
        with pytest.raises(SessionBusyError):
            client.generate(" four", session="sdk-dup", max_tokens=2)
        long.collect()
        # Resumed by name from another handle, the conversation goes on.
        with client.session("sdk-dup", resume=True) as again:
            more = again.generate(" five", max_tokens=2)
            assert more.usage.cached_tokens > 0
    assert "sdk-dup" not in {k.name for k in client.sessions()}
    with pytest.raises(UnknownSessionError):
        client.close_session("sdk-dup")


def test_a_full_session_is_session_full_error(client):
    from troupe_client import SessionFullError

    with client.session(max_length=48) as s:
        first = s.generate("Once upon a time there was", max_tokens=8)
        assert first.usage.prompt_tokens + len(first.tokens) <= 48
        with pytest.raises(SessionFullError) as e:
            s.generate(" and then" * 20, max_tokens=4)  # a prompt longer than the room left
        assert e.value.code == "SESSION_FULL"
        # A job that fails leaves the conversation as it was: a short one still fits.
        assert s.generate(" and", max_tokens=2).usage.cached_tokens > 0
