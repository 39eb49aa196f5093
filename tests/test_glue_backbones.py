"""glue.backbones in every form a profile or --set may give: a list of {name, model, ...}, paper labels alone, the older mapping."""

from __future__ import annotations

import pytest

from codeswitch.core.profiles import load_profile
from codeswitch.core.sections import ConfigError
from codeswitch.glue import config as gc

from .conftest import REPO


def _backbones(value):
    return gc.load(load_profile("paper", {"glue.backbones": value}, root=REPO)).backbones


def test_list_form_with_paper_labels_fills_in_table8():
    b = {x.name: x for x in _backbones([{"name": "mBERT-base", "model": "/data/mbert"}, "XLM-R-base"])}
    assert list(b) == ["mBERT-base", "XLM-R-base"]
    assert (b["mBERT-base"].model, b["mBERT-base"].batch_size, b["mBERT-base"].learning_rate) == ("/data/mbert", 128, 5e-5)
    assert b["XLM-R-base"] == next(p for p in gc.PAPER_BACKBONES if p.name == "XLM-R-base")
    assert _backbones([{"name": "mine", "model": "/m", "batch_size": 8, "learning_rate": 1e-4}]) == (gc.Backbone("mine", "/m", 8, 1e-4),)
    assert _backbones(["xlm-roberta-large"]) == tuple(p for p in gc.PAPER_BACKBONES if p.name == "XLM-R-large")


def test_the_older_mapping_form_is_converted():
    assert _backbones({"mine": {"model": "/m", "batch_size": 8, "learning_rate": 1e-4}}) == (gc.Backbone("mine", "/m", 8, 1e-4),)


@pytest.mark.parametrize("value, match", [
    (["/data/mbert"], r"glue\.backbones\[0\]: '/data/mbert' is neither a paper backbone"),
    ([{"model": "/m"}], r"glue\.backbones\[0\]: a backbone in list form needs a 'name'"),
    ([{"name": "mine", "model": "/m"}], r"glue\.backbones\[0\]: .*missing .*batch_size"),  # not a paper label: its settings are needed
    ([], r"glue\.backbones: at least one"),
    (5, r"glue\.backbones: expected a list"),
])
def test_bad_list_forms_name_the_key(value, match):
    with pytest.raises(ConfigError, match=match):
        _backbones(value)
