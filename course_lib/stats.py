"""Paired bootstrap statistics over questions, and a verdict that names a winner only when the data allow it.

Every strategy is scored on the same questions, so strategies are compared question by question: a
resample draws the questions with replacement, `rng.integers(0, n, size=(resamples, n))` with
`rng = numpy.random.default_rng(seed)`, and every strategy is scored on the same draw (paired). The
95% interval of a mean is the middle 95% of its resampled means (percentiles 2.5 and 97.5). With the
same `resamples` and `seed` these are the intervals notebooks 08-13 and `benchmarks/context_methods.py`
computed.

Taught in notebooks/08_measuring_chunkers.ipynb, section 3 (the paired bootstrap and the verdict rule,
built by the learner, then used from this module).

A resample's means are computed from how often it draws each question (a counts matrix times the
per-question values), so 20 strategies x 500 questions x 10,000 resamples need one 10,000 x 500 matrix,
not 20 copies of it. Means so computed equal the notebooks' `diff[idx].mean(axis=1)` up to the last bit
of a float; two means closer than `TIE_TOLERANCE` (relative to the values' scale) count as a tie.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "DEFAULT_MARGIN",
    "DEFAULT_RESAMPLES",
    "EQUIVALENCE_LEVEL",
    "LEVEL",
    "MAX_QUESTIONS",
    "THRESHOLD",
    "Interval",
    "Verdict",
    "mean_interval",
    "mean_intervals",
    "paired_interval",
    "probability_best",
    "questions_for_margin",
    "questions_needed",
    "rank_order",
    "verdict",
    "within_margin",
]

DEFAULT_RESAMPLES = 10_000
WHOLE_DRAW = 20_000_000  # question draws held at once; a larger bootstrap draws its resamples in blocks
BLOCK = 256
LEVEL = 0.95  # interval level: the middle 95% of the resampled means
THRESHOLD = 0.9  # a winner is best, alone, in at least this share of the resamples
MAX_QUESTIONS = 10_000  # above this, questions_needed is None: no realistic number
Z_95 = 1.96
DEFAULT_MARGIN = 0.05  # "as good as the leader": the 90% interval of the difference within +/- 5 points (0.05)
EQUIVALENCE_LEVEL = 0.90  # two one-sided tests at 5% each: the middle 90% of the resampled differences
Z_90 = 1.6448536269514722  # NormalDist().inv_cdf(0.95): the 90% interval's half-width in standard errors
TIE_TOLERANCE = 1e-12


class Interval(NamedTuple):
    """A mean over questions and the bounds of its bootstrap interval."""

    mean: float
    low: float
    high: float


# --- The bootstrap ---


def _draw(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """How often each of n questions is drawn in each of `resamples` resamples, shape (resamples, n), as floats."""
    index = rng.integers(0, n, size=(resamples, n))
    index += np.arange(resamples, dtype=index.dtype)[:, None] * n
    return np.bincount(index.ravel(), minlength=resamples * n).reshape(resamples, n).astype(np.float64)


class _Resamples:
    """The bootstrap's draws as a matrix to multiply: `draws @ values` is counts @ values, where counts[r, q]
    is how often question q is drawn in resample r.

    Up to WHOLE_DRAW draws (10,000 resamples of 2,000 questions) the counts are drawn once and kept. Past
    that, each product draws them again from the same seed, BLOCK resamples at a time, so memory stays flat
    however many questions there are (the draws then come in blocks and can differ from one whole draw).
    """

    def __init__(self, n: int, resamples: int, seed: int):
        self.n, self.resamples, self.seed = n, resamples, seed
        self.whole = _draw(np.random.default_rng(seed), n, resamples) if n * resamples <= WHOLE_DRAW else None

    def __matmul__(self, values: np.ndarray) -> np.ndarray:
        if self.whole is not None:
            return self.whole @ values
        rng = np.random.default_rng(self.seed)
        sizes = [min(BLOCK, self.resamples - start) for start in range(0, self.resamples, BLOCK)]
        return np.concatenate([_draw(rng, self.n, size) @ values for size in sizes])


def _bounds(means: np.ndarray, level: float) -> np.ndarray:
    """The percentile bounds of the middle `level` of resampled means (along axis 0)."""
    tail = (100 - 100 * level) / 2
    return np.percentile(means, [tail, 100 - tail], axis=0)


def _interval(values: np.ndarray, counts: _Resamples, level: float) -> Interval:
    low, high = _bounds(counts @ values / len(values), level)
    return Interval(float(values.mean()), float(low), float(high))


def paired_interval(a: Any, b: Any, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                    level: float = LEVEL) -> Interval:
    """The mean of `a - b` over questions and its paired bootstrap interval (95% by default).

    `a` and `b` hold one strategy's per-question scores each, for the same questions in the same order.
    """
    a, b = _check_pair(a, b)
    _check_settings(resamples, seed, level)
    return _interval(a - b, _Resamples(len(a), resamples, seed), level)


def mean_interval(values: Any, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                  level: float = LEVEL) -> Interval:
    """One strategy's mean over questions and its bootstrap interval (95% by default)."""
    values = _check_values("values", values)
    _check_settings(resamples, seed, level)
    return _interval(values, _Resamples(len(values), resamples, seed), level)


