"""Issue 40 item 6: each measured number of docs/performance.md and docs/cost.md comes from a record under
docs/bench/ that its paragraph names (the convention: ``benchmarks/traced.py``)."""

from __future__ import annotations

import pytest

from benchmarks.traced import DOCS, check, check_text

PERFORMANCE = DOCS[0].read_text(encoding="utf-8")


def test_every_measured_number_in_the_docs_is_traced_to_a_record():
    problems = check()
    assert not problems, "numbers without a record behind them:\n" + "\n".join(map(str, problems))


@pytest.mark.parametrize("planted, why", [
    # the example: a rate no record holds, beside a record that does not hold it
    ("The corpus encoder ran at 4,591 passages/s end to end (`docs/bench/gpu/memory.json`).", "not in"),
    # a number whose paragraph names no record at all
    ("Compiling made (a) 3.85× faster.", "names no record"),
    # a rounding the record does not give (the profile holds 85.674 µs)
    ("`aten::mm` took 85 µs a call (`docs/bench/gpu/profiles/det_ConCSE_step.txt`).", "not in"),
    # a record that does not exist
    ("1 M passages peaked at 2.0 GB (`docs/bench/cpu/memory_1m.json`).", "does not exist"),
])
def test_the_check_catches_a_planted_number(planted, why):
    before = check_text(PERFORMANCE, "performance.md")
    problems = [p for p in check_text(PERFORMANCE + "\n" + planted + "\n", "performance.md") if p not in before]
    assert problems and any(why in p.why for p in problems), problems
    assert problems[0].line == len(PERFORMANCE.splitlines()) + 2


@pytest.mark.parametrize("text", [
    "End to end 3,921 passages/s (`docs/bench/gpu/memory.json`).",  # in the record, at the precision written
    "Peak 1.74 GB for a million passages (`docs/bench/cpu/memory.json`).",  # the record's 1,744 MB, in GB
    "(a) 609.5 → 199.9 ms, 3.05× (`docs/bench/gpu/bench.json`).",  # a ratio of two numbers written beside it
    "The step must take ≤ 30 ms.",  # a bound
    "An assumed fixed cost of 4 ms a step.",  # a sentence that says it is an assumption
    "Run `python -m benchmarks --steps 5 --floor-ms 4`.",  # code
    "<!-- bench:x -->\n| 12 ms |\n<!-- /bench:x -->",  # a generated block (record --check)
    "The rows are in `docs/bench/gpu/bench.json`:\n\n- (b): 470.5 → 140.0 ms.",  # a list inherits its lead's records
])
def test_traced_and_exempt_numbers_pass(text):
    assert check_text(text) == []
