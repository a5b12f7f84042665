"""Plotly figure dicts for benchmark reports (the command line renders them to HTML)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

__all__ = [
    "benchmark_figures",
]

_ERROR_TITLES: Final[Mapping[str, str]] = {
    "a": "||a - â||₂",
    "B": "||B - B̂||_F",
    "B_pairs": "Σ ||B^uv - B̂^uv||_F",
    "lam": "|λ - λ̂|",
    "C": "||C - Ĉ||_F",
}


def _box_figure(
    settings: Sequence[Mapping[str, Any]], error: str, label: Callable[[Mapping[str, Any]], str], title: str
) -> dict[str, Any]:
    traces = []
    for setting in settings:
        values = [
            r["errors"][error] for r in setting["records"] if r["failure"] is None and error in r["errors"]
        ]
        traces.append({"type": "box", "name": label(setting), "y": values, "boxpoints": "outliers"})
    return {
        "data": traces,
        "layout": {
            "title": {"text": title},
            "yaxis": {"title": {"text": _ERROR_TITLES.get(error, error)}},
            "showlegend": False,
        },
    }


def _queries_figure(
    settings: Sequence[Mapping[str, Any]], label: Callable[[Mapping[str, Any]], str]
) -> dict[str, Any]:
    names = [label(s) for s in settings]
    ours = [s["summary"]["queries"]["mean"] for s in settings]
    paper = [s["summary"].get("paper_queries") for s in settings]
    bound = [s["summary"].get("lower_bound") for s in settings]
    return {
        "data": [
            {"type": "bar", "name": "this implementation (mean)", "x": names, "y": ours},
            {"type": "bar", "name": "paper, Table 4", "x": names, "y": paper},
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "Theorem 2 lower bound",
                "x": names,
                "y": bound,
            },
        ],
        "layout": {
            "title": {"text": "Mean number of queries"},
            "barmode": "group",
            "yaxis": {"title": {"text": "queries"}},
        },
    }


def _mean_by_groups_figure(settings: Sequence[Mapping[str, Any]], error: str) -> dict[str, Any]:
    """Figure 3c-e's layout: mean error against k, one line per number of groups m."""
    traces = []
    for m in sorted({s["n_groups"] for s in settings}):
        cells = sorted((s for s in settings if s["n_groups"] == m), key=lambda s: s["n_classes"])
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"m={m}",
                "x": [s["n_classes"] for s in cells],
                "y": [s["summary"]["errors"].get(error, {}).get("mean") for s in cells],
            }
        )
    return {
        "data": traces,
        "layout": {
            "title": {"text": f"Fair QPME: mean {_ERROR_TITLES.get(error, error)} by k and m (Figure 3c-e)"},
            "xaxis": {"title": {"text": "number of classes k"}, "dtick": 1},
            "yaxis": {"title": {"text": _ERROR_TITLES.get(error, error)}},
        },
    }


def benchmark_figures(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Plotly figure dicts for a benchmark report, keyed by a file-name stem.

    ``qpme``: box plots of ``||a - a_hat||`` and ``||B - B_hat||_F`` per ``k`` (Figure 3a-b) and a query
    chart beside Table 4; ``fair``: box plots of the three errors per ``(k, m)``, their means against ``k``
    per ``m`` (Figure 3c-e) and the query chart; ``noise``: heat maps of the mean errors over
    ``varrho x eps_Omega`` per ``k``; ``ranking`` (the report of
    `elicitation.lab.ranking.run_ranking_benchmark`): grouped bars of mean NDCG and Kendall's tau per dataset
    and method.
    """
    kind = report.get("benchmark")
    settings = report.get("settings", [])
    figures: dict[str, dict[str, Any]] = {}
    if kind == "qpme":
        label: Callable[[Mapping[str, Any]], str] = lambda s: f"k={s['n_classes']}"  # noqa: E731
        figures["qpme_error_a"] = _box_figure(settings, "a", label, "QPME: error in a (Figure 3a)")
        figures["qpme_error_B"] = _box_figure(settings, "B", label, "QPME: error in B (Figure 3b)")
        figures["qpme_queries"] = _queries_figure(settings, label)
    elif kind == "fair":
        label = lambda s: f"k={s['n_classes']} m={s['n_groups']}"  # noqa: E731
        figures["fair_error_a"] = _box_figure(settings, "a", label, "Fair QPME: error in a (Figure 3c)")
        figures["fair_error_B_pairs"] = _box_figure(
            settings, "B_pairs", label, "Fair QPME: error in B^uv (Figure 3d)"
        )
        figures["fair_error_lam"] = _box_figure(settings, "lam", label, "Fair QPME: error in λ (Figure 3e)")
        figures["fair_queries"] = _queries_figure(settings, label)
        for error in ("a", "B_pairs", "lam"):
            figures[f"fair_mean_{error}"] = _mean_by_groups_figure(settings, error)
    elif kind == "ranking":
        datasets = report.get("datasets", {})
        methods = sorted({method for entry in datasets.values() for method in entry.get("methods", {})})
        for measure, title in (("ndcg_mean", "mean NDCG"), ("kendall_tau_mean", "mean Kendall's tau")):
            traces = [
                {
                    "type": "bar",
                    "name": method,
                    "x": list(datasets),
                    "y": [
                        entry.get("methods", {}).get(method, {}).get(measure) for entry in datasets.values()
                    ],
                }
                for method in methods
            ]
            figures[f"ranking_{measure.removesuffix('_mean')}"] = {
                "data": traces,
                "layout": {
                    "title": {"text": f"Ranking real classifiers (Appendix H): {title}"},
                    "barmode": "group",
                },
            }
    elif kind == "noise":
        for k in sorted({s["n_classes"] for s in settings}):
            cells = [s for s in settings if s["n_classes"] == k]
            radii = sorted({s["inner_radius"] for s in cells})
            levels = sorted({s["noise_level"] for s in cells})
            for error in ("a", "B"):
                z = [
                    [
                        next(s["summary"]["errors"][error]["mean"] for s in cells
                             if s["inner_radius"] == r and s["noise_level"] == e)
                        for r in radii
                    ]
                    for e in levels
                ]  # fmt: skip
                figures[f"noise_k{k}_error_{error}"] = {
                    "data": [
                        {
                            "type": "heatmap",
                            "x": [f"ϱ={r:g}" for r in radii],
                            "y": [f"ε_Ω={e:g}" for e in levels],
                            "z": z,
                            "colorscale": "Viridis",
                            "texttemplate": "%{z:.3f}",
                        }
                    ],
                    "layout": {
                        "title": {"text": f"QPME k={k}: mean {_ERROR_TITLES[error]} under noise"},
                        "xaxis": {"title": {"text": "inner radius ϱ"}},
                        "yaxis": {"title": {"text": "Definition 4 noise ε_Ω"}},
                    },
                }
    return figures
