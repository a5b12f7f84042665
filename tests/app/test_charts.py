"""Specification of app.charts: figures that add up, name the classes, and show both sides alike."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import jinja2
import numpy as np
import orjson
import plotly
import pytest

from app.charts import common, result
from app.charts import comparison as comparison_charts
from app.charts import monitor as monitor_charts
from app.charts.inert import figure_json
from app.i18n import configure_templates
from app.models import SessionStatus
from app.sessions.views import SessionView
from elicitation import InvalidConfigError, Sphere
from elicitation.display import DISPLAY_DECIMALS, DisplayGrid, apportion
from elicitation.rates import SyntheticSpace

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["benign", "malignant"]
SPACE = SyntheticSpace(2, radius=0.2, priors=[0.65, 0.35], class_names=("benign", "malignant"))


def _confusion(rates: list[float]) -> list[list[float]]:
    return np.asarray(SPACE.confusion(rates)).tolist()


def _comparison(left_rates: list[float], right_rates: list[float], **overrides: object) -> dict[str, object]:
    comparison: dict[str, object] = {
        "seq": 4,
        "left": {"rates": left_rates, "confusion": _confusion(left_rates)},
        "right": {"rates": right_rates, "confusion": _confusion(right_rates)},
        "class_names": NAMES,
        "group_names": [],
        "population": "patients",
        "practice": False,
    }
    comparison.update(overrides)
    return comparison


def _random_confusions(rng: np.random.Generator, count: int, k: int) -> list[np.ndarray]:
    matrices = []
    for _ in range(count):
        matrix = rng.dirichlet(np.ones(k * k)).reshape(k, k) * 100.0
        matrices.append(matrix)
    return matrices


# ---- rounding -------------------------------------------------------------------------------------


@pytest.mark.parametrize("decimals", [0, 1, 2])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_rounded_counts_add_up_to_100_and_stay_within_one_unit(decimals: int, k: int) -> None:
    rng = np.random.default_rng(1000 * k + decimals)
    unit = 10.0**-decimals
    for matrix in _random_confusions(rng, 50, k):
        shown = comparison_charts.rounded_counts(matrix, decimals)
        assert shown.shape == matrix.shape
        assert shown.sum() == pytest.approx(100.0, abs=1e-9)
        assert np.all(np.abs(shown - matrix) <= unit * (1 + 1e-9))
        # Row totals (the true-class sizes) are themselves rounded, not off by several units.
        assert np.all(np.abs(shown.sum(axis=1) - matrix.sum(axis=1)) < unit + 1e-9)
        assert np.allclose(shown * 10**decimals, np.round(shown * 10**decimals))


def test_rounded_counts_give_equal_class_sizes_for_equal_priors() -> None:
    three = SyntheticSpace(3, radius=0.15, class_names=("bus", "car", "van"))
    left = comparison_charts.rounded_counts(three.confusion([0.5, 0.4, 0.3]), 1)
    right = comparison_charts.rounded_counts(three.confusion([0.3, 0.45, 0.4]), 1)
    assert (
        np.round(left.sum(axis=1), 6).tolist()
        == np.round(right.sum(axis=1), 6).tolist()
        == [33.4, 33.3, 33.3]
    )


def test_rounded_counts_round_each_group_of_a_fair_query_to_100() -> None:
    space = SyntheticSpace(2, radius=0.2, priors=[0.7, 0.3], n_groups=3)
    confusion = space.confusion([[0.8, 0.6], [0.7, 0.75], [0.61, 0.66]])
    shown = comparison_charts.rounded_counts(confusion, 0)
    assert shown.shape == (3, 2, 2)
    assert shown.sum(axis=(1, 2)).tolist() == [100.0, 100.0, 100.0]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([[50.0, 10.0], [10.0, 10.0]], "sum to 100"),
        ([[50.0, 50.0]], "shape"),
        ([[110.0, -10.0], [0.0, 0.0]], "non-negative"),
        ([[np.nan, 50.0], [25.0, 25.0]], "finite"),
        ("lots", "numeric"),
    ],
)
def test_rounded_counts_reject_matrices_that_are_not_counts_out_of_100(bad: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        comparison_charts.rounded_counts(bad)  # type: ignore[arg-type]


def test_rounded_counts_reject_unsupported_precision() -> None:
    with pytest.raises(ValueError, match="decimals"):
        comparison_charts.rounded_counts(_confusion([0.6, 0.6]), 3)


def test_display_decimals_uses_integers_when_they_are_faithful() -> None:
    assert comparison_charts.display_decimals(_confusion([0.82, 0.61]), _confusion([0.70, 0.79])) == 0


def test_display_decimals_adds_decimals_so_a_small_difference_stays_visible() -> None:
    left, right = _confusion([0.7000, 0.6000]), _confusion([0.7040, 0.5920])
    assert np.array_equal(
        comparison_charts.rounded_counts(left, 0), comparison_charts.rounded_counts(right, 0)
    )
    decimals = comparison_charts.display_decimals(left, right)
    assert decimals >= 1
    assert not np.array_equal(
        comparison_charts.rounded_counts(left, decimals), comparison_charts.rounded_counts(right, decimals)
    )


def test_display_decimals_never_inverts_or_invents_a_difference() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        left_rates = rng.uniform(0.4, 0.9, size=3)
        right_rates = left_rates + rng.normal(scale=0.003, size=3) * rng.integers(0, 2, size=3)
        space = SyntheticSpace(3, radius=0.2)
        left, right = space.confusion(np.clip(left_rates, 0, 1)), space.confusion(np.clip(right_rates, 0, 1))
        decimals = comparison_charts.display_decimals(left, right)
        shown = np.sign(
            comparison_charts.rounded_counts(left, decimals)
            - comparison_charts.rounded_counts(right, decimals)
        )
        exact = np.where(
            np.abs(left - right) <= comparison_charts.SAME_COUNT_ATOL, 0.0, np.sign(left - right)
        )
        if decimals < comparison_charts.DISPLAY_DECIMALS[-1]:
            assert np.array_equal(shown, exact)


def _one_by_one(confusion: np.ndarray, decimals: int) -> np.ndarray:
    """The rounding rule matrix by matrix and row by row (`apportion` alone): the reference the batched
    rounding must match bit for bit."""
    unit = 10.0**decimals
    result = np.empty_like(confusion)
    for index, matrix in enumerate(confusion):
        scaled = matrix * (100.0 * unit / matrix.sum())
        row_units = apportion(scaled.sum(axis=1), round(100.0 * unit))
        for row in range(matrix.shape[0]):
            result[index, row] = apportion(scaled[row], int(row_units[row])) / unit
    return result


def _carried_one_by_one(confusion: np.ndarray) -> int | None:
    for decimals in DISPLAY_DECIMALS[:-1]:
        steps = round(100.0 * 10**decimals)
        exact = True
        for matrix in confusion:
            sizes = matrix.sum(axis=1)
            shown_sizes = apportion(sizes * (steps / matrix.sum()), steps)
            rates = np.divide(np.diagonal(matrix), sizes, out=np.zeros_like(sizes), where=sizes > 0.0)
            values = rates * shown_sizes
            exact = bool(np.allclose(values, np.round(values), rtol=0.0, atol=comparison_charts.ON_GRID_ATOL))
            if not exact:
                break
        if exact:
            return decimals
    return None


def _shown_one_by_one(left: np.ndarray, right: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    left_carries, right_carries = _carried_one_by_one(left), _carried_one_by_one(right)
    at_least = 0 if left_carries is None or right_carries is None else max(left_carries, right_carries)
    difference = left - right
    wanted = np.where(np.abs(difference) <= comparison_charts.SAME_COUNT_ATOL, 0.0, np.sign(difference))
    for decimals in DISPLAY_DECIMALS:
        if decimals < at_least:
            continue
        shown_left, shown_right = _one_by_one(left, decimals), _one_by_one(right, decimals)
        if np.array_equal(np.sign(shown_left - shown_right), wanted):
            return decimals, shown_left, shown_right
    return DISPLAY_DECIMALS[-1], _one_by_one(left, 2), _one_by_one(right, 2)


@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_displayed_counts_are_the_one_by_one_rounding_bit_for_bit(n_groups: int) -> None:
    # Questions on each grid (whole people, tenths, hundredths), off every grid, and pairs a few
    # hundredths of a person apart, so that every precision is chosen and every rounding path taken.
    rng = np.random.default_rng(n_groups)
    compared = Counter()
    for trial in range(300):
        k = int(rng.integers(2, 5))
        priors = rng.dirichlet(np.full(k, 3.0), size=n_groups)
        space = SyntheticSpace(k, radius=min(0.2, 0.9 / k), priors=priors, n_groups=n_groups)
        grid = DisplayGrid.from_priors(priors, trial % 3)
        spheres = [space.sphere] * n_groups
        center = np.broadcast_to(space.sphere.center, grid.shape)
        try:
            first, other = grid.snap(center + rng.normal(scale=0.08, size=(2, *grid.shape)), spheres)
        except InvalidConfigError:  # a class too small for the sphere to hold a displayable point
            continue
        near = first + rng.normal(scale=0.002, size=grid.shape) * rng.integers(0, 2, size=grid.shape)
        second = near if trial % 2 else other
        if trial % 5 == 0:
            first = np.clip(first + rng.normal(scale=0.01, size=grid.shape), 0.0, 1.0)
        left, right = space.confusion(first), space.confusion(np.clip(second, 0.0, 1.0))
        shown_left, shown_right, decimals = comparison_charts.displayed_counts(left, right)
        expected = _shown_one_by_one(np.reshape(left, (n_groups, k, k)), np.reshape(right, (n_groups, k, k)))
        assert decimals == expected[0]
        assert (
            shown_left.tobytes() == expected[1].tobytes() and shown_right.tobytes() == expected[2].tobytes()
        )
        assert shown_left.shape == np.shape(left)
        compared[decimals] += 1
    assert set(compared) == set(DISPLAY_DECIMALS)


# ---- Sankey ---------------------------------------------------------------------------------------


def test_sankey_flows_add_up_to_100_and_match_the_matrix() -> None:
    counts = comparison_charts.rounded_counts(_confusion([0.82, 0.61]), 0)
    figure = comparison_charts.sankey_figure(counts, NAMES, population="patients")
    trace = figure["data"][0]
    assert trace["type"] == "sankey"
    link = trace["link"]
    assert sum(link["value"]) == pytest.approx(100.0)
    for source, target, value in zip(link["source"], link["target"], link["value"], strict=True):
        assert value == counts[source, target - 2]
    assert sorted(zip(link["source"], link["target"], strict=True)) == [(0, 2), (0, 3), (1, 2), (1, 3)]
    # The short labels charts.js writes on the flows are the same counts.
    assert [float(label) for label in link["label"]] == link["value"]


def test_sankey_boxes_carry_class_names_and_totals() -> None:
    counts = comparison_charts.rounded_counts(_confusion([0.82, 0.61]), 0)
    labels = comparison_charts.sankey_figure(counts, NAMES)["data"][0]["node"]["label"]
    true_totals, predicted_totals = counts.sum(axis=1), counts.sum(axis=0)
    assert labels == [
        f"Actually benign<br>{true_totals[0]:.0f} in total",
        f"Actually malignant<br>{true_totals[1]:.0f} in total",
        f"Predicted benign<br>{predicted_totals[0]:.0f} in total",
        f"Predicted malignant<br>{predicted_totals[1]:.0f} in total",
    ]
    assert true_totals.tolist() == [65.0, 35.0]


def test_sankey_colours_follow_the_class_and_mark_wrong_flows_without_hue_alone() -> None:
    counts = comparison_charts.rounded_counts(_confusion([0.8, 0.6]), 0)
    trace = comparison_charts.sankey_figure(counts, NAMES, population="patients")["data"][0]
    assert trace["node"]["color"] == [common.class_color(0), common.class_color(1)] * 2
    for source, target, color, text in zip(
        trace["link"]["source"],
        trace["link"]["target"],
        trace["link"]["color"],
        trace["link"]["customdata"],
        strict=True,
    ):
        predicted = target - 2
        red, green, blue = (int(common.class_color(predicted)[i : i + 2], 16) for i in (1, 3, 5))
        assert color.startswith(f"rgba({red},{green},{blue},")
        alpha = float(color.rsplit(",", 1)[1].rstrip(")"))
        correct = source == predicted
        assert ("(correct)" in text) is correct and ("(wrong)" in text) is not correct
        assert alpha == (0.75 if correct else 0.35)
        assert "patients" in text
    # Class i sits at the same height on both sides, so correct flows run straight across.
    node = trace["node"]
    assert node["y"][:2] == node["y"][2:]
    assert node["x"][0] < node["x"][2]


def test_sankey_leaves_out_empty_flows() -> None:
    counts = [[65.0, 0.0], [5.0, 30.0]]
    link = comparison_charts.sankey_figure(counts, NAMES)["data"][0]["link"]
    assert (0, 3) not in set(zip(link["source"], link["target"], strict=True))
    assert sum(link["value"]) == pytest.approx(100.0)


def test_sankey_rejects_a_class_name_count_that_does_not_match() -> None:
    with pytest.raises(ValueError, match="class names"):
        comparison_charts.sankey_figure(_confusion([0.8, 0.6]), ["benign"])


# ---- bar chart ------------------------------------------------------------------------------------


def test_bar_chart_shows_the_same_numbers_grouped_by_true_class() -> None:
    counts = comparison_charts.rounded_counts(_confusion([0.82, 0.61]), 0)
    figure = comparison_charts.bar_figure(counts, NAMES, population="patients", y_max=60)
    traces = [trace for trace in figure["data"] if not trace["showlegend"]]
    legend = [trace for trace in figure["data"] if trace["showlegend"]]
    names = [
        f"Predicted benign ({counts[:, 0].sum():.0f})",
        f"Predicted malignant ({counts[:, 1].sum():.0f})",
    ]
    assert [trace["name"] for trace in traces] == names
    # The legend shows plain class colours and explains the hatching once (it carries no data).
    assert [trace["name"] for trace in legend] == [*names, "Wrong prediction (hatched)"]
    assert [trace["marker"]["pattern"]["shape"] for trace in legend] == ["", "", "/"]
    assert all(trace["y"] == [None] for trace in legend)
    assert sum(sum(trace["y"]) for trace in traces) == pytest.approx(100.0)
    for j, trace in enumerate(traces):
        assert trace["y"] == counts[:, j].tolist()
        assert trace["x"] == ["Actually benign<br>(65 in total)", "Actually malignant<br>(35 in total)"]
        assert trace["marker"]["color"] == common.class_color(j)
        shapes = trace["marker"]["pattern"]["shape"]
        assert [shape == "" for shape in shapes] == [i == j for i in range(2)]
        assert [("correct" in text) for text in trace["text"]] == [i == j for i in range(2)]
    layout = figure["layout"]
    assert layout["barmode"] == "group"
    assert layout["yaxis"]["title"]["text"] == "Patients (out of 100)"
    assert layout["yaxis"]["range"][1] >= 60


def test_bar_chart_rejects_a_non_positive_scale() -> None:
    with pytest.raises(ValueError, match="y_max"):
        comparison_charts.bar_figure(_confusion([0.8, 0.6]), NAMES, y_max=0)


def test_counts_table_lists_every_cell_with_totals() -> None:
    counts = comparison_charts.rounded_counts(_confusion([0.82, 0.61]), 0)
    table = comparison_charts.counts_table(counts, NAMES)
    assert table["columns"] == NAMES
    assert [row["true_class"] for row in table["rows"]] == NAMES
    assert [[cell["value"] for cell in row["cells"]] for row in table["rows"]] == [
        [f"{value:.0f}" for value in row] for row in counts
    ]
    assert [row["total"] for row in table["rows"]] == ["65", "35"]
    assert table["total"] == "100"
    assert [cell["correct"] for row in table["rows"] for cell in row["cells"]] == [True, False, False, True]


# ---- the comparison view --------------------------------------------------------------------------


def test_comparison_view_labels_sides_a_and_b_and_shares_precision_and_scale() -> None:
    view = comparison_charts.comparison_view(_comparison([0.82, 0.61], [0.70, 0.79]))
    assert [side["label"] for side in view["sides"]] == ["Classifier A", "Classifier B"]
    assert [side["key"] for side in view["sides"]] == ["left", "right"]
    scales = {side["panels"][0]["bar"]["layout"]["yaxis"]["range"][1] for side in view["sides"]}
    assert len(scales) == 1
    assert view["decimals"] == 0
    json.dumps(view)  # JSON-safe all the way down (no numpy scalars)


def test_comparison_view_draws_one_panel_per_group_for_fairness_studies() -> None:
    space = SyntheticSpace(2, radius=0.2, priors=[0.7, 0.3], n_groups=2, group_names=("women", "men"))
    left, right = [[0.8, 0.6], [0.7, 0.75]], [[0.72, 0.7], [0.66, 0.8]]
    view = comparison_charts.comparison_view(
        {
            "seq": 2,
            "left": {"rates": left, "confusion": space.confusion(left).tolist()},
            "right": {"rates": right, "confusion": space.confusion(right).tolist()},
            "class_names": ["no default", "default"],
            "group_names": ["women", "men"],
            "population": "applicants",
            "practice": False,
        }
    )
    for side in view["sides"]:
        assert [panel["group"] for panel in side["panels"]] == ["women", "men"]
        for panel in side["panels"]:
            assert sum(panel["sankey"]["data"][0]["link"]["value"]) == pytest.approx(100.0)
    ids = [panel["id"] for side in view["sides"] for panel in side["panels"]]
    assert len(set(ids)) == 4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"class_names": ["benign"]}, "class names"),
        ({"group_names": ["women", "men"]}, "group names"),
        ({"population": "  "}, "population"),
        ({"right": {"confusion": [[100.0]]}}, "shape"),
        ({"left": {}}, "missing"),
    ],
)
def test_comparison_view_rejects_inconsistent_input(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        comparison_charts.comparison_view(_comparison([0.8, 0.6], [0.7, 0.7], **change))


def _render_partial(comparison: dict[str, object]) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROOT / "templates"), autoescape=True)
    configure_templates(env)
    env.filters["figure_json"] = figure_json  # as app.main registers it
    return env.get_template("sessions/_comparison.html").render(
        question=comparison_charts.comparison_view(comparison)
    )


def test_partial_embeds_each_figure_as_json_next_to_its_container() -> None:
    comparison = _comparison([0.82, 0.61], [0.70, 0.79])
    html = _render_partial(comparison)
    view = comparison_charts.comparison_view(comparison)
    containers = re.findall(r'data-figure="([^"]+)"', html)
    assert len(containers) == 4
    for figure_id in containers:
        match = re.search(rf'<script type="application/json" id="{figure_id}">(.*?)</script>', html, re.S)
        assert match is not None
        side, kind = figure_id.split("-")[1], figure_id.rsplit("-", 1)[1]
        panel = next(s for s in view["sides"] if s["key"] == side)["panels"][0]
        assert json.loads(match.group(1)) == json.loads(json.dumps(panel[kind]))
    # No inline JavaScript: every <script> is data.
    assert re.findall(r"<script(?![^>]*application/json)", html) == []
    assert "Classifier A" in html and "Classifier B" in html
    assert not re.search(r"\b(first|second)\b", html, re.I)
    assert html.count("<table") == 2 and "Actually malignant" in html


def test_partial_marks_practice_questions() -> None:
    assert 'data-testid="practice-banner"' in _render_partial(
        _comparison([0.8, 0.6], [0.7, 0.7], practice=True)
    )
    assert 'data-testid="practice-banner"' not in _render_partial(_comparison([0.8, 0.6], [0.7, 0.7]))


def test_partial_escapes_study_wording_in_html_and_in_chart_json() -> None:
    html = _render_partial(
        _comparison([0.8, 0.6], [0.7, 0.7], class_names=["<b>ok</b>", "</script><i>x"], population="<p>")
    )
    assert "<b>ok</b>" not in html and "</script><i>" not in html and "<p>" not in html
    assert "&lt;b&gt;ok&lt;/b&gt;" in html


def test_plotly_bundle_still_honours_the_strict_csp_style_hooks() -> None:
    """The partial's <link>/<template> ids must match what the installed plotly.js checks for."""
    bundle = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
    partial = (ROOT / "templates" / "sessions" / "_comparison.html").read_text(encoding="utf-8")
    assert '"plotly.js-style-"' in bundle and ".no-inline-styles" in bundle
    assert 'id="plotly.js-style-global" class="no-inline-styles"' in partial
    template_id = re.search(r'<template id="([0-9a-f]{64})">', partial)
    assert template_id is not None and f'document.getElementById("{template_id.group(1)}")' in bundle
    version = re.search(r"plotly\.js v([\d.]+)", bundle)
    css = (ROOT / "static" / "css" / "plotly.css").read_text(encoding="utf-8")
    assert version is not None and f"plotly.js v{version.group(1)} " in css