def mean_intervals(per_question: Mapping[str, Any], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                   level: float = LEVEL) -> dict[str, Interval]:
    """Each series' mean and bootstrap interval, all from one draw of resamples (as `mean_interval` each)."""
    checked = _check_mean_intervals_args(per_question, resamples, seed, level)  # name -> values as an array
    counts = _Resamples(len(next(iter(checked.values()))), resamples, seed)
    return {name: _interval(values, counts, level) for name, values in checked.items()}


def _resampled_means(matrix: np.ndarray, counts: _Resamples) -> np.ndarray:
    """Resampled means of each row of `matrix` (strategies x questions): shape (resamples, strategies)."""
    return counts @ matrix.T / matrix.shape[1]


def _best_shares(means: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per strategy: share of resamples it is best in (ties shared), and share it is best in alone."""
    top = means.max(axis=1, keepdims=True)
    tied = means >= top - TIE_TOLERANCE * scale
    winners = tied.sum(axis=1, keepdims=True)
    return (tied / winners).mean(axis=0), (tied & (winners == 1)).mean(axis=0)


def _scale(matrix: np.ndarray) -> float:
    return max(1.0, float(np.abs(matrix).max()))


def probability_best(per_question: Mapping[str, Any], *, resamples: int = DEFAULT_RESAMPLES,
                     seed: int = 0) -> dict[str, float]:
    """Each strategy's share of resamples in which its mean is the highest; a tie shares the win equally."""
    checked = _check_per_question(per_question)
    _check_settings(resamples, seed)
    matrix = np.stack(list(checked.values()))
    shared, _ = _best_shares(_resampled_means(matrix, _Resamples(matrix.shape[1], resamples, seed)), _scale(matrix))
    return {name: float(p) for name, p in zip(checked, shared)}


def questions_needed(a: Any, b: Any) -> int | None:
    """Questions that would separate two strategies: n = ceil((1.96 s / d)^2), at least 1.

    d and s are the mean and the (sample) standard deviation of the per-question difference `a - b`.
    None when d == 0 (nothing to separate) or when n > 10,000 (no realistic number).
    """
    a, b = _check_pair(a, b)
    diff = a - b
    d, s = abs(float(diff.mean())), float(diff.std(ddof=1))
    if d == 0:
        return None
    n = math.ceil((Z_95 * s / d) ** 2)
    return max(n, 1) if n <= MAX_QUESTIONS else None


def questions_for_margin(a: Any, b: Any, margin: float) -> int | None:
    """The fewest questions at which half of new sets would show the 90% interval of `a - b` within +/- `margin`,
    if new questions differ as these do (the per-question difference keeps its mean d and sample deviation s; a
    set shows it when |mean| + 1.645 s / sqrt(n) <= margin, the mean normal). None when |d| >= margin or past
    10,000; 2 (a bootstrap's least) when s == 0."""
    a, b = _check_pair(a, b)
    _check_margin(margin)
    d, s = abs(float((a - b).mean())), float((a - b).std(ddof=1))
    if d >= margin or s == 0:
        return None if d >= margin else 2
    n = np.arange(2, MAX_QUESTIONS + 1)
    se, phi = s / np.sqrt(n), np.vectorize(lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2))))
    room = np.maximum(margin - Z_90 * se, 0.0)  # how far the mean may stray from zero and still be shown
    enough = np.flatnonzero(np.where(room > 0, phi((room - d) / se) - phi((-room - d) / se), 0.0) >= 0.5)
    return int(n[enough[0]]) if enough.size else None


def rank_order(means: Mapping[str, float], costs: Mapping[str, tuple[float, ...]], scale: float = 1.0) -> list[str]:
    """Best first: the highest mean; equal means (to 12 digits of `scale`) the cheaper first, then the name."""
    return sorted(means, key=lambda s: (-round(means[s] / scale, 12), costs[s], s))


# --- The verdict ---


