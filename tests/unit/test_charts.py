import pytest

from dashboard import charts


def test_rate_from_counter_is_per_second_and_skips_resets() -> None:
    points = [(0, 0.0), (10_000, 100.0), (20_000, 300.0), (30_000, 5.0), (40_000, 25.0)]
    assert charts.rate_from_counter(points) == [(10_000, 10.0), (20_000, 20.0), (40_000, 2.0)]
    assert charts.rate_from_counter([(0, 1.0)]) == []
    assert charts.rate_from_counter([(5, 1.0), (5, 9.0)]) == []  # same timestamp


def test_line_figure_has_one_trace_per_series_and_window_range() -> None:
    fig = charts.line_figure(
        "Lag", {"g1": [(1, 2.0)], "g2": []}, y_title="messages", since_ms=0, until_ms=10
    )
    assert [t["name"] for t in fig["data"]] == ["g1", "g2"]
    assert fig["data"][0]["x"] == [1]
    assert fig["data"][0]["y"] == [2.0]
    assert fig["layout"]["xaxis"]["range"] == [0, 10]
    assert fig["layout"]["showlegend"] is True
    assert fig["empty"] is False
    assert charts.line_figure("x", {"a": []})["empty"] is True


def test_x_range_follows_the_data_when_it_is_shorter_than_the_window() -> None:
    hour, minute = 3_600_000, 60_000
    since, until = 10 * hour, 11 * hour
    ten_min = {"g": [(until - 10 * minute, 1.0), (until, 2.0)], "h": []}
    assert charts.x_range(ten_min, since, until) == [until - 10 * minute, until]
    two_min = {"g": [(until - 2 * minute, 1.0)]}  # never narrower than MIN_X_SPAN_MS
    assert charts.x_range(two_min, since, until) == [until - charts.MIN_X_SPAN_MS, until]
    older = {"g": [(since - hour, 1.0)], "h": [(until - minute, 1.0)]}  # never wider
    assert charts.x_range(older, since, until) == [since, until]
    assert charts.x_range({"g": []}, since, until) == [since, until]
    fig = charts.line_figure("Lag", ten_min, since_ms=since, until_ms=until)
    assert fig["layout"]["xaxis"]["range"] == [until - 10 * minute, until]
    assert fig["layout"]["uirevision"] == "Lag"  # a live redraw keeps the user's zoom


def test_window_ms() -> None:
    assert charts.window_ms("7d") == 7 * 86_400_000
    with pytest.raises(ValueError, match="window must be one of"):
        charts.window_ms("1y")


def test_sparkline_points_scale_into_the_box_and_contain_only_numbers() -> None:
    pts = charts.sparkline_points([(0, 0.0), (50, 5.0), (100, 10.0)], width=100, height=20, pad=0)
    assert pts == "0.0,20.0 50.0,10.0 100.0,0.0"
    assert charts.sparkline_points([]) == ""
    flat = charts.sparkline_points([(0, 3.0)], width=10, height=10, pad=0)
    assert flat == "0.0,5.0 10.0,5.0"
    assert set(charts.sparkline_points([(0, 1e9), (1, float("nan")), (2, -3.5)])) <= set(
        "0123456789., -"
    )


def test_trace_names_are_escaped_for_plotly() -> None:
    """Plotly renders legend and hover names as limited HTML: a group name is data."""
    fig = charts.line_figure("Lag", {'<a href="//evil">g</a> & co': [(0, 1.0)]})
    assert fig["data"][0]["name"] == '&lt;a href="//evil"&gt;g&lt;/a&gt; &amp; co'
