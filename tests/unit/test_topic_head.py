"""The head of a topic's pages (components/topic_head.html): crumbs, title, tabs."""

from django.template.loader import render_to_string

HEAD = "dashboard/components/topic_head.html"
SEP = " \N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "  # between crumbs
OVERVIEW = '<p class="crumbs"><a href="/clusters/c1/">c1</a>' + SEP
TOPIC = '<a href="/clusters/c1/topics/orders/">orders</a>' + SEP


def _head(**context: object) -> str:
    return render_to_string(HEAD, {"cluster": "c1", "topic": "orders", **context})


def test_a_tab_page_has_its_crumb_its_title_and_its_tab_current() -> None:
    html = _head(active="leases", title="Leases and rebalance", crumb="leases")
    assert html.startswith(
        OVERVIEW + TOPIC + "leases</p>\n"
        '<h1>Leases and rebalance <span class="muted">· orders</span></h1>\n\n'
        '<nav class="tabs" aria-label="Topic">\n'
    )
    assert html.count('aria-current="page"') == 1
    assert '<a href="/clusters/c1/topics/orders/leases/" aria-current="page">Leases</a>' in html


def test_a_page_below_a_tab_links_the_level_between() -> None:
    html = _head(
        active="browse",
        title="Live tail",
        crumb="live tail",
        parent="messages",
        parent_url="dashboard:topic-browse",
    )
    assert html.startswith(
        OVERVIEW
        + TOPIC
        + '<a href="/clusters/c1/topics/orders/messages/">messages</a>'
        + SEP
        + "live tail</p>\n"
    )
    assert '<a href="/clusters/c1/topics/orders/messages/" aria-current="page">Messages</a>' in html


def test_the_topic_page_and_the_retries_tab_have_their_own_trails() -> None:
    assert _head(active="topic").startswith(OVERVIEW + "topic</p>\n<h1>orders</h1>\n")
    assert _head(active="retries", title="Retries").startswith(
        OVERVIEW + '<a href="/clusters/c1/retries/">retries</a>' + SEP + "orders</p>\n"
        '<h1>Retries <span class="muted">· orders</span></h1>\n'
    )


def test_the_group_tabs_keep_the_group_and_text_is_escaped() -> None:
    html = _head(active="metrics", title="Consumer metrics", crumb="metrics", group="a&b")
    assert html.count("?group=a%26b") == 4
    assert "<h1>Consumer metrics" in html
    odd = render_to_string(
        HEAD, {"cluster": "c<1>", "topic": "orders", "active": "dlq", "title": "Dead letters"}
    )
    assert ">c&lt;1&gt;</a>" in odd
