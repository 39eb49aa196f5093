"""A claim the smoke data decide by how they were made reads "built into the smoke data: <how>" (issue 39, section 1).

* Each list of constructions (``CONSTRUCTIONS``, kept beside the data that make them) names registered claims only.
* Under the smoke profile on synthetic inputs such a claim's note line and its ``INDEX.md`` cell read "built into the
  smoke data: <how>", never "holds" or "does not hold"; the same claim on real data, or under the quick profile, keeps
  the computed verdict.
"""

from __future__ import annotations

import pandas as pd
import pytest

from codeswitch.core import claims
from codeswitch.core.profiles import load_profile
from codeswitch.core.render import md_escape
from codeswitch.core.report import comparison, save_table

from .conftest import REPO


def _lists() -> dict[str, dict[str, str]]:
    """Every list of constructions, by the module that keeps it; the table modules imported, so every claim is registered."""
    from codeswitch.calbert import standins, tables as _calbert  # noqa: F401  (registers the claims)
    from codeswitch.contrastivemix import synthetic, tables as _cm  # noqa: F401
    from codeswitch.glue import tables as _glue  # noqa: F401
    from codeswitch.koglish import synthetic_constructions, tables as _koglish  # noqa: F401

    return {m.__name__: m.CONSTRUCTIONS for m in (synthetic_constructions, synthetic, standins)}


def _unregistered(lists: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """The listed artifacts, by list, that no table registers a claim for."""
    return {m: sorted(set(c) - set(claims.REGISTRY)) for m, c in lists.items() if set(c) - set(claims.REGISTRY)}


def test_every_listed_construction_is_a_registered_claim():
    lists = _lists()
    listed = [a for constructions in lists.values() for a in constructions]
    assert len(listed) == len(set(listed)), "an artifact is listed by two data modules"
    assert not _unregistered(lists), f"listed constructions without a registered claim: {_unregistered(lists)}"
    for module, constructions in lists.items():
        for artifact, how in constructions.items():
            assert how.strip() and not how.endswith(".") and "holds" not in how, (module, artifact, how)


def test_a_listed_artifact_without_a_claim_is_caught():
    """The check above can fail: an artifact no table registers is named."""
    lists = _lists()
    assert _unregistered({**lists, "demo": {"concse_table99": "made so", "concse_table2": "made so"}}) == {"demo": ["concse_table99"]}


HOW = "the demo data put each label in the switched words"


def _written(tmp_path, profile: str, inputs: dict) -> tuple[str, str, str]:
    """A table with a built-in claim (ConCSE > SimCSE, which holds on these numbers), written under ``profile`` with
    ``inputs`` recorded: its Markdown, its INDEX.md row and the claim's detail (the numbers behind it)."""
    from codeswitch.pipeline import cli as pipeline

    cfg = load_profile(profile, root=REPO, output_root=tmp_path)
    measured = pd.DataFrame({"row": ["ConCSE", "SimCSE"], "column": ["Avg."] * 2, "mean": [2.0, 1.0], "std": [0.0, 0.0], "n": [1, 1]})
    wide, long = comparison(measured, paper=None, table=None)
    claim = claims.built_into(claims.greater(long, "ConCSE > SimCSE", pairs=[("ConCSE", "SimCSE")], columns=["Avg."]), HOW)
    md = save_table(wide, "demo_built_in", cfg, caption="demo", long=long, claim=claim, inputs=inputs)["md"].read_text(encoding="utf-8")
    index = pipeline.write_index(profile, output_root=tmp_path, root=REPO).read_text(encoding="utf-8")
    return md, next(line for line in index.splitlines() if "`demo_built_in`" in line), claim.detail


def test_built_in_claim_on_synthetic_inputs_reads_built_into_the_smoke_data(tmp_path):
    md, row, detail = _written(tmp_path, "smoke", {"koglish": ["synthetic"], "model": ["tiny-bert"]})
    assert f"— built into the smoke data: {HOW} (measured: {detail})." in md, md
    assert f"smoke: built into the smoke data: {md_escape(HOW)}: {md_escape('ConCSE > SimCSE')} |" in row, row
    for text in (md, row):
        assert "holds on" not in text and "does not hold" not in text and "supported" not in text


@pytest.mark.parametrize("profile,inputs,line,cell", [
    ("smoke", {"koglish": ["/data/koglish @ 0123abcd"], "model": ["tiny-bert"]},
     "— holds on this smoke run's real data ({detail}).", "smoke: holds on this smoke run's real data: ConCSE \\> SimCSE"),
    ("quick", {"koglish": ["synthetic"], "model": ["tiny-bert"]}, "— **supported** by this run ({detail}).",
     "✓ supported: ConCSE \\> SimCSE"),
])
def test_built_in_claim_keeps_its_computed_verdict_on_real_data_and_under_quick(tmp_path, profile, inputs, line, cell):
    md, row, detail = _written(tmp_path, profile, inputs)
    assert line.format(detail=detail) in md and cell in row, (md, row)
    assert "built into the smoke data" not in md and "built into the smoke data" not in row


def test_an_index_entry_round_trips_the_construction():
    c = claims.built_into(claims.Claim("t", False, "0/1", "src"), HOW)
    assert claims.Claim(**c.as_dict()) == c and claims.built_into(c, None) is c and claims.built_into(None, HOW) is None
    assert "built_in" not in claims.Claim("t", True).as_dict()  # an entry without one is as before


@pytest.mark.parametrize("table", ["table4", "table10"])
def test_calbert_split_tables_on_the_shipped_sets_are_built_in(tmp_path, table):
    """Tables 4 and 10 on the shipped stand-ins: their sizes are the stand-ins', so the claim reads built in."""
    from codeswitch.calbert.config import load
    from codeswitch.calbert.standins import CONSTRUCTIONS
    from codeswitch.calbert.tables import split_table

    prof = load_profile("smoke", root=REPO, output_root=tmp_path)
    md = split_table(prof, load(prof), table)["md"].read_text(encoding="utf-8")
    assert f"built into the smoke data: {CONSTRUCTIONS[f'calbert_{table}']} (measured: 0/3 cells within 0.5" in md, md
    assert "does not hold" not in md