@dataclass(frozen=True)
class Verdict:
    """The decision over strategies scored on the same questions.

    `winner` is the leader (highest mean) when it is best, alone, in at least `threshold` of the resamples
    and the interval of its difference to every other strategy lies above zero; otherwise None.
    `in_play` are the leader and every strategy whose interval against it includes zero; `ruled_out` those
    whose interval lies entirely below zero. `differences[s]` is the interval of s - leader, `intervals[s]`
    the interval of s's own mean, `p_best[s]` its share of resamples as best (ties shared) and
    `p_best_alone[s]` its share as the only best (the one the threshold applies to).
    `as_good`: the 90% interval of s - leader (`equivalence[s]`, two one-sided tests at 5%) lies within
    +/- `margin`; `cheapest_as_good` is the cheapest of them and the leader (None if none), else
    `margin_questions` would show `margin_candidate`. `cheapest_in_play` is data, no recommendation.
    """

    metric: str
    winner: str | None
    leader: str
    runner_up: str
    in_play: tuple[str, ...]
    ruled_out: tuple[str, ...]
    questions_needed: int | None
    cheapest_in_play: str
    questions: int
    intervals: Mapping[str, Interval]
    differences: Mapping[str, Interval]
    p_best: Mapping[str, float]
    p_best_alone: Mapping[str, float]
    resamples: int
    level: float
    threshold: float
    margin: float
    as_good: tuple[str, ...]
    equivalence: Mapping[str, Interval]
    cheapest_as_good: str | None
    margin_candidate: str | None
    margin_questions: int | None

    def state(self, strategy: str) -> str:
        """"winner", "leader", "as good as the leader", "in play" or "ruled out" (the first that applies)."""
        return ("winner" if self.winner == strategy else "leader") if strategy == self.leader else \
            "as good as the leader" if strategy in self.as_good else \
            "ruled out" if strategy in self.ruled_out else "in play"

    def as_dict(self) -> dict[str, Any]:
        """The JSON `verdict` object (the fields above but the intervals and shares)."""
        keys = ("metric", "winner", "leader", "in_play", "ruled_out", "questions_needed", "margin", "as_good",
                "equivalence", "cheapest_as_good", "margin_candidate", "margin_questions", "cheapest_in_play")
        return {key: list(v) if isinstance(v := getattr(self, key), tuple) else {s: [round(x, 6) for x in iv] for
                s, iv in v.items()} if key == "equivalence" else v for key in keys}

    def text(self) -> str:
        """The verdict as one paragraph for people."""
        lead, runner, pct = self.leader, self.runner_up, f"{100 * self.level:g}%"
        where = f"on {self.metric} over {self.questions} questions"
        share = f"{self.p_best_alone[lead]:.0%} of {self.resamples:,} resamples"
        if self.winner is not None:
            ahead = self.differences[runner]
            sentences = [f"{lead} wins {where}: best in {share}, and its {pct} interval against every other "
                         f"strategy lies above zero (closest: {_span(-ahead.mean, -ahead.high, -ahead.low)} "
                         f"over {runner})."]
        else:
            sentences = [f"no decision yet {where}: {lead} leads, best alone in {share} "
                         f"({self.threshold:.0%} needed)."]
            others = [s for s in self.in_play if s != lead]
            if others:
                sentences.append(f"Still in play ({pct} interval of the difference to {lead} includes zero): "
                                 + "; ".join(f"{s} {_span(*self.differences[s])}" for s in others) + ".")
            if self.ruled_out:
                sentences.append("Ruled out (interval entirely below zero): " + ", ".join(self.ruled_out) + ".")
            if self.questions_needed is None:
                sentences.append(f"No realistic number of questions would separate {lead} from {runner}.")
            else:
                sentences.append(f"About {self.questions_needed:,} questions would separate {lead} from {runner}.")
        sentences.append(self._margin_text())
        return " ".join(sentences)

    def _margin_text(self) -> str:
        """The sentence on the margin: who is shown as good as the leader and the cheapest of them, or why none."""
        lead, rule = self.leader, f"90% interval of the difference to {self.leader} within +/-{self.margin:.3f}"
        if self.as_good:
            shown = "; ".join(f"{s} {_span(*self.equivalence[s])}" for s in self.as_good)
            return f"As good as the leader ({rule}): {shown}. Cheapest of these and {lead}: {self.cheapest_as_good}."
        return f"No strategy shown as good as the leader yet ({rule}); " + (
            "no number of questions would show one: every observed difference exceeds the margin."
            if self.margin_candidate is None else f"about {self.margin_questions:,} questions would show "
            f"{self.margin_candidate}, if its per-question differences to {lead} kept their observed mean and spread "
            "(half of such sets would).")