# ---- result charts --------------------------------------------------------------------------------


def test_metric_weights_figure_has_one_bar_per_class_in_class_colours() -> None:
    trace = result.metric_weights_figure([0.6, 0.8], NAMES)["data"][0]
    assert trace["x"] == NAMES and trace["y"] == [0.6, 0.8]
    assert trace["marker"]["color"] == [common.class_color(0), common.class_color(1)]
    with pytest.raises(ValueError, match="class names"):
        result.metric_weights_figure([0.6, 0.8, 0.1], NAMES)


def test_quadratic_heatmap_is_symmetric_around_zero_and_labelled() -> None:
    B = [[-0.3, 0.1], [0.1, -0.2]]
    trace = result.quadratic_heatmap_figure(B, NAMES, title="B")["data"][0]
    assert trace["z"] == B and trace["x"] == NAMES and trace["y"] == NAMES
    assert trace["zmin"] == -0.3 and trace["zmax"] == 0.3
    assert trace["text"][0][1] == "0.100"
    with pytest.raises(ValueError, match="square"):
        result.quadratic_heatmap_figure([[1.0, 2.0]], NAMES)


def test_axes_of_names_stay_categories_when_the_names_look_like_numbers() -> None:
    """Classes "0" and "1", or a participant code "1042", would make plotly guess a numeric axis (names as
    positions, the other names NaN); every axis of names says it holds categories."""
    numeric = ["0", "1"]
    assert result.metric_weights_figure([0.6, 0.8], numeric)["layout"]["xaxis"]["type"] == "category"
    heatmap = result.quadratic_heatmap_figure([[1.0, 0.0], [0.0, 1.0]], numeric)["layout"]
    assert heatmap["xaxis"]["type"] == heatmap["yaxis"]["type"] == "category"
    costs = result.mistake_cost_figure(["one 0", "one 1"], [1.0, 2.0], [None, None], range_label="range")
    assert costs["layout"]["yaxis"]["type"] == "category"
    ranking = monitor_charts.ranking_figure(["C1", "C2"], ["a", "b"], ["accuracy", "1042"], [[1, 2], [2, 1]])
    layout = ranking["figure"]["layout"]
    assert layout["xaxis"]["type"] == layout["yaxis"]["type"] == "category"
    boxes, agreement = monitor_charts.coefficients_figures({"0": [0.5]}, [("40417712", 80.0, 60.0, 90.0)])
    assert boxes["figure"]["layout"]["yaxis"]["type"] == "category"
    assert agreement["figure"]["layout"]["xaxis"]["type"] == "category"
    assert monitor_charts.agreement_figure([("1", 80.0, None, None)])["figure"]["layout"]["xaxis"][
        "type"
    ] == ("category")


