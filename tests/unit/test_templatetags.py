import pytest
from django.template import Context, Template, TemplateSyntaxError

from dashboard.templatetags import console


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0 ms"), (850, "850 ms"), (4_200, "4.2 s"), (42_000, "42 s"), (185_000, "3 min 5 s"),
     (1_800_000, "30 min"), (7_800_000, "2 h 10 min"), (3 * 86_400_000 + 4 * 3_600_000, "3 d 4 h")],
)  # fmt: skip
def test_duration_ms(ms, text) -> None:
    assert console.duration_ms(ms) == text


def test_numbers_and_unknowns() -> None:
    assert console.num(1234567) == "1,234,567"
    assert console.num(None) == "unknown"
    assert console.num("x", "n/a") == "n/a"
    assert console.num(2.25) == "2.2"
    assert console.compact(12_300) == "12.3k"
    assert console.duration_ms(None) == "unknown"


def test_reltime_renders_time_element_with_absolute_title() -> None:
    html = console.reltime(1_700_000_000_000, 1_700_000_060_000)
    assert html == (
        '<time datetime="2023-11-14T22:13:20+00:00" title="2023-11-14T22:13:20+00:00" '
        "data-relative>1 min ago</time>"
    )
    assert console.reltime(None) == "never"


def test_status_badge_escapes_reason_and_normalises_status() -> None:
    html = console.status_badge("stall", '"><script>')
    assert html == (
        '<span class="status status-STALL" title="&quot;&gt;&lt;script&gt;">STALL</span>'
    )
    assert "status-UNKNOWN" in console.status_badge('"><x')


def test_payload_helpers_return_plain_text_that_templates_escape() -> None:
    assert console.pretty_payload('{"a":[1,2]}') == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert console.pretty_payload("{not json") == "{not json"
    assert console.is_json("[1]")
    assert not console.is_json("<b>")
    dump = console.hexdump(b"\x00<a>")
    assert dump.startswith("00000000  00 3c 61 3e")
    assert dump.endswith(".<a>")
    rendered = Template(
        "{% load console %}<pre>{{ p|pretty_payload }}{{ b|hexdump }}</pre>"
    ).render(Context({"p": '{"x": "<script>"}', "b": b"<script>"}))
    assert "<script>" not in rendered
    assert console.truncate_chars("abcdef", 4) == "abc…"
    assert console.entry_age("1000-0", 61_000) == "1 min"
    assert console.entry_age("bad", 1) == "unknown"


def test_query_tag_keeps_other_parameters(rf) -> None:
    request = rf.get("/x/?q=a&page=3&sort=lag")
    out = Template("{% load console %}{% query page=None sort='topic' %}").render(
        Context({"request": request})
    )
    assert out == "?q=a&amp;sort=topic"


def test_isotime_renders_iso_instants_as_relative_time() -> None:
    now = 1_700_000_060_000
    expected = (
        '<time datetime="2023-11-14T22:13:20+00:00" title="2023-11-14T22:13:20+00:00" '
        "data-relative>1 min ago</time>"
    )
    assert console.isotime("2023-11-14T22:13:20Z", now) == expected
    assert console.isotime("2023-11-14T22:13:20.123456789Z", now).endswith(">59 s ago</time>")
    assert console.isotime("2023-11-14T23:13:20+01:00", now) == expected
    assert console.isotime("not a time", now) == "not a time"  # plain text, escaped later
    assert console.isotime("", now) == ""
    assert console.id_time("1700000000000-3", now) == expected


def test_job_badge_colors_every_state_and_escapes_the_label() -> None:
    for status, kind in [("draft", "pending"), ("queued", "pending"), ("running", "running"),
                         ("completed", "completed"), ("cancelled", "cancelled"),
                         ("failed", "failed")]:  # fmt: skip
        assert f'class="status job-state job-{kind}"' in console.job_badge(status, status)
    assert "&lt;b&gt;" in console.job_badge("completed", "<b>")


def test_table_card_wraps_head_and_rows_and_escapes_the_title() -> None:
    html = Template(
        '{% load console %}{% table_card title "t-id" %}<thead><tr><th>A</th></tr></thead>'
        "{% rows %}{% for r in rows %}<tr><td>{{ r }}</td></tr>{% endfor %}{% endtable_card %}"
    ).render(Context({"title": "<b>x</b>", "rows": ["<i>"]}))
    assert '<section class="card">\n<h2>&lt;b&gt;x&lt;/b&gt;</h2>' in html
    assert '<div class="table-wrap">\n<table class="data" id="t-id"><thead>' in html
    assert "</thead><tbody><tr><td>&lt;i&gt;</td></tr></tbody></table>\n</div>\n</section>" in html


def test_live_region_is_the_polled_div_around_its_content(rf) -> None:
    body = "\n{% if rows %}<p>{{ rows.0 }}</p>{% endif %}\n"
    context = {"request": rf.get("/clusters/c/?q=a&sort=lag"), "poll_seconds": 5, "rows": ["<b>"]}
    html = Template('{% load console %}{% live "x-live" %}' + body + "{% endlive %}").render(
        Context(context)
    )
    assert html == (
        '<div id="x-live" data-live hx-get="/clusters/c/?q=a&amp;sort=lag" hx-trigger="every 5s"'
        ' hx-swap="outerHTML">\n<p>&lt;b&gt;</p>\n</div>'
    )
    with pytest.raises(TemplateSyntaxError):
        Template("{% load console %}{% live %}{% endlive %}")
