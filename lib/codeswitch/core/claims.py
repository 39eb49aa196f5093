"""The paper's claim behind each table, checked against this run's numbers.

Every table states, in one line, the claim of the paper it supports and whether
the numbers of *this* run support it.  A claim is never typed as true or false:
a small function computes it from the table's long frame (``row, column, mean``)
and returns a :class:`Claim`, which :func:`codeswitch.report.save_table` renders
in the table's notes and records for ``INDEX.md``::

    claim = claims.greater(long, "ConCSE > SimCSE (average Spearman)",
                           pairs=[("ConCSE-mBERT", "SimCSE-mBERT")], columns=["Avg."], source="ConCSE §5.2")
    save_table(wide, "concse_table3", cfg, caption=..., long=long, claim=claim)

``holds`` is ``True`` (the numbers support the claim), ``False`` (they do not) or
``None`` (nothing to check: the table is not a claim of any paper, a needed
cell is missing, or a run behind the table did not learn); ``detail`` gives the numbers the verdict came from.

A verdict computed on runs that learned nothing says nothing about the paper: :func:`learned` (applied by
:func:`codeswitch.core.report.save_table` to each claim of a table, given its runs' learning entries) turns it into
"not checked: k of n runs did not learn (which)", the computed verdict and its numbers kept beside it ("computed on
them: …").  A run learned when it beat its baseline at all (:attr:`codeswitch.core.learning.Learning.beat_baseline`),
not by CI's margin.

Each claim is the paper's own, quoted or cited by file and section (``source``),
and checked the paper's way: where the paper says "significant", with its test
(Student's t-test over seeds for ConCSE, the paired t-test over queries for
ContrastiveMix).  Where the paper's *own* printed numbers contradict its words
(CalBERT's "all other architectures" beside CalBERT-IndicBERT's 0.530, say), the
contradicted cells are left out of the check and named in ``contradiction``,
computed from :mod:`codeswitch.core.reported`, never typed.

:data:`REGISTRY` holds every table's claim function (registered with
:func:`register` where the table is built); :func:`on_paper` feeds a table's
reported values through it, which is how ``tests/test_claims_reported.py`` keeps
the verdicts honest: on the papers' own numbers each says "supported" (with any
contradiction recorded), or "not checked" where the paper's numbers were lost.

A comparison's detail states direction and significance apart (:func:`tally`: "k/n comparisons go the paper's way;
m/n significant (test, α)"), and a stated magnitude is checked by one rule that scales with it (:func:`magnitude`:
same sign, within a factor of :data:`MAGNITUDE_FACTOR`), the paper's own arithmetic by :func:`arithmetic`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

SMOKE_NOTE = (
    "Smoke profile: small models, small (mostly synthetic) data and a few steps test the pipeline, not the papers; "
    "a claim's verdict is computed as in the paper profile and says nothing about the paper."
)
#: the note of a smoke run that read real data (``--set koglish_source=<a real copy>``): what it is, from its inputs
SMOKE_REAL_NOTE = (
    "Smoke profile settings (a few steps, small grids) on real data: {inputs}. The numbers come from these inputs, "
    "not from the paper's training budget; a claim's verdict is computed as in the paper profile."
)


def inputs_note(profile: str, inputs) -> str | None:
    """The note under a table on what its numbers are, read from the run's recorded inputs, not the profile's name.

    Under the smoke profile: :data:`SMOKE_NOTE` when the data are the project's synthetic stand-ins (or no inputs are
    recorded), followed by the models that ran (tiny ones built here or real pretrained ones); :data:`SMOKE_REAL_NOTE`
    when any data are real.  ``None`` under another profile."""
    from .provenance import describe_inputs, input_kinds

    if profile != "smoke":
        return None
    kinds = input_kinds(inputs)
    if not kinds or kinds["data"] in (None, "synthetic"):
        said = describe_inputs(kinds) if kinds else ""
        return SMOKE_NOTE + (f" Inputs: {said}." if said else "")
    return SMOKE_REAL_NOTE.format(inputs=describe_inputs(kinds))


def real_data(inputs) -> bool:
    """Whether the recorded inputs hold any real (not synthetic) data (:func:`codeswitch.core.provenance.input_kinds`)."""
    from .provenance import input_kinds

    kinds = input_kinds(inputs)
    return bool(kinds and kinds["real_data"])


@dataclass(frozen=True)
class Claim:
    text: str  # the paper's claim, one line
    holds: bool | None  # computed from the table's numbers; None = not checkable here
    detail: str = ""  # the numbers behind the verdict
    source: str = ""  # where the paper makes it (e.g. "ConCSE §5.2")
    contradiction: str = ""  # where the paper's own numbers contradict its words or each other (computed from core.reported)
    # how the smoke data decide this claim, one sentence from the list kept where the data are made (a paper package's
    # CONSTRUCTIONS, set with built_into where the table is built); "" = the data do not decide it
    built_in: str = ""
    # "k of n runs did not learn (which)": the runs behind the table that did not beat their baseline (set by learned,
    # holds then None); "" = every run learned, or none records a learning entry
    not_learned: str = ""
    computed: bool | None = None  # with not_learned: the verdict the numbers gave, shown as "computed on them: …"

    @property
    def verdict(self) -> str:
        if self.not_learned:
            return f"not checked: {self.not_learned}"
        return {True: "supported", False: "not supported", None: "not checked"}[self.holds]

    def _as_computed(self) -> "Claim":
        """This claim with the verdict its numbers gave (the runs' learning set aside)."""
        import dataclasses

        return dataclasses.replace(self, holds=self.computed, not_learned="", computed=None)

    @property
    def mark(self) -> str:
        return {True: "✓", False: "✗", None: "–"}[self.holds]

    def smoke_verdict(self, real_data: bool = False) -> str:
        """The verdict on the smoke profile's synthetic data, worded as what it is: an outcome, not a test of the paper
        (``real_data``: a smoke run on real data, "this run's real data").  A claim the synthetic data decide by how
        they were made (:attr:`built_in`) reads "built into the smoke data: <how>", never "holds" or "does not hold".
        Over runs that did not learn (:attr:`not_learned`, first): "not checked: k of n runs did not learn (which)"."""
        if self.not_learned:
            return f"not checked: {self.not_learned}"
        if self.built_in and not real_data:
            return f"built into the smoke data: {self.built_in}"
        data = "this smoke run's real data" if real_data else "the smoke data"
        return {True: f"holds on {data}", False: f"does not hold on {data}", None: "not checked"}[self.holds]

    def line(self, profile: str | None = None, *, real_data: bool = False) -> str:
        """The note line of a table: ``Claim (source): text — supported by this run (detail).``

        Under the smoke profile (``profile="smoke"``) the verdict reads "holds / does not hold on the smoke data" (on
        "this smoke run's real data" when ``real_data``: :func:`real_data` of its recorded inputs), or "built into the
        smoke data: <how>" for a claim the synthetic data decide (:attr:`built_in`), its numbers then "measured".
        Over runs that did not learn (:attr:`not_learned`): "not checked: k of n runs did not learn (which); computed
        on them: <the verdict the numbers gave> (detail)"."""
        src = f" ({self.source})" if self.source else ""
        built = profile == "smoke" and bool(self.built_in) and not real_data
        if self.not_learned:
            computed = self._as_computed()
            said = computed.smoke_verdict(real_data) if profile == "smoke" else computed.verdict
            verdict = f"not checked: {self.not_learned}; computed on them: {said}"
        elif profile == "smoke":
            verdict = self.smoke_verdict(real_data)
        else:
            verdict = {True: "**supported** by this run", False: "**not supported** by this run", None: "not checked"}[self.holds]
        detail = f"measured: {self.detail}" if built and self.detail else self.detail
        line = f"**Claim**{src}: {self.text} — {verdict}" + (f" ({detail})" if detail else "") + "."
        if self.contradiction:
            line += f" On the paper's own numbers: {self.contradiction}."
        return line

    def index_cell(self, profile: str | None = None, *, real_data: bool = False) -> str:
        """The verdict in ``INDEX.md``'s claim column: ``✓ supported`` / ``✗ not supported``; under the smoke profile
        the smoke verdict without a mark (a smoke outcome is no failure; "built into the smoke data: <how>" for a claim
        the synthetic data decide); over runs that did not learn, ``– not checked: k of n runs did not learn (which)``
        (the computed verdict is in the table's note)."""
        if profile == "smoke":
            return f"smoke: {self.smoke_verdict(real_data)}"
        return f"{self.mark} {self.verdict}"

    def as_dict(self) -> dict:
        out = {"text": self.text, "holds": self.holds, "detail": self.detail, "source": self.source}
        if self.contradiction:
            out["contradiction"] = self.contradiction
        if self.built_in:
            out["built_in"] = self.built_in
        if self.not_learned:
            out.update(not_learned=self.not_learned, computed=self.computed)
        return out


def built_into(claim: Claim | None, how: str | None) -> Claim | None:
    """``claim`` marked as decided by how the smoke data were made: ``how`` is its artifact's entry in the list kept
    where the data are made (``CONSTRUCTIONS.get(artifact)`` of :mod:`codeswitch.koglish.synthetic`,
    :mod:`codeswitch.contrastivemix.synthetic`, :mod:`codeswitch.calbert.standins`); ``None``/"": unchanged.

    The paper package passes it down where the table is built (the core reads no paper package).  Only the smoke
    profile on synthetic inputs shows it (:meth:`Claim.smoke_verdict`); real data and the other profiles keep the
    computed verdict."""
    import dataclasses

    return claim if claim is None or not how else dataclasses.replace(claim, built_in=how)


def learned(claim: Claim | None, runs: Iterable[tuple[str, Any]]) -> Claim | None:
    """``claim`` as it stands on the runs behind its table: unchanged when every run beat its baseline
    (:attr:`codeswitch.core.learning.Learning.beat_baseline`: a gain above 0, both scores finite; not CI's margin), else
    ``holds=None`` with :attr:`Claim.not_learned` "k of n runs did not learn (label: metric score vs baseline value;
    …)" (:func:`codeswitch.core.learning.not_learned`) and the computed verdict kept in :attr:`Claim.computed`, so the
    note reads "not checked: …; computed on them: …".

    ``runs``: ``(label, learning)`` per run of the table (:func:`codeswitch.core.learning.of_results`), ``learning``
    its ``result["learning"]``: one entry, or a mapping of named entries (the run learned when each beat its
    baseline; a missed one is named ``label · name``).  A run without an entry is not counted, and none at all
    leaves the claim unchanged.  Like :func:`built_into`, the paper package passes the entries down (the core reads no
    paper package)."""
    import dataclasses

    from .learning import not_learned

    missed = not_learned(runs)
    if claim is None or not missed:
        return claim
    return dataclasses.replace(claim, holds=None, computed=claim.computed if claim.not_learned else claim.holds,
                               not_learned=missed)


def means(long: pd.DataFrame) -> dict[tuple[str, str], float]:
    """``{(row, column): mean}`` of a long frame (cells not run left out)."""
    return {(str(r), str(c)): float(m) for r, c, m in zip(long["row"], long["column"], long["mean"]) if pd.notna(m)}


def _fmt(x: float) -> str:
    return f"{x:.2f}"


ALPHA = 0.05  # the significance level of every test a claim reads, unless the paper states another


@dataclass(frozen=True)
class Significance:
    """How a comparison's significance is read: ``test`` names it in the verdict line ("Student's t-test over seeds"),
    ``significant(better, worse, column)`` says whether the difference is significant at ``alpha`` (``None``: not
    testable there, for the reason ``untestable``: one seed, no ± in the paper, …)."""

    test: str
    significant: Callable[[str, str, str], bool | None]
    alpha: float = ALPHA
    untestable: str = "no ± over two seeds or more"


def seed_ttest(long: pd.DataFrame, *, ddof: int = 1, stats_column: Callable[[str], str] | None = None,
               alpha: float = ALPHA) -> Significance:
    """Student's two-sided t-test (equal variances) over seeds, from each cell's ``mean``, ``std`` and ``n``
    (:func:`ttest_from_stats`; ``ddof``: the stds' convention).  ``stats_column(column)``: the column whose ± and
    seed count stand behind a compared cell (CalBERT compares the best run, tested on the runs' mean ± std)."""
    stats = {}
    if {"std", "n"} <= set(long.columns):
        stats = {(str(r), str(c)): (float(m), float(sd), int(n)) for r, c, m, sd, n in
                 zip(long["row"], long["column"], long["mean"], long["std"], long["n"]) if pd.notna(m) and pd.notna(n)}

    def significant(better: str, worse: str, column: str) -> bool | None:
        col = stats_column(column) if stats_column else column
        a, b = stats.get((better, col)), stats.get((worse, col))
        if a is None or b is None:
            return None
        p = ttest_from_stats(a[0], a[1], a[2], b[0], b[1], b[2], ddof=ddof)
        return None if p is None else p < alpha

    return Significance("Student's t-test over seeds", significant, alpha)


def tally(went: int, n: int, *, significant: int = 0, against: int = 0, tested: int = 0,
          significance: Significance | None = None, why_untested: str = "", way: str = "the paper's way") -> str:
    """The verdict line's count, direction and significance apart (issue 38):
    ``k/n comparisons go the paper's way; m/t significant (test, α = 0.05)``.

    ``significant``: comparisons that go the paper's way *and* are significant; ``against``: significant the other
    way; ``tested``: comparisons the test could be run on (the rest are named as not testable)."""
    line = f"{went}/{n} comparisons go {way}"
    if significance is None:
        return line + f"; significance not tested ({why_untested or 'no test for these cells'})"
    level = f"{significance.test}, α = {significance.alpha:g}"
    if not tested:
        return line + f"; significance not testable ({why_untested or significance.untestable}; {level})"
    line += f"; {significant}/{tested} significant ({level})"
    if against:
        line += f"; {against} significant the other way"
    if tested < n:
        line += f"; {n - tested} not testable ({why_untested or significance.untestable})"
    return line


def _significance_counts(compared: Sequence[tuple[str, str, str | None, bool]],
                         significance: Significance | None) -> tuple[int, int, int]:
    """``(significant the paper's way, tested, significant the other way)`` of ``(better, worse, column, went)``
    comparisons (``column`` ``None``: not testable)."""
    tested = sig = against = 0
    for better, worse, col, went in compared:
        s = significance.significant(better, worse, col) if significance is not None and col is not None else None
        if s is not None:
            tested += 1
            sig += bool(s and went)
            against += bool(s and not went)
    return sig, tested, against


def greater(
    long: pd.DataFrame,
    text: str,
    *,
    pairs: Sequence[tuple[str, str]],
    columns: Iterable[str],
    source: str = "",
    skip: Iterable[tuple[str, str, str]] = (),
    contradiction: str = "",
    min_share: float = 1.0,
    significance: Significance | None | str = "seeds",
    needs_significance: bool = False,
    way: str = "the paper's way",
) -> Claim:
    """``better > worse`` for every ``(better, worse)`` row pair in every column (means over seeds).

    The detail states direction and significance apart (:func:`tally`): how many comparisons go the paper's way,
    and how many of those are significant.  ``significance``: how that is read (:class:`Significance`; the default
    ``"seeds"``: :func:`seed_ttest` on the frame's ± and seed counts, sample stds; ``None``: no test).  A claim the
    paper words "significant" passes ``needs_significance``: it then also needs ``min_share`` of the testable
    comparisons significant in the paper's direction, and fails on significance with its direction stated; where
    no comparison is testable (one seed, a paper without ±) its verdict rests on the direction, and says so.

    ``None`` when a needed cell is missing; the detail names the first comparison that does not go the paper's way.
    ``skip``: ``(better, worse, column)`` comparisons left out (those the paper's own numbers contradict, named in
    ``contradiction``); ``min_share``: the share of comparisons that must hold (1.0: all; the paper's "almost all"
    is a stated share below it).
    """
    if significance == "seeds":
        significance = seed_ttest(long)
    cells = means(long)
    columns = list(columns)
    skip = set(skip)
    compared, skipped, failed, missing = [], 0, [], []
    for better, worse in pairs:
        for col in columns:
            if (better, worse, col) in skip:
                skipped += 1
                continue
            a, b = cells.get((better, col)), cells.get((worse, col))
            if a is None or b is None:
                missing.append(f"{better if a is None else worse} / {col}")
                continue
            compared.append((better, worse, col, a > b))
            if not a > b:
                failed.append(f"{better} {_fmt(a)} vs {worse} {_fmt(b)} on {col}")
    if not compared:
        return Claim(text, None, "no cell to compare" + (f": missing {missing[0]}" if missing else ""), source, contradiction)
    checked, went = len(compared), len(compared) - len(failed)
    sig, tested, against = _significance_counts(compared, significance)
    detail = tally(went, checked, significant=sig, against=against, tested=tested, significance=significance, way=way)
    direction = went >= min_share * checked - 1e-9
    significant = not needs_significance or not tested or sig >= min_share * tested - 1e-9
    if min_share < 1.0:
        detail += f" (at least {min_share:.0%} needed)"
    if direction and not significant:
        detail += "; fails on significance"
    if failed:
        detail += f"; e.g. {failed[0]}"
    if missing:
        detail += f"; {len(missing)} cell(s) not run"
    if skipped:
        detail += f"; {skipped} comparison(s) left out (contradicted by the paper's own numbers)"
    return Claim(text, direction and significant, detail, source, contradiction)


def all_of(text: str, parts: Sequence[tuple[str, Claim]], *, source: str = "", contradiction: str = "") -> Claim:
    """A claim made of several checks (``(label, claim)``: "aligned rows beat the Baseline", "Lm is the highest on dev"):
    it holds when every part holds, is ``None`` when any part is, and its detail says first **why** it fails, naming
    each failing part, then what held, so that "does not hold (6/6 comparisons hold; …)" never reads as a contradiction."""
    if any(c.holds is None for _, c in parts):
        label, c = next((lb, c) for lb, c in parts if c.holds is None)
        return Claim(text, None, f"{label}: {c.detail}" if c.detail else label, source, contradiction)
    failed = [(lb, c) for lb, c in parts if not c.holds]
    held = [(lb, c) for lb, c in parts if c.holds]
    detail = "; ".join(f"fails: {lb} ({c.detail})" if c.detail else f"fails: {lb}" for lb, c in failed)
    if held:
        detail += ("; " if detail else "") + "; ".join(f"holds: {lb} ({c.detail})" if c.detail else f"holds: {lb}" for lb, c in held)
    return Claim(text, not failed, detail, source, contradiction)


def best_is(long: pd.DataFrame, text: str, *, expected: str, along: str = "row", where: str | None = None, source: str = "",
            significance: Significance | None | str = "seeds", ddof: int = 1) -> Claim:
    """The highest mean along ``along`` ("row" or "column", restricted to ``where`` in the other axis) is ``expected``.

    Ties are decided by a stated rule, never by row order: every entry tied for the highest mean counts as the best.
    The detail gives the top three, then ``expected`` against each other entry, direction and significance apart
    (:func:`tally`, issue 38): how many it beats, and how many of those gaps are significant.  The verdict rests on
    the ordering (the papers name a best setting, not a significant one).  ``significance``: as :func:`greater`'s (the
    default ``"seeds"``: :func:`seed_ttest` with the frame's ± convention ``ddof``), keyed by ``(better, worse, where)``
    along rows; ``along="column"`` transposes the frame first, so the same test reads the cells of row ``where``."""
    if along == "column":  # the same rule on the transposed frame: entries are columns, ``where`` a row
        swapped = long.rename(columns={"row": "column", "column": "row"})
        return best_is(swapped, text, expected=expected, along="row", where=where, source=source, significance=significance, ddof=ddof)
    df = long if where is None else long[long["column"].astype(str) == where]
    df = df[pd.notna(df["mean"])]
    if df.empty or expected not in set(df["row"].astype(str)):
        return Claim(text, None, f"'{expected}' was not run", source)
    values = df["mean"].astype(float)
    top = float(values.max())
    tied = [str(r) for r, m in zip(df["row"], values) if m == top]  # a tie: every tied entry counts as the best
    ranking = ", ".join(f"{r} {_fmt(float(m))}" for r, m in sorted(zip(df["row"].astype(str), values), key=lambda t: -t[1])[:3])
    detail = f"highest: {ranking}" + (f"; tie for the highest between {', '.join(tied)}" if len(tied) > 1 else "")
    if significance == "seeds":
        significance = seed_ttest(long, ddof=ddof)
    columns = set(df["column"].astype(str))
    col = where if where is not None else (next(iter(columns)) if len(columns) == 1 else None)  # the cells' one column
    by_row = dict(zip(df["row"].astype(str), values))
    compared = [(expected, other, col, by_row[expected] > m) for other, m in by_row.items() if other != expected]
    if compared:
        sig, tested, against = _significance_counts(compared, significance)
        detail += f"; {expected} vs each other: " + tally(sum(went for *_, went in compared), len(compared), significant=sig,
                                                          against=against, tested=tested, significance=significance)
    return Claim(text, expected in tied, detail, source)


def paper_best(long: pd.DataFrame, along: str = "column") -> str | None:
    """Where the paper's own values peak (``paper`` column of ``long``), or None when the paper has none."""
    df = long[pd.notna(long["paper"])] if "paper" in long else long.iloc[0:0]
    if df.empty:
        return None
    return str(df.loc[df["paper"].astype(float).idxmax(), along])


def within(long: pd.DataFrame, text: str, *, tolerance: float, source: str = "", unit: str = "") -> Claim:
    """Every cell with a paper value is within ``tolerance`` of it."""
    df = long[pd.notna(long["paper"])] if "paper" in long else long.iloc[0:0]
    if df.empty:
        return Claim(text, None, "the paper reports none of these cells", source)
    diff = (df["mean"].astype(float) - df["paper"].astype(float)).abs()
    worst = df.loc[diff.idxmax()]
    detail = (f"{int((diff <= tolerance).sum())}/{len(df)} cells within {tolerance:g}{unit}; largest gap "
              f"{worst['row']} / {worst['column']}: {float(worst['mean']):.6g} vs {float(worst['paper']):.6g}")
    return Claim(text, bool((diff <= tolerance).all()), detail, source)


#: a stated magnitude is reproduced by a gain of its sign within this factor of it (stated/2 ≤ gain ≤ 2·stated)
MAGNITUDE_FACTOR = 2.0


def printed_decimals(x: float) -> int:
    """The decimals a stated number was printed with (``1.9`` → 1, ``7.32`` → 2), read from its shortest repr."""
    r = repr(float(x))
    return len(r.split(".", 1)[1]) if "." in r and "e" not in r else 0


def arithmetic(what: str, stated: float, computed: float) -> str:
    """"" when ``computed`` (from the paper's own cells) rounds to ``stated`` at its printed decimals; else a sentence
    naming both: a mismatch in the paper's arithmetic, recorded as a contradiction (never corrected)."""
    d = printed_decimals(stated)
    if abs(computed - stated) <= 0.5 * 10 ** -d + 1e-9:
        return ""
    return f"{what}: stated {stated:g}, its own numbers give {computed:.{d + 2}f} (→ {computed:.{d}f})"


def magnitude(text: str, gains: Sequence[tuple[str, float | None, float]], *, source: str = "", unit: str = " points",
              contradiction: str = "") -> Claim:
    """A stated magnitude ("an average gain of 1.77 points"), each ``(label, measured gain, stated gain)``.

    The rule, one for every magnitude and scaling with it: the run's gain reproduces the stated one when it has the
    same sign and lies within a factor of :data:`MAGNITUDE_FACTOR` of it (for 1.77: between 0.885 and 3.54).  On the
    paper's own cells the gain is the paper's arithmetic, which :func:`arithmetic` checks to the printed digit.
    ``None`` when a gain could not be computed (a row or column not run)."""
    missing = [lb for lb, m, _ in gains if m is None]
    if missing:
        return Claim(text, None, f"{missing[0]}: not run", source, contradiction)
    ok, parts = [], []
    for label, m, g in gains:
        if g == 0:
            raise ValueError(f"{label}: a stated gain of 0 has no magnitude to reproduce")
        lo, hi = sorted((g / MAGNITUDE_FACTOR, g * MAGNITUDE_FACTOR))
        within_ = lo <= m <= hi
        ok.append(within_)
        parts.append(f"{label} {m:+.{printed_decimals(g) + 1}f}{unit} vs stated {g:+g}" + ("" if within_ else " (outside)"))
    rule = f"same sign, within ×{MAGNITUDE_FACTOR:g} of the stated gain"
    detail = f"{sum(ok)}/{len(ok)} gains reproduce ({rule}): " + "; ".join(parts)
    return Claim(text, all(ok), detail, source, contradiction)


def not_in_paper(text: str, detail: str = "") -> Claim:
    """A table that checks a released-code vs paper choice rather than a claim of the paper."""
    return Claim(text, None, detail or "no paper claim to check", "")


# --------------------------------------------------------------------------- the paper's own numbers
def paper_values(paper: str, table: str) -> dict[tuple[str, str], float]:
    """``{(row, column): value}`` of a paper table as printed (cells lost in conversion left out)."""
    from . import reported

    return {(e.row, e.column): float(e.value) for e in reported.table(paper, table) if e.value is not None}


def contradicted(paper: str, table: str, pairs: Sequence[tuple[str, str]], columns: Iterable[str]) -> tuple[set, str]:
    """The ``(better, worse, column)`` comparisons of ``pairs`` that the paper's own printed numbers fail, and a
    sentence naming them (empty when none): what a claim worded "every …" must leave out and say."""
    values = paper_values(paper, table)
    bad, words = set(), []
    for better, worse in pairs:
        for col in columns:
            a, b = values.get((better, col)), values.get((worse, col))
            if a is not None and b is not None and not a > b:
                bad.add((better, worse, col))
                words.append(f"{better} {a:g} ≤ {worse} {b:g} ({col})")
    return bad, "; ".join(words)


def ttest_from_stats(mean_a: float, std_a: float, n_a: int, mean_b: float, std_b: float, n_b: int, *, ddof: int = 1) -> float | None:
    """Two-sided Student's t-test (equal variances) from means, stds and seed counts; ``ddof``: the stds' (0 = population).

    ``None`` when either side has fewer than two seeds or a std is unknown."""
    import math

    from scipy.stats import ttest_ind_from_stats

    if n_a < 2 or n_b < 2 or any(x is None or (isinstance(x, float) and math.isnan(x)) for x in (std_a, std_b)):
        return None
    sa, sb = (s * math.sqrt((n - ddof) / (n - 1)) for s, n in ((std_a, n_a), (std_b, n_b)))  # to sample stds (ddof=1)
    if sa == 0 and sb == 0:
        return 1.0 if mean_a == mean_b else 0.0
    return float(ttest_ind_from_stats(mean_a, sa, n_a, mean_b, sb, n_b, equal_var=True).pvalue)


# --------------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class TableClaim:
    """How one table's claim is checked: ``check(long, profile)`` (``profile`` gives the section's settings: backbones,
    the headline column …), and how its reported values are laid out for :func:`on_paper`."""

    artifact: str  # the table's name, e.g. "concse_table3"
    paper: str  # core.reported's paper key
    table: str  # core.reported's table key
    check: Callable[[pd.DataFrame, Any], Claim]
    seeds: int | None = None  # the seed count behind the paper's ± (its t-tests need it); None: not stated
    prepare: Callable[[pd.DataFrame], pd.DataFrame] | None = None  # adds what the check reads besides the numbers


REGISTRY: dict[str, TableClaim] = {}


def register(artifact: str, *, paper: str, table: str, seeds: int | None = None,
             prepare: Callable[[pd.DataFrame], pd.DataFrame] | None = None):
    """Decorator: ``fn(long, profile) -> Claim`` is the claim of ``artifact``, whose paper values are ``paper``/``table``."""

    def deco(fn):
        REGISTRY[artifact] = TableClaim(artifact, paper, table, fn, seeds, prepare)
        return fn

    return deco


def reported_long(paper: str, table: str, *, seeds: int | None = None) -> pd.DataFrame:
    """A table's printed values as the long frame a measured table has (``mean`` = ``paper`` = the printed value,
    ``std`` its ±, ``n`` the paper's seed count); cells lost in conversion keep ``mean`` NaN."""
    from . import reported

    rows = [dict(row=e.row, column=e.column, mean=float("nan") if e.value is None else e.value,
                 std=float("nan") if e.std is None else e.std, n=seeds or 1,
                 paper=float("nan") if e.value is None else e.value, paper_note=e.note)
            for e in reported.table(paper, table)]
    return pd.DataFrame(rows, columns=["row", "column", "mean", "std", "n", "paper", "paper_note"])


def on_paper(artifact: str, profile: Any) -> Claim:
    """The claim of ``artifact`` checked on the paper's own printed numbers (``profile``: the paper profile)."""
    entry = REGISTRY[artifact]
    long = reported_long(entry.paper, entry.table, seeds=entry.seeds)
    if entry.prepare is not None:
        long = entry.prepare(long)
    return entry.check(long, profile)