def _span(mean: float, low: float, high: float) -> str:
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def verdict(per_question: Mapping[str, Any], *, costs: Mapping[str, Any], metric: str = "recall_at_k",
            resamples: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = LEVEL,
            threshold: float = THRESHOLD, margin: float = DEFAULT_MARGIN) -> Verdict:
    """Name a winner among strategies scored on the same questions, or say why there is none yet.

    `per_question` maps each strategy id to its per-question values of `metric` (higher is better); `costs`
    maps each to its cost (lower is cheaper; a tuple is compared in order), which picks `cheapest_as_good`.
    `margin` (in the metric's units) is the loss against the leader still counted as "as good". Strategies are
    ordered by `rank_order` (equal means: the cheaper first, then the name).
    """
    checked, cost = _check_verdict_args(per_question, costs, metric, resamples, seed, level, threshold)
    _check_margin(margin)
    names = list(checked)
    matrix = np.stack(list(checked.values()))
    n = matrix.shape[1]
    counts = _Resamples(n, resamples, seed)
    means = _resampled_means(matrix, counts)
    scale = _scale(matrix)
    shared, alone = _best_shares(means, scale)
    full = matrix.mean(axis=1)
    ranked = rank_order(dict(zip(names, full.tolist())), cost, scale)
    order = [names.index(s) for s in ranked]
    lead, runner = order[0], order[1]
    resampled = _resampled_means(matrix - matrix[lead], counts)
    bounds, close = _bounds(resampled, level), _bounds(resampled, EQUIVALENCE_LEVEL)
    differences = {names[i]: Interval(float(full[i] - full[lead]) if i != lead else 0.0,
                                      float(bounds[0, i]), float(bounds[1, i])) for i in range(len(names))}
    own = _bounds(means, level)
    intervals = {name: Interval(float(full[i]), float(own[0, i]), float(own[1, i])) for i, name in enumerate(names)}
    ruled_out = tuple(names[i] for i in order[1:] if differences[names[i]].high < 0)
    in_play = tuple(names[i] for i in order if names[i] not in ruled_out)
    winner = names[lead] if alone[lead] >= threshold and len(ruled_out) == len(names) - 1 else None
    equivalence = {names[i]: Interval(differences[names[i]].mean, float(close[0, i]), float(close[1, i]))
                   for i in order[1:]}
    as_good = tuple(s for s, iv in equivalence.items() if within_margin(iv, margin, scale))
    needed = {s: questions_for_margin(matrix[names.index(s)], matrix[lead], margin) for s in equivalence}
    candidate = None if as_good else min((s for s in equivalence if needed[s] is not None), default=None,
                                         key=lambda s: (needed[s], ranked.index(s)))
    return Verdict(
        metric=metric, winner=winner, leader=names[lead], runner_up=names[runner], in_play=in_play,
        ruled_out=ruled_out, questions_needed=questions_needed(matrix[lead], matrix[runner]),
        cheapest_in_play=min(in_play, key=lambda s: cost[s]), questions=n, intervals=intervals,
        differences={s: differences[s] for s in names if s != names[lead]},
        p_best={s: float(p) for s, p in zip(names, shared)}, p_best_alone={s: float(p) for s, p in zip(names, alone)},
        resamples=int(resamples), level=float(level), threshold=float(threshold), margin=float(margin),
        as_good=as_good, equivalence=equivalence,
        cheapest_as_good=min((names[lead], *as_good), key=lambda s: (cost[s], s)) if as_good else None,
        margin_candidate=candidate, margin_questions=None if candidate is None else needed[candidate])


def within_margin(difference: Sequence[float], margin: float, scale: float = 1.0) -> bool:
    """True when an interval (mean, low, high) lies within +/- `margin` (bounds included, to 12 digits of `scale`)."""
    _, low, high = difference
    return round((low + margin) / scale, 12) >= 0 and round((margin - high) / scale, 12) >= 0


# --- Argument checks: the error messages of the functions above, kept out of their way ---


def _check_values(name: str, values: Any) -> np.ndarray:
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a 1-D sequence or array of numbers, one per question, "
                        f"not {type(values).__name__}")
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must hold numbers only, one per question ({error})") from None
    if array.ndim != 1:
        raise ValueError(f"{name} has shape {array.shape}: pass one number per question (a 1-D array)")
    if len(array) < 2:
        raise ValueError(f"{name} has {len(array)} question(s): a bootstrap over questions needs at least 2")
    if not np.isfinite(array).all():
        bad = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValueError(f"{name}[{bad}] = {array[bad]}: every per-question value must be finite; "
                         "score a missed question as 0, do not leave it NaN")
    return array


