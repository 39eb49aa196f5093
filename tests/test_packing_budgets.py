"""Issue 40 item 4: packing budgets drawn from the length-grouped batches a GLUE trainer runs (``group_by_length``),
not from random batches (``fastpath.grouped_budgets``, ``least_padding``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from codeswitch.common.fastpath import first_fit, grouped_budgets, least_padding, sampled_budgets
from codeswitch.common.packed_classifier import PackRows


def _rows(needs, budgets):
    return sum(min(b for b in budgets if b >= n) for n in needs)


def test_least_padding_is_the_best_choice_of_budgets():
    rng = np.random.default_rng(0)
    needs = rng.integers(1, 40, 200).tolist()
    got = least_padding(needs, 40, 4)
    assert len(got) <= 4 and max(got) == 40
    brute = min(_rows(needs, c + (40,)) for c in itertools.combinations(sorted(set(needs) - {40}), 3))
    assert _rows(needs, got) == brute


def _grouped_batches(lengths, batch, rng):
    """The HF length-grouped sampler's batches of one epoch (megabatches of 50 batches, longest first inside)."""
    order, mega, out = rng.permutation(len(lengths)), 50 * batch, []
    for start in range(0, len(order), mega):
        chunk = sorted(order[start:start + mega], key=lambda i: -lengths[i])
        out += [lengths[chunk[i:i + batch]] for i in range(0, len(chunk), batch)]
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_grouped_budgets_pad_grouped_batches_less_than_random_ones(seed):
    rng = np.random.default_rng(seed)
    lengths = np.concatenate([rng.integers(5, 30, 4000), rng.integers(100, 230, 1000)])  # short pairs, some long
    kw = dict(max_length=230, width=256, seed=seed)
    grouped, random = grouped_budgets(lengths[:, None], 64, **kw), sampled_budgets(lengths[:, None], 64, **kw)
    assert len(grouped) <= 4 and max(grouped) == 64  # every batch fits: 64 sentences of ≤ 230 tokens, one a row
    needs = [first_fit(b.tolist(), 256)[1] for b in _grouped_batches(lengths, 64, np.random.default_rng(99))]
    assert _rows(needs, grouped) < 0.8 * _rows(needs, random)


def test_packrows_reads_grouped_budgets_when_the_trainer_groups():
    lengths = list(np.random.default_rng(2).integers(5, 200, 3000))
    kw = dict(batch_size=32, max_length=200, seed=7)
    assert PackRows.for_lengths(None, lengths, grouped=True, pad=object(), **kw).budgets == \
        grouped_budgets(np.asarray(lengths)[:, None], 32, max_length=200, width=256, seed=7)
    assert PackRows.for_lengths(None, lengths, pad=object(), **kw).budgets == \
        sampled_budgets(np.asarray(lengths)[:, None], 32, max_length=200, width=256, seed=7)
