"""Credentials stay out of every message, repr and log line.

Each test provokes a real failure (a real server refusing, a closed port, a name that does not
resolve) with credentials in the connection settings, then checks the failed result's message,
the exception, ``repr()`` and every log record at debug level for them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import quote, urlsplit

import pytest

from cogitator_memory import InvalidArgumentError, MongoDBAdapter, PostgresAdapter, RedisAdapter
from cogitator_memory.testing import service_url

SECRET = "hunter2secret"


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG, logger="cogitator_memory"):
        yield caplog


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    handler = logging.Formatter()
    return "\n".join(handler.format(record) for record in caplog.records)


def _assert_hidden(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text, f"{secret!r} shows in: {text}"


def _with_password(url: str, password: str) -> str:
    """``url`` with ``password`` (as given, not encoded) in its user info."""
    parts = urlsplit(url)
    user = parts.username or "postgres"
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{user}:{password}@{host}{parts.path}" + (f"?{parts.query}" if parts.query else "")


# --- PostgreSQL --------------------------------------------------------------------------------


def _pieces(password: str) -> list[str]:
    """The password and the pieces a driver would make of it at '@', '/', '?' and '#'."""
    for mark in "@/?#":
        password = password.replace(mark, " ")
    return [p for p in password.split() if len(p) > 3]


@pytest.mark.parametrize("password", ["zq7x@kv9m/wt4r99", "zq7xkv/wt4r99", "ab12@cd34@ef99", "zq%zzwt4r99"])
def test_postgres_refuses_an_unencoded_password_without_quoting_it(password: str) -> None:
    url = _with_password(service_url("COGMEM_TEST_POSTGRES_URL"), password)
    with pytest.raises(InvalidArgumentError) as caught:
        PostgresAdapter(url=url)
    assert caught.value.argument == "url" and "percent-encode" in str(caught.value)
    _assert_hidden(str(caught.value), password, *_pieces(password))
    # encoded, the same password is taken (and then refused by the server, not by the check)
    PostgresAdapter(url=_with_password(service_url("COGMEM_TEST_POSTGRES_URL"), quote(password, safe="")))


async def test_postgres_messages_and_logs_mask_the_password(logs: pytest.LogCaptureFixture) -> None:
    base = service_url("COGMEM_TEST_POSTGRES_URL")
    host = urlsplit(base).netloc.rpartition("@")[2]
    # the server names the database it cannot find: here it is the password
    cases = [
        f"postgresql://postgres:{SECRET}@{host}/{SECRET}",
        f"postgresql://postgres@{host}/{SECRET}?password={SECRET}",
        f"host={urlsplit(base).hostname} port={urlsplit(base).port} user=postgres password={SECRET} dbname={SECRET}",
        f"postgresql://postgres:{SECRET}#x@{host}/{SECRET}#x",  # libpq takes '#' into the password
    ]
    for url in cases:
        store = PostgresAdapter(url=url, connect_timeout=3)
        result = await store.connect()
        assert not result.success and result.error is not None
        assert "does not exist" in result.error, result.error
        _assert_hidden(result.error, SECRET)
        _assert_hidden(repr(store), SECRET)
    assert logs.records, "the failures were logged at debug level"
    _assert_hidden(_logged(logs), SECRET)


async def test_postgres_cannot_reach_message_masks_the_password(logs: pytest.LogCaptureFixture) -> None:
    store = PostgresAdapter(url=f"postgresql://app:{SECRET}@{SECRET}.invalid:5432/app", connect_timeout=2)
    result = await store.connect()
    assert not result.success and result.error is not None and ".invalid" in result.error
    _assert_hidden(result.error + _logged(logs), SECRET)


# --- Redis -------------------------------------------------------------------------------------


@pytest.mark.parametrize("password", ["zq7x@kv9m/wt4r99", "zq7xkv/wt4r99", "zq7xkv?wt4r99", "zq7xkv#wt4r99"])
def test_redis_refuses_an_unencoded_password_without_quoting_it(password: str) -> None:
    host = urlsplit(service_url("COGMEM_TEST_REDIS_URL")).netloc
    with pytest.raises(InvalidArgumentError) as caught:
        RedisAdapter(url=f"redis://:{password}@{host}/0")
    assert caught.value.argument == "url"
    _assert_hidden(str(caught.value), password, *_pieces(password))


async def test_redis_messages_and_logs_mask_the_password(logs: pytest.LogCaptureFixture) -> None:
    port = urlsplit(service_url("COGMEM_TEST_REDIS_URL")).port
    # a real server refusing the credentials, and a host named like the password
    for url in (f"redis://user:{SECRET}@127.0.0.1:{port}/0", f"redis://:{SECRET}@{SECRET}.invalid:{port}/0"):
        store = RedisAdapter(url=url, connect_timeout=2, socket_timeout=2, retries=0)
        result = await store.connect()
        assert not result.success and result.error is not None
        _assert_hidden(result.error + repr(store), SECRET)
    assert RedisAdapter(url=f"redis://user:{SECRET}@127.0.0.1:{port}/0").where == f"redis://127.0.0.1:{port}/0"
    store = RedisAdapter(host=f"{SECRET}.invalid", port=port, password=SECRET, connect_timeout=2, retries=0)
    result = await store.connect()
    assert not result.success and result.error is not None
    _assert_hidden(result.error + _logged(logs), SECRET)


# --- MongoDB -----------------------------------------------------------------------------------


@pytest.mark.parametrize("password", ["zq7x@kv9m/wt4r99", "zq7xkv/wt4r99", "zq%zzwt4r99"])
def test_mongodb_refuses_an_unencoded_password_without_quoting_it(password: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        MongoDBAdapter(uri=f"mongodb://app:{password}@127.0.0.1:27019/?directConnection=true")
    assert caught.value.argument == "uri"
    _assert_hidden(str(caught.value), password, *_pieces(password))


async def test_mongodb_messages_and_logs_mask_the_password(logs: pytest.LogCaptureFixture) -> None:
    store = MongoDBAdapter(uri=f"mongodb://app:{SECRET}@{SECRET}.invalid:27017/?authSource=admin", connect_timeout=1)
    result = await store.connect()
    assert not result.success and result.error is not None and ".invalid" in result.error
    _assert_hidden(result.error + _logged(logs) + repr(store), SECRET)


# --- Qdrant ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
async def test_qdrant_messages_mask_the_url_credentials_and_the_api_key(logs: pytest.LogCaptureFixture) -> None:
    from cogitator_memory import QdrantAdapter
    from cogitator_memory.testing.scripted_server import RecordedRequest, ScriptedResponse, ScriptedServer

    api_key = "qdrant-key-0123456789"

    def echo(request: RecordedRequest) -> ScriptedResponse:
        """A server that quotes the credentials it was sent in its error, as some proxies do."""
        seen = f"api-key={request.header('api-key')} authorization={request.header('authorization')}"
        return ScriptedResponse(status=403, json={"status": {"error": f"forbidden: {seen}"}})

    with ScriptedServer() as server:
        server.fallback("/collections/memory/exists", echo)
        port = urlsplit(server.url).port
        store = QdrantAdapter(
            url=f"http://admin:{SECRET}@127.0.0.1:{port}", collection="memory", api_key=api_key, timeout=2
        )
        result = await store.connect()
        sent = server.requests_to("/collections/memory/exists")
    assert sent and sent[0].header("api-key") == api_key, "the key went to the server, which quoted it back"
    assert not result.success and result.error is not None and "forbidden" in result.error, result.error
    _assert_hidden(result.error + _logged(logs) + repr(store), SECRET, api_key)


# --- embedding services ------------------------------------------------------------------------


async def test_embedding_services_mask_base_url_credentials() -> None:
    from cogitator_memory.embeddings import OllamaEmbeddingService, OpenAIEmbeddingService
    from cogitator_memory.embeddings.base import EmbeddingServiceError
    from cogitator_memory.http import RetryPolicy

    base = f"http://user:{SECRET}@127.0.0.1:1/v1?api_key=k3y{SECRET}"
    services = [
        OpenAIEmbeddingService(base_url=base, api_key="sk-test-0123456789", retry=RetryPolicy(max_retries=0)),
        OllamaEmbeddingService(base_url=base, retry=RetryPolicy(max_retries=0)),
    ]
    for service in services:
        text = repr(service)
        assert "127.0.0.1:1/v1" in text
        _assert_hidden(text, SECRET, "user:")
        with pytest.raises(EmbeddingServiceError) as caught:
            await service.embed("hello")
        assert "cannot reach" in str(caught.value)
        _assert_hidden(str(caught.value), SECRET, "sk-test-0123456789")
        await service.aclose()


def test_chat_clients_mask_base_url_credentials() -> None:
    from cogitator_memory.models import OpenAIChatClient

    client = OpenAIChatClient(model="m", base_url=f"https://user:{SECRET}@gateway.example/v1?key={SECRET}")
    _assert_hidden(repr(client), SECRET)