def test_heatmap_of_rounding_noise_reads_as_zero() -> None:
    trace = result.quadratic_heatmap_figure([[-5e-17, 0.0], [0.0, -1e-17]], NAMES)["data"][0]
    assert trace["zmax"] == result.HEATMAP_FLOOR and trace["text"][0][0] == "0.000"


def test_mistake_cost_figure_labels_every_bar_and_makes_room_for_the_names() -> None:
    names = ["one benign patient", "one malignant patient with a very long class name"]
    figure = result.mistake_cost_figure(names, [1.0, 3.6], [None, (3.1, 4.2)], range_label="95% credible")
    trace, layout = figure["data"][0], figure["layout"]
    assert trace["y"] == names and trace["text"] == ["1.0×", "3.6×"]
    assert layout["yaxis"]["automargin"] and layout["xaxis"]["automargin"]
    assert trace["error_x"]["array"] == pytest.approx([0.0, 0.6])
    assert trace["error_x"]["arrayminus"] == pytest.approx([0.0, 0.5])
    assert "95% credible 3.1× to 4.2×" in trace["customdata"][1]
    assert layout["xaxis"]["range"][1] >= 4.2
    with pytest.raises(ValueError, match="non-negative"):
        result.mistake_cost_figure(names, [1.0, -1.0], [None, None], range_label="x")


