"""Alert webhooks in their formats (generic JSON, Slack, PagerDuty Events v2), POSTed to
real local HTTP receivers; bad ALERT_WEBHOOKS settings refused by the start-up check."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from dashboard.collectors.notify import alert_notify, alert_webhooks, webhooks_check
from dashboard.collectors.webhook_formats import PD_DEDUP_MAX, PD_SUMMARY_MAX, slack_escape
from tests.drills.harness import WebhookReceiver

HOSTILE = "<!channel> & <https://evil.example|click>"


def _alert(**over: Any) -> dict[str, Any]:
    alert = {
        "id": "dlq_growth:orders",
        "cluster": "default",
        "rule": "dlq_growth",
        "entity": "orders",
        "severity": "critical",
        "message": "12 dead letters in 300 s",
        "value": 12.0,
        "state": "open",
        "since_ms": 1_700_000_000_000,
        "opened_at_ms": 1_700_000_000_000,
        "last_seen_ms": 1_700_000_000_000,
        "resolved_at_ms": None,
    }
    return {**alert, **over}


def _opened(**over: Any) -> dict[str, Any]:
    return {"event": "opened", "alert": _alert(**over)}


def _resolved(**over: Any) -> dict[str, Any]:
    alert = _alert(state="resolved", resolved_at_ms=1_700_000_060_000, **over)
    return {"event": "resolved", "alert": alert}


@pytest.fixture
def receivers() -> Iterator[list[WebhookReceiver]]:
    made = [WebhookReceiver() for _ in range(3)]
    yield made
    for receiver in made:
        receiver.close()


@pytest.fixture
def hooks(settings, monkeypatch, receivers: list[WebhookReceiver]) -> list[WebhookReceiver]:
    """One webhook per format: json, slack, pagerduty (its key from the environment)."""
    monkeypatch.setenv("TEST_PD_KEY", "pd-secret-key")
    settings.ALERT_WEBHOOK_URL = ""
    settings.ALERT_WEBHOOKS = [
        {"url": receivers[0].url, "format": "json"},
        {"url": receivers[1].url, "format": "slack"},
        {"url": receivers[2].url, "format": "pagerduty", "routing_key_env": "TEST_PD_KEY"},
    ]
    return receivers


def test_generic_json_is_unchanged_and_alert_webhook_url_still_works(
    settings, receivers: list[WebhookReceiver]
) -> None:
    settings.ALERT_WEBHOOKS = ""
    settings.ALERT_WEBHOOK_URL = receivers[0].url
    event = _opened()
    assert alert_notify(event)
    assert receivers[0].events == [{"source": "opsdash", **event}]
    assert webhooks_check() == []


def test_each_format_gets_its_shape(hooks: list[WebhookReceiver]) -> None:
    json_hook, slack, pagerduty = hooks
    assert alert_notify(_opened())
    assert alert_notify(_resolved())

    assert [e["event"] for e in json_hook.events] == ["opened", "resolved"]
    assert json_hook.events[0]["source"] == "opsdash"

    opened, resolved = slack.events
    assert opened["text"].startswith("[CRITICAL] opened: dlq_growth on orders")
    section, context = opened["blocks"]
    assert section["type"] == "section"
    assert section["text"]["type"] == "mrkdwn"
    assert "*Alert opened: dlq_growth* (critical)" in section["text"]["text"]
    assert "12 dead letters in 300 s" in section["text"]["text"]
    assert context["elements"][0]["text"] == (
        "cluster default · opsdash · 2023-11-14T22:13:20.000Z"
    )
    assert resolved["text"].startswith("[CRITICAL] resolved: dlq_growth on orders")

    trigger, resolve = pagerduty.events
    assert trigger["routing_key"] == resolve["routing_key"] == "pd-secret-key"
    assert (trigger["event_action"], resolve["event_action"]) == ("trigger", "resolve")
    assert trigger["dedup_key"] == resolve["dedup_key"] == "opsdash/default/dlq_growth:orders"
    assert trigger["payload"] == {
        "summary": "[default] dlq_growth on orders: 12 dead letters in 300 s",
        "severity": "critical",
        "source": "opsdash cluster default",
        "component": "orders",
        "group": "default",
        "class": "dlq_growth",
        "timestamp": "2023-11-14T22:13:20.000Z",
        "custom_details": _alert(),
    }
    assert resolve["payload"]["timestamp"] == "2023-11-14T22:14:20.000Z"


def test_pagerduty_severity_summary_and_dedup_key_fit(hooks: list[WebhookReceiver]) -> None:
    pagerduty = hooks[2]
    long_entity = "t" * 5000
    assert alert_notify(_opened(severity="warning", entity=long_entity, id=f"x:{long_entity}"))
    assert alert_notify(_opened(severity="bogus"))
    assert alert_notify(_resolved(entity=long_entity, id=f"x:{long_entity}"))
    first, bogus, resolve = pagerduty.events
    assert first["payload"]["severity"] == "warning"
    assert bogus["payload"]["severity"] == "warning"
    assert len(first["payload"]["summary"]) == PD_SUMMARY_MAX
    assert len(first["dedup_key"]) == PD_DEDUP_MAX
    assert first["dedup_key"] == resolve["dedup_key"]
    assert len(first["payload"]["component"]) <= 255


def test_hostile_names_are_escaped_and_cut_for_slack(hooks: list[WebhookReceiver]) -> None:
    slack = hooks[1]
    assert alert_notify(_opened(entity=HOSTILE * 100, message=f"group {HOSTILE}" * 200))
    body = slack.events[0]
    texts = [body["text"], body["blocks"][0]["text"]["text"]]
    texts += [e["text"] for e in body["blocks"][1]["elements"]]
    for text in texts:
        assert "<" not in text
        assert ">" not in text
        assert len(text) <= 3000
        partial = ("&", "&a", "&am", "&amp", "&l", "&lt", "&g", "&gt")
        assert not text.removesuffix("…").endswith(partial)
    section = body["blocks"][0]["text"]["text"]
    assert "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;" in section
    # & escaped once only (not "&amp;lt;")
    assert "&amp;lt;" not in section


def test_slack_escape_cuts_between_characters_never_inside_an_escape() -> None:
    assert slack_escape("<<", 8) == "&lt;&lt;"
    assert slack_escape("<<", 7) == "&lt;…"
    assert slack_escape("a<b", 4) == "a…"
    assert slack_escape(None, 10) == ""


def test_one_failing_webhook_does_not_stop_the_others(
    settings, monkeypatch, hooks: list[WebhookReceiver], caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/hook?token=url-secret"
    monkeypatch.setattr("dashboard.collectors.notify.time.sleep", lambda s: None)
    settings.ALERT_WEBHOOKS = [{"url": dead, "format": "slack"}, *settings.ALERT_WEBHOOKS]
    with caplog.at_level(logging.DEBUG, logger="dashboard.collectors.notify"):
        assert not alert_notify(_opened())  # not every webhook took it
    assert [len(r.events) for r in hooks] == [1, 1, 1]
    assert "ALERT_WEBHOOKS[0] (slack)" in caplog.text
    assert "url-secret" not in caplog.text
    assert "pd-secret-key" not in caplog.text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[{", "ALERT_WEBHOOKS is not valid JSON"),
        ('{"url": "http://x"}', "ALERT_WEBHOOKS must be a JSON list"),
        ('["http://x"]', "ALERT_WEBHOOKS[0] must be an object"),
        ('[{"url": "http://x", "format": "teams"}]', "format 'teams' is not one of json, slack"),
        ('[{"url": "http://x", "fromat": "slack"}]', "unknown key(s) fromat"),
        ('[{"format": "slack"}]', "ALERT_WEBHOOKS[0] (slack) needs a url"),
        ('[{"url": "ftp://x?k=url-secret"}]', "ALERT_WEBHOOKS[0] (json) must be an http(s) URL"),
        ('[{"format": "pagerduty"}]', "ALERT_WEBHOOKS[0] (pagerduty) needs a routing key"),
        (
            '[{"format": "pagerduty", "routing_key_env": "TEST_PD_UNSET"}]',
            "the environment variable TEST_PD_UNSET (routing_key_env) is unset or empty",
        ),
        (
            '[{"url": "http://x", "routing_key": "pd-secret-key"}]',
            "a routing key is for the pagerduty format only",
        ),
    ],
)
def test_bad_settings_are_refused_with_a_clear_message(
    settings, monkeypatch, value: str, message: str
) -> None:
    monkeypatch.delenv("TEST_PD_UNSET", raising=False)
    settings.ALERT_WEBHOOK_URL = ""
    settings.ALERT_WEBHOOKS = value
    errors = webhooks_check()
    assert [e.id for e in errors] == ["opsdash.E120"]
    assert message in errors[0].msg
    assert "url-secret" not in errors[0].msg
    assert "pd-secret-key" not in errors[0].msg
    assert not alert_notify(_opened())  # nothing sent, no exception


def test_pagerduty_defaults_to_the_events_api_and_the_key_stays_out_of_repr(settings) -> None:
    settings.ALERT_WEBHOOK_URL = ""
    settings.ALERT_WEBHOOKS = '[{"format": "pagerduty", "routing_key": "pd-secret-key"}]'
    (hook,) = alert_webhooks()
    assert hook.url == "https://events.pagerduty.com/v2/enqueue"
    assert "pd-secret-key" not in repr(hook)
    assert "events.pagerduty" not in repr(hook)
