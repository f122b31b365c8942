"""The split search's one scoring of plans (``uneven.search_level_alphas``): each plan evaluated
once (``evaluate_split``, counted), none past the deadline, and the evaluation of the plan of least
rank kept, so that the report reuses the returned plan's figures instead of scoring it again."""

from __future__ import annotations

from explorer.core.array import ArraySpec
from explorer.core.evaluate import evaluate_split
from explorer.core.network import Network
from explorer.core.split_rules import SplitRules

from .deadline import LATE, past


class Scorer:
    """``rank(plan)``: ``SplitRules.rank`` of its evaluation; ``moved(plan)``: the same, or ``LATE``
    (unscored) once ``deadline`` is seen passed (``cut``). ``keep(plan, ev)`` takes an evaluation
    made elsewhere (the start's, ``split_start.scored_start``). ``evaluation_of(plan)``: the kept
    evaluation where ``plan`` is the first plan of least rank scored (equal plans), else None."""

    def __init__(self, network: Network, array: ArraySpec, rules: SplitRules, deadline: float | None):
        self.network, self.array, self.rules, self.deadline = network, array, rules, deadline
        self.evaluations = 0
        self.cut = False
        self.kept = None  # (rank, plan, evaluation) of least rank so far

    def keep(self, plan, ev):
        self.evaluations += 1
        r = self.rules.rank(ev, self.array, plan)
        if self.kept is None or r < self.kept[0]:
            self.kept = (r, plan, ev)
        return r

    def rank(self, plan):
        return self.keep(plan, evaluate_split(self.network, self.array, plan, self.rules.weight_copies))

    def moved(self, plan):  # no evaluation past the deadline: never better (the rounds then end, nothing changed)
        if self.cut or past(self.deadline):
            self.cut = True
            return LATE
        return self.rank(plan)

    def evaluation_of(self, plan):
        return self.kept[2] if self.kept is not None and self.kept[1] == plan else None
