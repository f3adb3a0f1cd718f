"""pass@k (unbiased estimator), group advantages and run summaries."""

from __future__ import annotations

import itertools
import math
import statistics
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlforge.stats import group_advantages, pass_at_k, pass_at_k_curve, summarize


def pass_at_k_by_enumeration(n: int, c: int, k: int) -> Fraction:
    """The definition: the share of k-subsets of the n samples holding at least one pass."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(any(samples[i] for i in s) for s in subsets), len(subsets))


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_is_the_share_of_k_subsets_with_a_pass(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(float(pass_at_k_by_enumeration(n, c, k)),
                                                       abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 400).flatmap(lambda n: st.tuples(
    st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_matches_the_binomial_formula(nck):
    n, c, k = nck
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-9, abs=1e-12)


def test_pass_at_k_edges_and_bad_arguments():
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 8) == 1.0  # fewer than 8 failures: any 8 hold a pass
    for bad in ((3, 4, 1), (3, 1, 0), (3, 1, 4)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def test_curve_averages_tasks_with_enough_samples():
    curve = pass_at_k_curve([(4, 1), (4, 0), (2, 2)], max_k=4)
    assert curve[1] == pytest.approx((0.25 + 0.0 + 1.0) / 3)
    # pass@3 of (4, 1) is 1 - C(3,3)/C(4,3) = 3/4; the 2-sample task has no pass@3.
    assert curve[3] == pytest.approx((0.75 + 0.0) / 2)
    assert curve[4] == pytest.approx(0.5)
    assert pass_at_k_curve([], max_k=2) == {1: None, 2: None}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=16))
def test_advantages_are_standardised_within_the_group(rewards):
    adv = group_advantages(rewards)
    assert [a is None for a in adv] == [r is None for r in rewards]
    valid = [a for a in adv if a is not None]
    if not valid:
        return
    assert statistics.fmean(valid) == pytest.approx(0.0, abs=1e-6)
    if any(a != 0.0 for a in valid):
        assert statistics.pstdev(valid) == pytest.approx(1.0, rel=1e-6)
    # Order is kept: a higher reward never gets a lower advantage.
    pairs = sorted((r, a) for r, a in zip(rewards, adv) if r is not None)
    assert all(a1 <= a2 + 1e-9 for (_, a1), (_, a2) in zip(pairs, pairs[1:]))


def test_advantages_of_a_uniform_group_are_zero():
    assert group_advantages([1.0, 1.0, None]) == [0.0, 0.0, None]
    assert group_advantages([0.0, 1.0]) == [-1.0, 1.0]


def fact(task, sample, outcome, reward, generator="g.a", split="train", error=None):
    return {"task_id": task, "sample": sample, "generator": generator, "split": split,
            "outcome": outcome, "reward": reward, "error_type": error,
            "prompt_tokens": 10, "completion_tokens": 2}


def test_summary_leaves_invalid_rollouts_out_of_policy_statistics():
    rollouts = [
        fact("t1", 0, "pass", 1.0), fact("t1", 1, "fail", 0.0),
        fact("t2", 0, "invalid", None, error="server_error"),
        fact("t2", 1, "timeout", 0.0, error="time_budget"),
        fact("t3", 0, "pass", 1.0, generator="g.b", split="test"),
        fact("t3", 1, "fail", 0.5, generator="g.b", split="test"),
    ]
    s = summarize(rollouts, samples=2)
    assert (s["rollouts"], s["valid"], s["pass"], s["fail"], s["timeout"], s["invalid"]) == \
        (6, 5, 2, 2, 1, 1)
    assert s["pass_rate"] == pytest.approx(2 / 5, abs=1e-6)
    assert s["mean_reward"] == pytest.approx(2.5 / 5, abs=1e-6)
    assert s["infra_error_rate"] == pytest.approx(1 / 6, abs=1e-6)  # rounded to 6 places
    assert s["errors"] == {"server_error": 1, "time_budget": 1}
    # t2 has one valid sample: it counts for pass@1 only.
    assert s["pass_at_k"]["1"] == pytest.approx((0.5 + 0.0 + 0.5) / 3, abs=1e-6)
    assert s["pass_at_k"]["2"] == pytest.approx((1.0 + 1.0) / 2, abs=1e-6)
    assert s["by_generator"]["g.b"]["pass_at_k"]["2"] == 1.0
    assert s["by_split"]["test"]["rollouts"] == 2 and s["tasks"] == 3
    assert s["prompt_tokens"] == 60 and s["completion_tokens"] == 12
