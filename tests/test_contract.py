"""The experiment contract (codeswitch.core.experiment): every paper package exposes the same verbs.

``Config`` (frozen dataclass of its profile section), ``load(profile)``, ``plan(profile) -> list[RunSpec]``,
``run_one(spec, profile)`` (module-level), ``run(profile) -> Results``,
``tables(results, profile)``, ``figures(results, profile)``, ``resources(profile)``, ``build_standins``,
``SECTION``, ``NOTEBOOKS``, ``SELECTION_RULE`` and the kept-model functions (the whole contract:
:data:`codeswitch.core.experiment.CONTRACT` and its neighbours).  The packages come from the one registry,
:mod:`codeswitch.pipeline.registry`.
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from codeswitch.core.experiment import Results, RunSpec, Stage, check, not_in_key
from codeswitch.core.profiles import load_profile
from codeswitch.pipeline.registry import experiments, packages

from .conftest import REPO

EXPERIMENTS = experiments()  # {section: notebooks}, from the one registry of the paper packages
PACKAGES = tuple(EXPERIMENTS)


@pytest.mark.parametrize("name", PACKAGES)
def test_package_follows_the_contract(name):
    package = dict(zip(PACKAGES, packages()))[name]
    assert check(package) == []


def test_the_contract_check_can_fail():
    """A package missing a contract value, a kept-model function or with a wrong signature is reported."""
    import types

    from codeswitch import glue

    broken = types.ModuleType("codeswitch.broken")
    broken.__dict__.update({k: getattr(glue, k) for k in glue.__all__})
    del broken.kept_plan
    broken.NOTEBOOKS = ["02"]
    broken.resources = lambda cfg: []
    problems = check(broken)
    assert any("kept_plan: missing" in p for p in problems), problems
    assert any("NOTEBOOKS: not a" in p for p in problems), problems
    assert any(".resources" in p and "expected the required arguments ['profile']" in p for p in problems), problems
    assert any("<locals>" in p or "not a module-level function" in p for p in problems), problems


def test_registry_lists_every_paper_package_and_notebook():
    from codeswitch.pipeline.cli import NOTEBOOKS

    assert PACKAGES == ("koglish", "glue", "concse", "contrastivemix", "alignment", "calbert")
    assert [p.__name__ for p in packages()] == [f"codeswitch.{n}" for n in PACKAGES]
    assert sorted(n for ns in EXPERIMENTS.values() for n in ns) == [s.number for s in NOTEBOOKS]


@pytest.fixture(scope="module")
def smoke_stages(tmp_path_factory):
    profile = load_profile("smoke", root=REPO, output_root=tmp_path_factory.mktemp("stages"))
    return profile, dict(zip(PACKAGES, packages()))


@pytest.mark.parametrize("name", PACKAGES)
def test_stages_hold_the_plan_in_dependency_order(smoke_stages, name):
    """``stages(profile)``: every run of ``plan`` in exactly one stage, plan order kept, each stage after earlier ones only."""
    profile, packages = smoke_stages
    package = packages[name]
    stages = package.stages(profile)
    assert stages and all(isinstance(st, Stage) for st in stages)
    names = [st.name for st in stages]
    assert len(set(names)) == len(names)
    for i, st in enumerate(stages):
        assert set(st.after) <= set(names[:i]), (st.name, st.after)
        assert st.cache_dir.is_relative_to(profile.runs_dir)
        assert st.notebook in (None, *EXPERIMENTS[name])
    keys = [s.key_hash() for st in stages for s in st]
    assert list(dict.fromkeys(keys)) == list(dict.fromkeys(s.key_hash() for s in package.plan(profile)))


def test_glue_plan_gives_typed_specs_with_stable_keys(tmp_path):
    from codeswitch import glue as G

    profile = load_profile("smoke", root=REPO, output_root=tmp_path)
    specs = G.plan(profile)  # builds the mini Koglish (seconds) and hashes its rows; no model is needed
    assert specs and all(isinstance(s, RunSpec) and isinstance(s, G.GlueRun) for s in specs)
    assert len({s.key_hash() for s in specs}) == len(specs)
    assert [s.key_hash() for s in G.plan(profile)] == [s.key_hash() for s in specs]  # the same plan, the same keys
    spec = specs[0]
    assert spec.key()["precision"] == "fp32" and "log_epochs" not in spec.key()
    assert set(spec.inputs()) == {"koglish", "model"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.seed = 1


def test_check_reports_what_a_package_lacks():
    import types

    @dataclasses.dataclass  # not frozen
    class Config:
        x: int = 1

    def plan(profile, extra):
        return []

    incomplete = types.ModuleType("incomplete")
    incomplete.Config, incomplete.plan = Config, plan

    problems = check(incomplete)
    assert "incomplete.Config: not a frozen dataclass" in problems
    assert any(p.startswith("incomplete.plan") and "['profile']" in p for p in problems)
    assert {"incomplete.run_one: missing", "incomplete.run: missing", "incomplete.tables: missing", "incomplete.figures: missing"} <= set(problems)


def test_run_spec_key_leaves_out_display_fields_and_unset_optionals():
    @dataclasses.dataclass(frozen=True)
    class Spec(RunSpec):
        lr: float
        tag: str | None = None
        verbose: bool = not_in_key(True)

    assert Spec(0.1).key() == {"lr": 0.1}  # an optional added later keeps every existing key
    assert Spec(0.1, tag="x").key() == {"lr": 0.1, "tag": "x"}
    assert Spec(0.1, verbose=False).key_hash() == Spec(0.1).key_hash()
    assert Spec(0.1).key_hash() != Spec(0.2).key_hash()
    results = Results((Spec(0.1), Spec(0.2)), ({"a": 1}, {"a": 2}))
    assert [(s.lr, r["a"]) for s, r in results] == [(0.1, 1), (0.2, 2)] and len(results) == 2
    with pytest.raises(ValueError):
        Results((Spec(0.1),), ())
