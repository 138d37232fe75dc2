"""Sentinel URLs (mqcore.sentinel): one parser for MQ clusters, the console store, the
Celery broker, mqcore clients, the CLI and Spark."""

from __future__ import annotations

import pytest

from mqcore.config import MQConfig, redact_urls
from mqcore.sentinel import is_sentinel_url, kombu_broker, parse_sentinel_url

URL = "redis+sentinel://app:s3cret@s1:26379,s2:26380,[::1]/mymaster/3"


def test_hosts_service_db_and_credentials() -> None:
    parsed = parse_sentinel_url(URL)
    assert parsed.sentinels == (("s1", 26379), ("s2", 26380), ("::1", 26379))
    assert (parsed.service, parsed.db) == ("mymaster", 3)
    assert (parsed.username, parsed.password) == ("app", "s3cret")
    assert parsed.master_options() == {"db": 3, "username": "app", "password": "s3cret"}
    assert parsed.sentinel_options() == {}  # the master's password is not the Sentinels'
    assert parsed.redacted() == "redis+sentinel://s1:26379,s2:26380,[::1]:26379/mymaster/3"


def test_defaults_password_only_and_sentinel_options() -> None:
    parsed = parse_sentinel_url(
        "rediss+sentinel://:pw@h/svc?sentinel_password=spw&ssl_cert_reqs=none&sentinel_tls=no"
    )
    assert parsed.sentinels == (("h", 26379),)
    assert (parsed.db, parsed.username, parsed.password) == (0, None, "pw")
    assert parsed.tls
    assert not parsed.sentinel_tls
    master = {"db": 0, "password": "pw", "ssl": True, "ssl_cert_reqs": "none"}
    assert parsed.master_options() == master
    assert parsed.sentinel_options() == {"password": "spw"}


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis+sentinel://h:26379", "/SERVICE"),
        ("redis+sentinel://h:26379/svc/x", "database must be a number"),
        ("redis+sentinel://h:26379/svc/0/extra", "/SERVICE"),
        ("redis+sentinel://h:0/svc", "1..65535"),
        ("redis+sentinel://h:26379,/svc", "empty"),
        ("redis+sentinel://h/svc?master=x", "unknown option(s) master"),
        ("redis+sentinel://h/svc?sentinel_tls=maybe", "true or false"),
        ("redis://h/svc", "scheme"),
    ],
)
def test_bad_urls_are_refused_with_the_reason(url: str, why: str) -> None:
    with pytest.raises(ValueError, match="bad Sentinel URL") as info:
        parse_sentinel_url(url.replace("h", "user:hunter2@h", 1))
    assert why in str(info.value)
    assert "hunter2" not in str(info.value)


def test_mq_config_takes_sentinel_urls_and_its_prefixes() -> None:
    config = MQConfig.from_url(
        "redis+sentinel://:pw@s1,s2:1/mq/2?control_prefix=c&sentinel_password=spw"
    )
    assert config.sentinel
    assert not config.cluster
    assert config.control_prefix == "c"
    assert config.url == "redis+sentinel://:pw@s1,s2:1/mq/2?sentinel_password=spw"
    assert config.redacted_url() == "redis+sentinel://s1:26379,s2:1/mq/2"
    assert not MQConfig.from_url("redis://h:6379/0").sentinel
    with pytest.raises(ValueError, match="bad Sentinel URL"):
        MQConfig.from_url("redis+sentinel://h/mq/x")


def test_client_is_a_sentinel_managed_master_client() -> None:
    client = MQConfig.from_url("redis+sentinel://127.0.0.1:1/mq/2").client()
    pool = client.connection_pool
    assert pool.service_name == "mq"
    assert pool.is_master
    assert pool.connection_kwargs["db"] == 2
    assert pool.connection_kwargs["socket_timeout"] == 5.0  # MQConfig's timeouts hold
    client.close()


def test_celery_broker_is_kombus_sentinel_transport() -> None:
    broker, transport, use_ssl = kombu_broker(
        "rediss+sentinel://:pw@s1,s2:26380/mq/2?sentinel_password=spw&ssl_cert_reqs=required"
    )
    assert broker == "sentinel://:pw@s1:26379/2;sentinel://:pw@s2:26380/2"
    assert transport == {
        "master_name": "mq",
        "sentinel_kwargs": {"password": "spw", "ssl": True, "ssl_cert_reqs": "required"},
    }
    assert use_ssl == {"ssl_cert_reqs": "required"}
    assert kombu_broker("redis://h:6379/2") == ("redis://h:6379/2", {}, None)


def test_passwords_are_redacted_in_text() -> None:
    text = redact_urls(f"failed: {URL}?sentinel_password=spw&sentinel_tls=yes")
    assert "s3cret" not in text
    assert "spw" not in text
    assert "sentinel_tls=yes" in text
    assert is_sentinel_url("REDIS+SENTINEL://h/x")
    assert not is_sentinel_url("redis://h")


def test_spark_options_and_the_cli_take_sentinel_urls(capsys: pytest.CaptureFixture[str]) -> None:
    source = pytest.importorskip("mqcore.spark.source")
    config = source.config_from_options({"redis_url": "redis+sentinel://s1/mq/1"})
    assert config.sentinel
    with pytest.raises(source.InvalidArgumentError, match="cannot be a Redis Cluster"):
        source.config_from_options({"redis_url": "redis+sentinel://s1/mq", "cluster": "true"})
    from mqcore.cli import main

    assert main(["--redis-url", "redis+sentinel://:pw@s1/mq/x", "topic", "list"]) == 2
    assert "--redis-url: bad Sentinel URL: the database must be a number" in capsys.readouterr().err
