"""Server-rendered SVG charts: well-formed, scaled to [0, 1], gaps for missing values, hostile labels inert."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from niceeval.web._charts import Cell, Point, Series, heat_map, score_colour, score_lines, trend_line

SVG = "{http://www.w3.org/2000/svg}"


def parse(markup: str) -> ET.Element:
    return ET.fromstring(str(markup))


def test_trend_line_draws_one_dot_per_run_with_a_tooltip() -> None:
    svg = parse(trend_line([Point("run 1", 0.5), Point("run 2", 1.0), Point("run 3", 0.0)]))
    dots = svg.findall(f".//{SVG}circle")
    assert [d.findtext(f"{SVG}title") for d in dots] == ["run 1: 50%", "run 2: 100%", "run 3: 0%"]


def test_trend_line_puts_full_pass_rate_at_the_top_and_zero_at_the_bottom() -> None:
    svg = parse(trend_line([Point("a", 1.0), Point("b", 0.0)], height=160))
    top, bottom = (float(d.get("cy", "nan")) for d in svg.findall(f".//{SVG}circle"))
    assert top == 10.0 and bottom == 160 - 22


def test_trend_line_breaks_the_line_where_a_run_has_no_value() -> None:
    svg = parse(trend_line([Point("a", 0.2), Point("b", 0.4), Point("c", None), Point("d", 0.6), Point("e", 0.8)]))
    lines = svg.findall(f".//{SVG}polyline")
    assert [len(line.get("points", "").split()) for line in lines] == [2, 2]


def test_trend_line_without_values_says_so() -> None:
    svg = parse(trend_line([Point("a", None)]))
    assert svg.findall(f".//{SVG}circle") == []
    assert any(t.text == "no data yet" for t in svg.iter(f"{SVG}text"))


def test_trend_line_links_points_to_local_paths_only() -> None:
    svg = parse(
        trend_line(
            [
                Point("a", 0.5, href="/runs/abc"),
                Point("b", 0.5, href="javascript:alert(1)"),
                Point("c", 0.5, href="//evil.example/x"),
            ]
        )
    )
    assert [a.get("href") for a in svg.iter(f"{SVG}a")] == ["/runs/abc"]


def test_labels_are_escaped_not_parsed_as_markup() -> None:
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    markup = str(trend_line([Point(hostile, 0.5)]))
    svg = parse(markup)
    assert "<script>" not in markup and svg.find(f".//{SVG}script") is None
    assert svg.find(f".//{SVG}circle/{SVG}title") is not None
    assert hostile in (svg.find(f".//{SVG}circle/{SVG}title").text or "")  # type: ignore[union-attr]


def test_score_lines_draw_one_group_per_series_with_its_own_colour_class() -> None:
    svg = parse(score_lines([Series("includes", [1.0, 0.0]), Series("judge", [0.7, 0.9])], ["r1", "r2"]))
    groups = svg.findall(f".//{SVG}g")
    assert [g.findtext(f"{SVG}title") for g in groups] == ["includes", "judge"]
    classes = [g.find(f"{SVG}polyline").get("class") for g in groups]  # type: ignore[union-attr]
    assert classes == ["line series-0", "line series-1"]


def test_score_lines_legend_names_every_series() -> None:
    svg = parse(score_lines([Series(f"a{i}", [i / 10]) for i in range(6)], ["r1"]))
    legend = [t for t in svg.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert [t.findtext(f"{SVG}title") for t in legend] == [f"a{i}" for i in range(6)]


def test_identical_score_lines_are_drawn_once_and_the_legend_says_so() -> None:
    same = [1.0, 0.5, None, 1.0]
    svg = parse(score_lines(
        [Series("rubric('a')", same), Series("includes", [1.0, 1.0, 1.0, 1.0]), Series("rubric('b')", list(same)),
         Series("rubric('c')", same)],
        ["r1", "r2", "r3", "r4"],
    ))  # fmt: skip
    groups = svg.findall(f".//{SVG}g")
    assert [g.findtext(f"{SVG}title") for g in groups] == [
        "rubric('a')\nrubric('b')\nrubric('c') (the same scores)",
        "includes",
    ]
    legend = [t for t in svg.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert ["".join(t.itertext()).removeprefix(t.findtext(f"{SVG}title") or "") for t in legend] == [
        "rubric('a') (+2 same)",
        "includes",
    ]
    assert [p.get("class") for p in svg.iter(f"{SVG}polyline")] == ["line series-0", "line series-1"]


def test_heat_map_has_one_cell_per_assertion_and_run() -> None:
    cells = [[Cell(1.0, "passed"), Cell(0.0, "failed")], [None, Cell(None, "inconclusive")]]
    svg = parse(heat_map(["includes", "judge"], ["r1", "r2"], cells))
    rects = svg.findall(f".//{SVG}rect")
    assert [r.get("class") for r in rects] == ["cell passed", "cell failed", "cell none", "cell inconclusive"]


def test_heat_map_colours_cells_by_score() -> None:
    svg = parse(heat_map(["a"], ["r1", "r2"], [[Cell(1.0, "passed"), Cell(0.0, "failed")]]))
    fills = [r.get("fill") for r in svg.findall(f".//{SVG}rect")]
    assert fills == [score_colour(1.0), score_colour(0.0)]


def test_heat_map_shortens_long_names_and_keeps_the_full_name_in_the_tooltip() -> None:
    name = "judge: " + "x" * 60
    svg = parse(heat_map([name], ["r1"], [[Cell(0.5, "passed")]]))
    label = next(t for t in svg.iter(f"{SVG}text") if t.get("class") == "row-label")
    assert label.findtext(f"{SVG}title") == name and len(label.text or "") < len(name)
    assert "".join(label.itertext()).endswith("\u2026")


def test_heat_map_without_runs_says_so() -> None:
    svg = parse(heat_map([], [], []))
    assert any(t.text == "no data yet" for t in svg.iter(f"{SVG}text"))


def test_score_colour_runs_from_red_through_amber_to_green() -> None:
    assert (score_colour(0.0), score_colour(0.5), score_colour(1.0)) == ("#d14343", "#e09b2d", "#2e9a56")
    assert score_colour(-1) == score_colour(0.0) and score_colour(2) == score_colour(1.0)