def test_pair_heatmaps_are_titled_with_group_names_and_accept_json_keys() -> None:
    B = [[0.2, 0.0], [0.0, 0.1]]
    figures = result.pair_heatmap_figures({"1,2": B, (0, 1): B, "0,2": B}, NAMES, ["women", "men", "other"])
    assert [title for title, _ in figures] == [
        "Unfairness weights between women and men",
        "Unfairness weights between women and other",
        "Unfairness weights between men and other",
    ]
    with pytest.raises(ValueError, match="out of range"):
        result.pair_heatmap_figures({(0, 3): B}, NAMES, ["women", "men"])


def test_tradeoff_figure_splits_the_whole_between_performance_and_fairness() -> None:
    traces = result.tradeoff_figure(0.3)["data"]
    assert [trace["x"][0] for trace in traces] == pytest.approx([0.7, 0.3])
    assert traces[1]["marker"]["pattern"]["shape"] == "/"
    # Both segments keep their colour: stripes overlay it (the default replaced it with nothing).
    assert all(trace["marker"]["pattern"]["fillmode"] == "overlay" for trace in traces)
    assert [trace["marker"]["color"] for trace in traces] == [
        common.OKABE_ITO["blue"],
        common.OKABE_ITO["orange"],
    ]
    with pytest.raises(ValueError, match="lambda"):
        result.tradeoff_figure(1.5)


