"""The Python snippets of the results and panel pages: load the study's export, score a model with a metric.

A snippet runs as it stands in a fresh interpreter with ``elicitation`` installed (and scikit-learn for its
last part), next to the file the page's download button saves; it never imports the web app. Its code holds
numbers, the server's own identifiers (the study's and a session's UUID in file names and keys) and fixed
text only: whose metric it is, and which class and group each number stands for, are page text beside it
(escaped like all page text), so nothing a participant or coordinator typed ever becomes code.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Study
from .monitor import ElicitedMetric

__all__ = ["Snippet", "consensus_snippet", "results_snippet"]

#: Labelled samples of the scoring example per class (and group).
_SAMPLES_PER_CLASS = 6
#: Every fifth example prediction is wrong (the next class): mistakes fall on different classes.
_MISTAKE_EVERY = 5


@dataclass(frozen=True)
class Snippet:
    """A page's snippet: ``code`` (numbers, server ids and fixed text only), the file it reads and the
    label of the button that downloads it, whose metric it loads (``None``: the first or the consensus),
    and the class and group names the page lists beside it in the code's numbering."""

    code: str
    file_name: str
    download: str
    participant: str | None
    classes: list[str]
    groups: list[str]


def _example(k: int, m: int) -> list[str]:
    """Labelled predictions covering every class (and every class in every group), as numbers."""
    y_true = [index % k for index in range(_SAMPLES_PER_CLASS * k * max(m, 1))]
    y_pred = [
        (label + 1) % k if index % _MISTAKE_EVERY == _MISTAKE_EVERY - 1 else label
        for index, label in enumerate(y_true)
    ]
    lines = [
        "# A model's predictions on labelled data (classes numbered as listed beside this code).",
        f"y_true = np.array({y_true})",
        f"y_pred = np.array({y_pred})",
    ]
    if m:
        groups = [(index // k) % m for index in range(len(y_true))]
        lines += [
            "# Each sample's group, numbered in the order listed beside this code.",
            f"groups = np.array({groups})",
        ]
    return lines


def _scoring(k: int, m: int) -> list[str]:
    """Score the example predictions, then rank two scikit-learn models by cross-validation."""
    labels = list(range(k))
    fair = ", sensitive_features=groups, groups=" + str(list(range(m))) if m else ""
    lines = [
        *_example(k, m),
        f"print(metric.score(y_true, y_pred, labels={labels}{fair}))"
        + ("  # a cost: lower is better" if m else "  # higher is better"),
        "",
        "# Rank scikit-learn models by the metric (needs scikit-learn).",
    ]
    if m:
        lines.append("import sklearn")
    lines += [
        "from sklearn.datasets import make_classification",
        "from sklearn.linear_model import LogisticRegression",
        "from sklearn.model_selection import cross_val_score",
        "from sklearn.tree import DecisionTreeClassifier",
        "",
        f"X, y = make_classification(n_samples=600, n_classes={k}, n_informative=4, n_clusters_per_class=1,",
        "                           random_state=0)",
        "models = [LogisticRegression(max_iter=1000), DecisionTreeClassifier(max_depth=4, random_state=0)]",
    ]
    if m:
        lines += [
            f"groups = np.argsort(np.argsort(X[:, 0])) * {m} // len(X)  # made-up groups 0 to {m - 1}",
            "# A fair metric's scorer needs each sample's group: scikit-learn routes it as metadata.",
            "with sklearn.config_context(enable_metadata_routing=True):",
            f"    scorer = metric.as_scorer(labels={labels})",
            "    for model in models:",
            "        scores = cross_val_score(model, X, y, cv=5, scoring=scorer,",
            '                                 params={"sensitive_features": groups})',
            "        print(model, scores.mean())  # the negative cost: greater is better",
        ]
    else:
        lines += [
            f"scorer = metric.as_scorer(labels={labels})",
            "for model in models:",
            "    print(model, cross_val_score(model, X, y, cv=5, scoring=scorer).mean())",
        ]
    return lines


def _names(study: Study) -> tuple[list[str], list[str]]:
    config = study.config
    return [str(name) for name in config["class_names"]], [
        str(name) for name in config.get("group_names") or []
    ]


def results_snippet(study: Study, members: list[ElicitedMetric]) -> Snippet:
    """Load the results CSV with `elicitation.load_results` and score with the first participant's metric."""
    classes, groups = _names(study)
    k, m = len(classes), len(groups)
    example = members[0] if members else None
    file_name = f"results-{study.id}.csv"
    tau = example.metric.get("tau") if example is not None else None
    if m and tau is None:
        # Without a finished session there are no prevalences to write down: the archive carries them.
        file_name = f"study-{study.id}.json"
    load = f"metrics = load_results({file_name!r}"
    load += f", tau={[[float(value) for value in row] for row in tau]})" if m and tau is not None else ")"
    pick = (
        f"metric = metrics[{str(example.session_id)!r}]  # the participant named beside this code"
        if example is not None
        else "metric = next(iter(metrics.values()))  # the first participant who finished"
    )
    lines = [
        "import numpy as np",
        "from elicitation import load_results",
        "",
        "# The study's export (the download button above), saved in the working directory;",
        "# metrics maps each included participant's session id to their elicited metric.",
        load,
        pick,
        "",
        *_scoring(k, m),
    ]
    participant = example.label if example is not None else None
    download = "Study archive (replayable)" if file_name.startswith("study-") else "Results CSV"
    return Snippet("\n".join(lines), file_name, download, participant, classes, groups)


def consensus_snippet(study: Study) -> Snippet:
    """Load the panel JSON's consensus metric with `Metric.from_dict` and score with it."""
    classes, groups = _names(study)
    file_name = f"panel-{study.id}.json"
    lines = [
        "import json",
        "",
        "import numpy as np",
        "from elicitation import Metric",
        "",
        "# The panel JSON (the download button above), saved in the working directory.",
        f"with open({file_name!r}, encoding={'utf-8'!r}) as handle:",
        "    panel = json.load(handle)",
        'metric = Metric.from_dict(panel["consensus"]["metric"])  # the panel\'s consensus metric',
        "",
        *_scoring(len(classes), len(groups)),
    ]
    return Snippet("\n".join(lines), file_name, "Panel JSON", None, classes, groups)