def _check_pair(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = _check_values("a", a), _check_values("b", b)
    if len(a) != len(b):
        raise ValueError(f"a has {len(a)} questions but b has {len(b)}: a paired comparison needs the same "
                         "questions, in the same order, for both")
    return a, b


def _check_per_question(per_question: Any) -> dict[str, np.ndarray]:
    if not isinstance(per_question, Mapping):
        raise TypeError(f"per_question must be a mapping of strategy -> per-question values, "
                        f"not {type(per_question).__name__}")
    if len(per_question) < 2:
        raise ValueError(f"per_question has {len(per_question)} strategy(ies): a verdict compares at least 2")
    checked: dict[str, np.ndarray] = {}
    for name, values in per_question.items():
        if not isinstance(name, str):
            raise TypeError(f"per_question keys must be strategy ids (str), not {type(name).__name__}")
        checked[name] = _check_values(f"per_question[{name!r}]", values)
    lengths = {name: len(v) for name, v in checked.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"per_question's strategies have different numbers of questions ({lengths}): "
                         "score every strategy on the same questions, in the same order")
    return checked


def _check_settings(resamples: Any, seed: Any, level: Any = LEVEL, threshold: Any = THRESHOLD) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)):
        raise TypeError(f"resamples must be an int, not {type(resamples).__name__}")
    if resamples < 1:
        raise ValueError(f"resamples={resamples}: draw at least one resample (10,000 is the default)")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int (the same seed gives the same intervals), not {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed={seed}: use a seed >= 0")
    _check_share("level", level, LEVEL, one_allowed=False)
    _check_share("threshold", threshold, THRESHOLD, one_allowed=True)


def _check_share(name: str, value: Any, default: float, *, one_allowed: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise TypeError(f"{name} must be a number between 0 and 1, not {type(value).__name__}")
    if not (0 < value < 1 or (one_allowed and value == 1)):
        raise ValueError(f"{name}={value}: use 0 < {name} {'<=' if one_allowed else '<'} 1 (the default is {default})")


def _check_mean_intervals_args(per_question: Any, resamples: Any, seed: Any, level: Any) -> dict[str, np.ndarray]:
    if not isinstance(per_question, Mapping) or not per_question:
        raise TypeError("per_question must be a non-empty mapping of name -> per-question values")
    checked = {name: _check_values(f"per_question[{name!r}]", values) for name, values in per_question.items()}
    if len({len(v) for v in checked.values()}) > 1:
        raise ValueError("per_question's series have different numbers of questions; give each the same questions")
    _check_settings(resamples, seed, level)
    return checked


def _check_margin(margin: Any) -> None:
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)):
        raise TypeError(f"margin must be a number in the metric's units (0.05 = 5 points), not {type(margin).__name__}")
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin={margin}: use a positive number in the metric's units (default {DEFAULT_MARGIN})")


def _check_costs(costs: Any, names: Sequence[str]) -> dict[str, tuple[float, ...]]:
    if not isinstance(costs, Mapping):
        raise TypeError(f"costs must be a mapping of strategy -> cost (a number, or a tuple compared in order), "
                        f"not {type(costs).__name__}")
    missing, extra = sorted(set(names) - set(costs)), sorted(set(costs) - set(names))
    if missing or extra:
        raise ValueError(f"costs must name exactly the strategies of per_question; missing {missing}, "
                         f"unknown {extra}")
    checked = {}
    for name in names:
        cost = costs[name]
        parts = tuple(cost) if isinstance(cost, (tuple, list)) else (cost,)
        if not parts or any(isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating))
                            or not math.isfinite(p) for p in parts):
            raise TypeError(f"costs[{name!r}] = {cost!r}: use a finite number (e.g. returned tokens per "
                            "question) or a tuple of them (e.g. (index bytes, seconds))")
        checked[name] = tuple(float(p) for p in parts)
    return checked


def _check_verdict_args(per_question: Any, costs: Any, metric: Any, resamples: Any, seed: Any, level: Any,
                        threshold: Any) -> tuple[dict[str, np.ndarray], dict[str, tuple[float, ...]]]:
    checked = _check_per_question(per_question)
    if not isinstance(metric, str) or not metric:
        raise TypeError(f"metric must be a metric name (str), not {metric!r}")
    _check_settings(resamples, seed, level, threshold)
    return checked, _check_costs(costs, list(checked))
