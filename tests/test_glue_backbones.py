"""glue.backbones in either form: the profiles' mapping or a list (--set 'glue.backbones=[...]')."""

from __future__ import annotations

import pytest

from codeswitch.glue import experiment as eg
from codeswitch.core.profiles import ConfigError, load_profile

from .conftest import REPO


def test_list_form_with_paper_labels_fills_in_table8():
    cfg = load_profile("paper", {"glue.backbones": [{"name": "mBERT-base", "model": "/data/mbert"}, "XLM-R-base"]}, root=REPO)
    b = eg.load_config(cfg).backbones
    assert list(b) == ["mBERT-base", "XLM-R-base"]
    assert (b["mBERT-base"].model, b["mBERT-base"].batch_size, b["mBERT-base"].learning_rate) == ("/data/mbert", 128, 5e-5)
    assert b["XLM-R-base"] == eg.PAPER_BACKBONES["XLM-R-base"]
    own = eg.backbones_from_setting([{"name": "mine", "model": "/m", "batch_size": 8, "learning_rate": 1e-4}])
    assert own == {"mine": eg.Backbone("/m", 8, 1e-4)}
    assert eg.backbones_from_setting(["xlm-roberta-large"]) == {"XLM-R-large": eg.PAPER_BACKBONES["XLM-R-large"]}


@pytest.mark.parametrize("value, match", [
    (["/data/mbert"], r"glue\.backbones\[0\]: '/data/mbert' is neither a paper backbone"),
    ([{"model": "/m"}], r"glue\.backbones\[0\]: a backbone in list form needs a 'name'"),
    ([{"name": "mine", "model": "/m"}], r"glue\.backbones\.mine"),  # not a paper label: its settings are needed
    ([], r"glue\.backbones: at least one"),
    (5, r"glue\.backbones: expected a mapping"),
])
def test_bad_list_forms_name_the_key(value, match):
    with pytest.raises(ConfigError, match=match):
        eg.load_config(load_profile("paper", {"glue.backbones": value}, root=REPO))
