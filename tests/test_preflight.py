"""The preflight (`./reproduce.sh --check`) and `--prepare DIR`, never touching the network.

`--check` reads the Hugging Face cache with local_files_only; `--prepare` is tested
against a local fake of `huggingface_hub.snapshot_download` that copies stand-in
folders, and a fake URL fetcher.
"""

from __future__ import annotations

import re

import shutil
import socket
import time
from pathlib import Path

import pytest
import yaml

from codeswitch.core import hub, pipeline, preflight
from codeswitch.core.profiles import load_profile, project_root

ROOT = project_root()


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """An empty HF cache, offline, and any socket connection an error."""

    def refuse(*a, **k):
        raise AssertionError("the preflight opened a network connection")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
    hub.hub_reachable.cache_clear()
    yield
    hub.hub_reachable.cache_clear()


def test_smoke_profile_needs_nothing_from_outside(no_network):
    statuses = preflight.check(load_profile("smoke"))
    assert statuses and all(s.present for s in statuses), [s for s in statuses if not s.present]
    assert {n for s in statuses for n in s.resource.notebooks} == {"01", "02", "03", "04", "05", "06", "07"}


def test_paper_check_lists_everything_missing_at_once(no_network, capsys):
    t0 = time.perf_counter()
    rc = pipeline.main(["--profile", "paper", "--check"])
    elapsed = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert rc == 1 and elapsed < 30
    for nb in ("01", "02", "03", "04", "05", "06", "07"):
        assert f"notebook {nb}" in out
    for needed in (
        "Jangyeong/Koglish_SICK", "facebook/nllb-200-distilled-600M", "xlm-roberta-large", "facebook/mbart-large-50",
        "bert-base-multilingual-uncased", "mrtydi-v1.1-english/dev.jsonl.gz", "miracl/miracl-corpus", "en-ko.txt",
        "HF_TOKEN", "ai4bharat/indic-bert", "distilbert-base-cased", "cfilt/iitb-english-hindi", "data/sail2017",
        "Data/Processed_Data", "koglish.benepar_model", "benepar.download('benepar_en3')", "glue.backbones.XLM-R-large.model", "concse.backbones.0.model", "calbert.backbones.4.model",
    ):
        assert needed in out, needed
    assert "hf download" in out and "huggingface-cli" not in out and "--set " in out
    statuses = preflight.check(load_profile("paper"))
    missing = [s for s in statuses if not s.present]
    assert len(missing) >= 40 and out.count("MISSING") >= len(missing)


def test_missing_resource_message_names_the_cli_and_the_set_form(no_network):
    with pytest.raises(hub.MissingResourceError) as exc:
        hub.resolve("someone/some-model", kind="model", what="glue.backbones.mBERT-base.model")
    msg = str(exc.value)
    assert "hf download someone/some-model" in msg and re.search(r"--set '?glue\.backbones\.mBERT-base\.model=", msg), msg
    assert "huggingface-cli" not in msg and "-p overrides" not in msg


def test_list_items_accept_a_set(tmp_path):
    cfg = load_profile("paper", overrides={"concse.backbones.1.model": str(tmp_path), "calbert.backbones.0.model": "/m"})
    assert cfg.sections["concse"]["backbones"][1]["model"] == str(tmp_path)
    assert cfg.sections["calbert"]["backbones"][0]["model"] == "/m"
    with pytest.raises(Exception, match="not an index of a list of 3"):
        load_profile("paper", overrides={"concse.backbones.7.model": "/x"})


def _fake_hub(model_folder: Path, calls: list):
    """snapshot_download as the pinned huggingface_hub calls it, copying stand-ins instead of downloading."""

    def snapshot_download(*, repo_id, repo_type, local_dir, allow_patterns=None):
        calls.append((repo_id, repo_type, tuple(allow_patterns or ())))
        dest = Path(local_dir)
        if repo_type == "model":
            shutil.copytree(model_folder, dest, dirs_exist_ok=True)
        else:
            dest.mkdir(parents=True, exist_ok=True)
            for pat in allow_patterns or ["data/train-00000.parquet"]:
                f = dest / pat.replace("**/", "").replace("*", "x")
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text("stand-in\n")
        return str(dest)

    return snapshot_download