def test_an_unsettled_tradeoff_bar_draws_the_range_instead_of_one_split() -> None:
    traces = result.tradeoff_figure(0.4, unsettled=(0.2, 0.7))["data"]
    assert [trace["x"][0] for trace in traces] == pytest.approx([0.3, 0.5, 0.2])
    assert [trace["name"] for trace in traces] == [
        "Predictive performance",
        "Not settled by your answers",
        "Fairness",
    ]
    # The parts are named, not given shares: each end's share is only a bound.
    assert [trace["text"] for trace in traces] == [[trace["name"]] for trace in traces]
    assert traces[1]["marker"]["color"] == common.GRID and traces[1]["textfont"]["color"] == common.INK
    assert "%" not in str([trace["text"] + [trace["hovertemplate"]] for trace in traces])


def test_progress_figure_counts_answered_and_remaining() -> None:
    traces = comparison_charts.progress_figure(7, 30)["data"]
    assert [trace["x"][0] for trace in traces] == [7, 23]
    assert comparison_charts.progress_figure(35, 30)["data"][1]["x"] == [0]
    with pytest.raises(ValueError, match="non-negative"):
        comparison_charts.progress_figure(-1, 30)


def test_class_colours_are_okabe_ito_and_distinct_for_the_first_classes() -> None:
    assert set(common.CLASS_COLORS) <= set(common.OKABE_ITO.values())
    assert len({common.class_color(i) for i in range(8)}) == 8
    assert common.class_color(8) == common.class_color(0)
    with pytest.raises(ValueError):
        common.class_color(-1)


