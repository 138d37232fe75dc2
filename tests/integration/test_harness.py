import time

import pytest
import redis

from scripts.embedded import EmbeddedRedis, RedisSetupError, find_free_port, probe_ready

pytestmark = pytest.mark.redis


def test_private_server_is_ours(redis_server: EmbeddedRedis, r: redis.Redis) -> None:
    assert int(r.info("server")["process_id"]) == redis_server.process.pid  # type: ignore[union-attr]
    assert r.dbsize() == 0


def test_port_taken_gives_clear_error(redis_server: EmbeddedRedis, tmp_path) -> None:
    with pytest.raises(RedisSetupError, match="already taken"):
        EmbeddedRedis(tmp_path, port=redis_server.port).start()


def test_old_redis_refused(tmp_path, monkeypatch) -> None:
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho 'Redis server v=6.2.14 sha=0 malloc=libc bits=64'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("REDIS_SERVER_BIN", str(fake))
    from scripts.embedded import find_redis_server

    with pytest.raises(RedisSetupError, match=r"Redis >= 7.0 is required.*6\.2\.14"):
        find_redis_server()


def test_missing_redis_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REDIS_SERVER_BIN", str(tmp_path / "nope"))
    from scripts.embedded import find_redis_server

    with pytest.raises(RedisSetupError, match="cannot run"):
        find_redis_server()


@pytest.mark.cluster
def test_cluster_fixture_has_three_masters(cluster_config) -> None:
    client = cluster_config.client()
    try:
        assert len(client.get_primaries()) == 3
        client.set("{t}a", 1)
        assert client.get("{t}a") == b"1"
    finally:
        client.close()


def test_restart_on_persisted_data_waits_until_loaded(tmp_path) -> None:
    """A server replaying its data answers INFO before it can serve it: start() waits."""
    server = EmbeddedRedis(tmp_path, persistence=True).start()
    client = redis.Redis(host=server.host, port=server.port)
    client.eval("for i = 1, 20000 do redis.call('SET', 'k' .. i, i) end", 0)
    client.bgrewriteaof()  # the AOF base becomes an RDB, which key-load-delay slows down
    while client.info("persistence")["aof_rewrite_in_progress"]:
        time.sleep(0.05)
    client.close()
    server.stop()
    # 50 µs per key, serving clients while loading: the window a too-early "ready" falls into
    slow = EmbeddedRedis(
        tmp_path,
        persistence=True,
        extra_args=["--key-load-delay", "50", "--loading-process-events-interval-bytes", "1024"],
    )
    slow.start()
    client = redis.Redis(host=slow.host, port=slow.port)
    try:
        # INFO answers while loading (other commands get BusyLoadingError): ready means loaded
        assert client.info("persistence")["loading"] == 0
        assert client.dbsize() == 20000
    finally:
        client.close()
        slow.stop()


def test_probe_ready_refuses_a_server_that_is_not_ours(redis_server: EmbeddedRedis) -> None:
    assert redis_server.process is not None
    assert probe_ready(redis_server.host, redis_server.port, redis_server.process.pid)
    with pytest.raises(RedisSetupError, match="not our redis-server"):
        probe_ready(redis_server.host, redis_server.port, redis_server.process.pid + 1)
    assert not probe_ready("127.0.0.1", find_free_port(), 1)  # nobody answers yet