def test_prepare_downloads_everything_and_the_prepared_profile_checks_clean(no_network, tmp_path, monkeypatch, backbones_dir, capsys):
    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS
    from codeswitch.calbert.experiment import ASSETS as CALBERT_ASSETS
    from codeswitch.core.models import resolve_model

    # what is not on the hub (GLUECoS, SAIL, IITP) is given as local folders in the released layout
    overrides = {
        "alignment.gluecos_dir": str(SYNTHETIC_GLUECOS),
        "calbert.sail.source": str(CALBERT_ASSETS / "sail"),
        "calbert.iitp.source": str(CALBERT_ASSETS / "iitp"),
    }
    src = tmp_path / "paper-local.yaml"
    data = yaml.safe_load((ROOT / "configs/paper.yaml").read_text())
    data["alignment"]["gluecos_dir"] = overrides["alignment.gluecos_dir"]
    data["calbert"]["sail"]["source"] = overrides["calbert.sail.source"]
    data["calbert"]["iitp"]["source"] = overrides["calbert.iitp.source"]
    src.write_text(yaml.safe_dump(data))
    cfg = load_profile(str(src), root=ROOT)
    calls, urls = [], []

    def fetch(url, dest):
        urls.append(url)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text("the\t이\n")
        return dest

    import benepar

    from codeswitch.core.standins import build_standin

    parser = build_standin("benepar", tmp_path / "standins")  # what benepar.download unpacks, in its released format

    def download(name, *, download_dir, **kwargs):  # benepar's NLTK downloader, without the network
        shutil.copytree(parser, Path(download_dir) / "models" / name)
        return True

    monkeypatch.setattr(benepar, "download", download)
    dest = tmp_path / "prepared"
    out = preflight.prepare(cfg, dest, snapshot_download=_fake_hub(Path(resolve_model("tiny-bert")), calls), fetch_url=fetch, log=lambda m: None)
    assert out == dest / "profile.yaml"
    repos = {c[0] for c in calls}
    assert {"Jangyeong/Koglish_GLUE", "Jangyeong/Koglish_SICK", "xlm-roberta-large", "facebook/nllb-200-distilled-600M",
            "castorini/mr-tydi", "miracl/miracl", "Tevatron/wikipedia-nq", "ai4bharat/indic-bert", "cfilt/iitb-english-hindi"} <= repos
    mrtydi = next(c for c in calls if c[0] == "castorini/mr-tydi")
    assert "mrtydi-v1.1-english/dev.jsonl.gz" in mrtydi[2]  # only the files the notebooks read
    assert any(u.endswith("en-ko.txt") for u in urls) and any(u.endswith("en-hi.txt") for u in urls)

    prepared = yaml.safe_load(out.read_text())
    d = str(dest.resolve())
    assert prepared["offline"] is True and prepared["koglish_source"] == f"{d}/koglish"
    assert all(b["model"].startswith(d) for b in prepared["glue"]["backbones"])
    assert all(b["model"].startswith(d) for b in prepared["concse"]["backbones"])
    assert all(b["model"].startswith(d) for b in prepared["calbert"]["backbones"])
    assert prepared["contrastivemix"]["muse"] == f"{d}/muse" and prepared["alignment"]["lexicon_source"] == f"{d}/lexicon/en-hi.txt"
    # hyperparameters untouched
    assert prepared["glue"]["num_train_epochs"] == data["glue"]["num_train_epochs"] and prepared["seeds"] == data["seeds"]

    assert prepared["koglish"]["benepar_model"] == f"{d}/nltk_data/models/benepar_en3"
    capsys.readouterr()
    rc = pipeline.main(["--profile", str(out), "--check"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "MISSING" not in text
