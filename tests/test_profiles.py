"""Profiles: YAML -> typed config, strict keys, overrides, offline mode."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from codeswitch.profiles import ConfigError, as_dict, build_dataclass, load_profile

from .conftest import REPO


@dataclass(frozen=True)
class Demo:
    epochs: int = 5
    lr: float = 5e-5
    backbones: tuple[str, ...] = ("bert-base-multilingual-cased",)
    variant: str = "official"


def test_both_profiles_load_with_expected_defaults():
    smoke = load_profile("smoke", root=REPO)
    paper = load_profile("paper", root=REPO)
    assert smoke.name == "smoke" and smoke.offline and smoke.device == "cpu"
    assert paper.seeds == (11111, 22222, 33333, 44444, 55555)
    assert not paper.offline
    assert smoke.runs_dir == REPO / "runs" / "smoke" and paper.figures_dir == REPO / "figures" / "paper"
    for name in ("koglish", "glue", "concse", "contrastivemix", "alignment", "calbert"):
        assert name in smoke.sections and name in paper.sections


def test_overrides_are_dotted_and_typed(tmp_path):
    cfg = load_profile("smoke", {"seeds": [1, 2, 3], "demo.epochs": 2, "demo.backbones": ["tiny-bert"]}, root=REPO, output_root=tmp_path)
    assert cfg.seeds == (1, 2, 3)
    demo = cfg.section("demo", Demo)
    assert demo == Demo(epochs=2, backbones=("tiny-bert",))
    assert cfg.runs_dir == tmp_path / "runs" / "smoke"
    assert cfg.section("absent", Demo) == Demo()


def test_unknown_keys_and_bad_types_name_the_file_and_key():
    cfg = load_profile("smoke", {"demo.epoch": 2}, root=REPO)
    with pytest.raises(ConfigError, match=r"configs/smoke.yaml: section 'demo': unknown key\(s\) \['epoch'\]"):
        cfg.section("demo", Demo)
    with pytest.raises(ConfigError, match="key 'epochs': expected an integer"):
        build_dataclass(Demo, {"epochs": "five"}, where="x.yaml")
    with pytest.raises(ConfigError, match="no profile 'nope'"):
        load_profile("nope", root=REPO)


def test_offline_profile_sets_hub_offline(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    load_profile("smoke", root=REPO)
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_as_dict_is_json_ready():
    assert as_dict(Demo()) == {"epochs": 5, "lr": 5e-5, "backbones": ["bert-base-multilingual-cased"], "variant": "official"}