def test_classifiers_asked_in_tenths_of_a_person_are_shown_with_their_tenths() -> None:
    # Adult women: 88.6 and 11.4 people in tenths. Rates on that grid whose whole-people picture would
    # order the cells the same way still keep their decimal, so the person reads the asked pair itself.
    space = SyntheticSpace(2, radius=0.2, priors=[0.8864, 0.1136])
    grid = DisplayGrid.from_priors(space.priors, 1)
    first = np.array([823 / 886, 31 / 114])
    second = np.array([812 / 886, 40 / 114])
    left, right = space.confusion(first), space.confusion(second)
    assert comparison_charts.carried_decimals(left) == 1 and comparison_charts.carried_decimals(right) == 1
    shown_left, shown_right, decimals = comparison_charts.displayed_counts(left, right)
    assert decimals == 1
    assert np.allclose(np.diagonal(shown_left), grid.counts(first) / 10)
    assert np.allclose(np.diagonal(shown_right), grid.counts(second) / 10)
    # Whole people stay whole, and rates on no grid keep the faithful rule.
    whole = DisplayGrid.from_priors(space.priors)
    on_people = space.confusion(whole.snap(space.sphere.center, space.sphere))
    assert comparison_charts.carried_decimals(on_people) == 0
    assert comparison_charts.carried_decimals(_confusion([0.8123457, 0.3012345])) is None
    assert comparison_charts.display_decimals(_confusion([0.82, 0.61]), _confusion([0.70, 0.79])) == 0


