import re
from pathlib import Path

import pytest

from dashboard.store.keys import ConsoleKeys
from mqcore.keys import KeySpace, validate_name

ROOT = Path(__file__).resolve().parents[2]


def test_java_layout_without_hash_tags() -> None:
    ks = KeySpace()
    assert ks.partition("orders", 3) == "stream:topic:orders:p:3"
    assert ks.dlq("orders") == "stream:topic:orders:dlq"
    assert ks.registry() == "streaming:mq:topics:registry"
    assert ks.meta("orders") == "streaming:mq:topic:orders:meta"
    assert ks.partitions_set("orders") == "streaming:mq:topic:orders:partitions"
    assert ks.lease("orders", "g", 1) == "streaming:mq:lease:orders:g:1"
    assert ks.retry_zset("orders") == "streaming:mq:retry:orders"
    assert ks.retry_item("orders", "u1") == "streaming:mq:retry:item:orders:u1"
    assert ks.commit_frontier("orders", 0) == "streaming:mq:commit:orders:p:0"
    assert ks.payload_topic_prefix("orders") == "streaming:mq:payload:orders:p:"
    assert ks.payload("orders", 0, "x") == "streaming:mq:payload:orders:p:0:x"


def test_a_series_key_gives_back_its_metric_and_entity() -> None:
    keys = ConsoleKeys("ops:x")
    for cluster, metric, entity in [
        ("default", "lag", "orders"),
        ("eu:west", "partition_lag", "a:b/g:1/0"),  # colons in the cluster and the entity
        ("c", "produced_total", ""),
    ]:
        key = keys.series(cluster, "1m", metric, entity)
        assert keys.series_entry(cluster, "1m", key) == (metric, entity)


def test_hash_tags_put_every_topic_key_in_one_slot() -> None:
    ks = KeySpace(hash_tags=True)
    keys = [
        ks.partition("orders", 0), ks.dlq("orders"), ks.retry_zset("orders"),
        ks.retry_item("orders", "u"), ks.lease("orders", "g", 0), ks.lease_epoch("orders", "g", 0),
        ks.dlq_replays("orders"), ks.meta("orders"),
    ]  # fmt: skip
    assert all("{orders}" in k for k in keys)


def test_custom_prefixes() -> None:
    ks = KeySpace(control_prefix="c", stream_prefix="s")
    assert ks.partition("t", 0) == "s:t:p:0"
    assert ks.meta("t") == "c:topic:t:meta"


@pytest.mark.parametrize("ks", [KeySpace(), KeySpace(hash_tags=True), KeySpace("c", "s")])
def test_lease_prefixes_are_the_lease_keys_without_partition(ks: KeySpace) -> None:
    lease, epoch = ks.lease_prefixes("orders", "g")
    for p in (0, 7, 123):
        assert lease + str(p) == ks.lease("orders", "g", p)
        assert epoch + str(p) == ks.lease_epoch("orders", "g", p)


@pytest.mark.parametrize("bad", ["", "a:b", "{x}", "a b", "x" * 201, "é"])
def test_bad_names_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid topic name"):
        validate_name("topic", bad)


def test_key_prefix_literals_only_in_keys_module() -> None:
    """STYLE.md: key strings are formatted in the keys modules only (mqcore/keys.py for the
    queues, dashboard/store/keys.py for the console store)."""
    pattern = re.compile(r"""["'](streaming:mq|stream:topic|opsdash):""")
    offenders = []
    for folder in ("mqcore", "dashboard", "config", "pipelines", "bench", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "keys.py" and path.parent.name in ("mqcore", "store"):
                continue
            if pattern.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
