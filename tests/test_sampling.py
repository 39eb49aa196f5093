"""core.sampling: a row cap keeps the first rows or a seeded random sample, in file order, the same for every run."""

import pytest

from codeswitch.core.sampling import sample_indices, take


def test_head_keeps_the_first_rows_and_no_cap_keeps_all():
    assert take(list("abcdef"), 3) == ["a", "b", "c"]
    assert take(list("abc"), None, "random") == ["a", "b", "c"]
    assert take(list("abc"), 10, "random") == ["a", "b", "c"]


def test_random_is_a_seeded_sample_in_file_order():
    picked = sample_indices(1000, 50, "random")
    assert len(picked) == 50 == len(set(picked)) and picked == sorted(picked)
    assert picked == sample_indices(1000, 50, "random")  # the same rows every time (one fixed seed)
    assert picked != list(range(50))  # not the head
    assert max(picked) > 500  # drawn from the whole file, not its first block


def test_bad_rules_and_caps_are_refused():
    with pytest.raises(ValueError, match="train_sample: 'first'"):
        sample_indices(10, 2, "first")
    with pytest.raises(ValueError, match=">= 0"):
        sample_indices(10, -1, "random")
