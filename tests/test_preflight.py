"""The preflight (`./reproduce.sh --check`) and `--prepare DIR`, never touching the network.

`--check` reads the Hugging Face cache with local_files_only; `--prepare` is tested
against a local fake of `huggingface_hub.snapshot_download` that copies stand-in
folders, and a fake URL fetcher.
"""

from __future__ import annotations

import re
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from codeswitch.core import hub

from codeswitch.pipeline import cli as pipeline, preflight
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
    headers = [line for line in out.splitlines() if line.startswith("notebook")]
    for nb in ("01", "02", "03", "04", "05", "06", "07"):
        assert any(re.search(rf"\b{nb}\b", h) for h in headers), (nb, headers)
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
    assert len(missing) >= 40 and out.count("MISSING") == len(missing)
    # each resource once, under the notebooks that share it (the Koglish datasets once, not once per notebook)
    rows = re.findall(r"^  (?:ok     |MISSING) (\w+) +(.+?) +(\S+)$", out, re.M)
    assert len(rows) == len(statuses) == len(set(rows)), [r for r in rows if rows.count(r) > 1]
    assert out.count("Jangyeong/Koglish_GLUE --repo-type dataset") == 1 and "notebooks 01, 02, 03, 04\n" in out


def _fix_lines(out: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^ +(?:fix|then): (.*)$", out, re.M)]


def test_check_fix_lines_run_as_printed(no_network, capsys):
    """Every fix line is a command to paste: the ./reproduce.sh ones name the checked profile (and its --only and
    --set), and add a --set that the profile accepts; the hf download ones use options the CLI has."""
    rc = pipeline.main(["--profile", "paper", "--only", "02,03", "--set", "seeds=[11111]", "--check"])
    out = capsys.readouterr().out
    assert rc == 1
    fixes = _fix_lines(out)
    runs = [shlex.split(f, comments=True) for f in fixes if f.startswith("./reproduce.sh")]
    assert runs and all(w[:7] == ["./reproduce.sh", "--profile", "paper", "--only", "02,03", "--set", "seeds=[11111]"] for w in runs), runs
    # as printed (plus --dry-run): the profile takes the new --set, and the run would now stop on the folder it names
    tried = {}
    for words in runs:
        tried.setdefault(words[8].split("=")[0].split(".")[0], words)  # one per section (each call takes seconds)
    for words in tried.values():
        assert words[7] == "--set"
        setting, value = words[8].split("=", 1)
        assert pipeline.main([*words[1:], "--dry-run"]) == 1
        text = capsys.readouterr().out
        assert re.search(rf"^ +{re.escape(setting)} = '{re.escape(value)}[^']*' \(--set {re.escape(setting)}\): /", text, re.M), text
    hf = [shlex.split(f, comments=True) for f in fixes if f.startswith("hf download")]
    assert hf
    r = subprocess.run([shutil.which("hf") or "hf", "download", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for words in hf:
        for opt in (w for w in words if w.startswith("--")):
            assert opt in r.stdout, (words, opt)
    assert out.rstrip().endswith("./reproduce.sh --profile paper --set 'seeds=[11111]' --prepare /data/codeswitch")


def test_check_fix_for_benepar_runs_as_printed(no_network, capsys):
    pipeline.main(["--profile", "paper", "--only", "01", "--check"])
    fix = next(f for f in _fix_lines(capsys.readouterr().out) if "benepar.download" in f)
    words = shlex.split(fix, comments=True)
    assert words[:2] == ["python", "-c"] and len(words) == 3
    compile(words[2], "<fix>", "exec")


def test_dry_run_exits_1_on_anything_missing_and_a_run_starts_no_kernel(no_network, capsys, monkeypatch):
    """Offline, the hub resources of the paper profile are missing: --dry-run says so and exits 1; a run stops in
    seconds before papermill starts a kernel (it used to fail in cell 5 of 03 after 38 s)."""
    t0 = time.perf_counter()
    assert pipeline.main(["--profile", "paper", "--only", "03", "--dry-run"]) == 1
    out = capsys.readouterr().out
    assert "a real run would stop here" in out and "concse.backbones.2.model = 'xlm-roberta-large'" in out
    assert "./reproduce.sh --profile paper --only 03 --check" in out

    def no_kernel(*a, **k):
        raise AssertionError("a kernel was started although resources are missing")

    monkeypatch.setattr(pipeline, "run_notebook", no_kernel)
    assert pipeline.main(["--profile", "paper", "--only", "03"]) == 2
    err = capsys.readouterr().err
    assert "nothing was started" in err and "Jangyeong/Koglish_STS" in err
    assert time.perf_counter() - t0 < 60
    assert pipeline.main(["--only", "03", "--dry-run"]) == 0  # smoke: everything is there


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
    from codeswitch.calbert.data import ASSETS as CALBERT_ASSETS
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

    from codeswitch.pipeline.standins import build_standin

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
    # every model here is the 2-layer tiny-bert: --check reads its depth from the prepared copy and refuses paper's layer 8
    assert pipeline.main(["--profile", str(out), "--check"]) == 2
    assert "alignment.align_layer = 8 is not a hidden state of backbone mBERT" in capsys.readouterr().err
    rc = pipeline.main(["--profile", str(out), "--set", "alignment.align_layer=1", "--check"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "MISSING" not in text
