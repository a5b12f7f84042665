"""The lab: datasets, query spaces from data, simulations, benchmarks, timing and figures around the core.

The core (`elicitation`) is what a study runs; the lab is what reproduces and measures the paper's
experiments with it. The lab imports the core, never the other way round, and is where scikit-learn,
threadpoolctl and the garbage-collector tuning of the timing live.

Modules: `datasets` (bundled and uploaded tables), `feasible` (feasible spaces from data, the paper's
Section 3 and Appendix H), `spaces` (any space from its description), `simulation` (one simulated
elicitation), `log_replay` (answer-log documents, replayed offline), `benchmarks` (Section 6's runs),
`ranking` (Appendix H's ranking experiments), `timing` (cost of the core) and `figures` (Plotly figure
dicts of the reports).
"""

from .benchmarks import run_fair_benchmark, run_noise_benchmark, run_qpme_benchmark, summarize, trial_seed
from .datasets import DATASET_NAMES, Dataset, load_csv, load_dataset
from .feasible import DatasetSpace, FeasibleModel, build_space, fit_feasible_model
from .figures import benchmark_figures
from .log_replay import answer_log, replay_log
from .ranking import run_ranking_benchmark
from .simulation import ALGORITHMS, Simulation, build_elicitor, simulate
from .spaces import space_from_dict
from .timing import measure_timing

__all__ = [
    "ALGORITHMS",
    "DATASET_NAMES",
    "Dataset",
    "DatasetSpace",
    "FeasibleModel",
    "Simulation",
    "answer_log",
    "benchmark_figures",
    "build_elicitor",
    "build_space",
    "fit_feasible_model",
    "load_csv",
    "load_dataset",
    "measure_timing",
    "replay_log",
    "run_fair_benchmark",
    "run_noise_benchmark",
    "run_qpme_benchmark",
    "run_ranking_benchmark",
    "simulate",
    "space_from_dict",
    "summarize",
    "trial_seed",
]