def test_the_decimals_note_says_why_the_counts_have_a_decimal() -> None:
    # A small difference: the decimal shows it.
    small = _comparison([0.7000, 0.6000], [0.7040, 0.5920])
    assert "so that every difference between the two classifiers shows" in _render_partial(small)
    assert not comparison_charts.comparison_view(small)["decimals_for_tenths"]
    # Classifiers asked in tenths of a person whose whole-people picture would be faithful: the decimal
    # is there because the study describes them to a tenth, and the note says so.
    tenths = DisplayGrid.from_priors(SPACE.priors, 1)
    first = tenths.snap(np.array([0.823, 0.314]), Sphere(np.array([0.8, 0.3]), 0.1))
    second = tenths.snap(np.array([0.751, 0.412]), Sphere(np.array([0.8, 0.3]), 0.1))
    asked = _comparison(first.tolist(), second.tolist())
    view = comparison_charts.comparison_view(asked)
    assert view["decimals"] == 1 and view["decimals_for_tenths"]
    html = _render_partial(asked)
    assert "described to a tenth" in html and "so that every difference" not in html
    # Whole people: no note at all.
    assert "comparison__note" not in _render_partial(_comparison([0.82, 0.61], [0.70, 0.79]))


def _pinned_pairs(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Confusion pairs of every kind the app shows (on each grid, off every grid, nearly tied, equal, with
    empty cells) and of the sizes whose sums numpy adds in its other orders (9 or more terms)."""
    pairs = []
    for trial in range(400):
        k = int(rng.integers(2, 11)) if trial % 4 == 0 else int(rng.integers(2, 4))
        n_groups = int(rng.integers(1, 4)) if trial % 3 == 0 else 1
        priors = rng.dirichlet(np.full(k, 3.0), size=n_groups)
        space = SyntheticSpace(k, radius=min(0.2, 0.9 / k), priors=priors, n_groups=n_groups)
        try:
            grid = DisplayGrid.from_priors(priors, trial % 3)
            center = np.broadcast_to(space.sphere.center, grid.shape)
            first, other = grid.snap(center + rng.normal(scale=0.08, size=(2, *grid.shape)), space.sphere)
        except InvalidConfigError:
            continue
        near = np.clip(
            first + rng.normal(scale=0.002, size=grid.shape) * (rng.random(grid.shape) < 0.5), 0, 1
        )
        second = [other, near, first][trial % 3]
        if trial % 5 == 0:
            first = np.clip(first + rng.normal(scale=0.01, size=grid.shape), 0.0, 1.0)
        left, right = space.confusion(first), space.confusion(second)
        if trial % 7 == 0:
            left = np.where(rng.random(left.shape) < 0.3, 0.0, left)
            left = left * (100.0 / left.sum(axis=(-2, -1), keepdims=True))
        pairs.append((left, right))
    return pairs


def test_displayed_counts_stay_bit_for_bit_what_they_were() -> None:
    # A digest of every displayed number (the API's JSON numbers included) over a fixed set of pairs,
    # recorded before the counting moved to Python floats: any change of a count, a decimal or a JSON
    # number shows here.
    digest = hashlib.sha256()
    for left, right in _pinned_pairs(np.random.default_rng(26)):
        nested_left, nested_right = left.tolist(), right.tolist()
        shown_left, shown_right, decimals = comparison_charts.displayed_counts(nested_left, nested_right)
        view = SessionView(
            session=None,  # type: ignore[arg-type]  # the API's query reads only the comparison
            config=None,  # type: ignore[arg-type]
            status=SessionStatus.ACTIVE,
            phase="questions",
            answered=1,
            estimated_total=2,
            next_seq=1,
            step=None,
            comparison={
                "seq": 1,
                "practice": False,
                "left": {"confusion": nested_left},
                "right": {"confusion": nested_right},
                "shown": comparison_charts.displayed_numbers(nested_left, nested_right),
            },
            result=None,
            can_undo=True,
        )
        numbers = {
            "decimals": decimals,
            "left": shown_left.tolist(),
            "right": shown_right.tolist(),
            "faithful": comparison_charts.display_decimals(left, right, keep_grid=False),
            "carried": [comparison_charts.carried_decimals(side) for side in (left, right)],
            "rounded": [
                comparison_charts.rounded_counts(left, places).tolist() for places in DISPLAY_DECIMALS
            ],
        }
        digest.update(json.dumps(numbers).encode())
        digest.update(orjson.dumps(view.to_api()["query"]))
    assert digest.hexdigest()[:16] == "5047e154fea28832"
