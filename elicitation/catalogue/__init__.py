"""One catalogue of elicitation algorithms: name -> version, declared parameters, builder, metric family.

`ALGORITHMS` lists every registered `Algorithm` (`builtin` registers this package's); `get_algorithm`
looks one up. Simulations, replays, the web app, the planner and the exports all build elicitors through
`Algorithm.build`. The metric families themselves live in `elicitation.families`.
"""

from __future__ import annotations

from . import builtin
from .params import REQUIRED, Param, validate_params
from .registry import ALGORITHMS, Algorithm, Setting, get_algorithm, group_tau, register

__all__ = [
    "ALGORITHMS",
    "PSD_TOLERANCE",
    "REQUIRED",
    "Algorithm",
    "Param",
    "Setting",
    "get_algorithm",
    "group_tau",
    "register",
    "tradeoff_pairs",
    "validate_params",
]

PSD_TOLERANCE = builtin.PSD_TOLERANCE
tradeoff_pairs = builtin.tradeoff_pairs
