"""One notebook, headlessly: :func:`run_notebook` executes it through papermill in its own kernel (the path
``./reproduce.sh`` and the test suite take), and :func:`write_index` writes the figures folder's ``INDEX.md`` from the
entries the notebooks left, with the run's provenance.  :mod:`codeswitch.pipeline.cli` drives them."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from ..core.profiles import load_profile, project_root
from ..core.atomic import atomic_write_text, prepare_output
from .notebooks import NOTEBOOKS, PARTIAL, NotebookSpec, available, executed_dir, failed_notebooks, notebooks_dir, partial_copy, set_aside


class NotebookFailed(RuntimeError):
    def __init__(self, spec: NotebookSpec, executed: Path, cell: int | None, detail: str):
        self.spec, self.executed, self.cell, self.detail = spec, executed, cell, detail
        where = f"cell {cell}" if cell is not None else "before any cell ran"
        super().__init__(f"notebook {spec.file} failed in {where}: {detail}\n  executed copy (with traceback): {executed}")


def run_notebook(
    spec: NotebookSpec,
    profile: str = "smoke",
    *,
    output_root: Path | None = None,
    overrides: Mapping | None = None,
    root: Path | None = None,
    log_output: bool = False,
    progress_file: Path | None = None,
) -> Path:
    """Execute one notebook headlessly; return the executed copy's path or raise :class:`NotebookFailed`."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    root = root or project_root()
    prof = load_profile(profile, overrides, root=root, output_root=output_root)
    check_outputs(prof)  # a non-writable runs/ or figures/ fails here, before any training; temps of killed runs go
    out_dir = executed_dir(prof)
    running = out_dir / f"{spec.stem}.running.ipynb"
    final = out_dir / spec.file
    env_before = dict(os.environ)
    os.environ.update(
        {
            "CODESWITCH_NOTEBOOK": spec.stem,
            "CODESWITCH_LOG_PROGRESS": "1",
            "CODESWITCH_HOME": str(root),
            "MPLBACKEND": "Agg",
            "PYTHONHASHSEED": "0",
            "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # no "Writing model shards: 0%" stubs; the library's own bars remain
            "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
        }
    )
    # progress lines go to a side file (reproduce.sh prints it); the notebook keeps one final line per loop
    own_progress = progress_file is None
    progress_file = Path(progress_file) if progress_file is not None else progress_path(out_dir, spec)
    os.environ["CODESWITCH_PROGRESS_FILE"] = str(progress_file)
    if output_root is not None:
        os.environ["CODESWITCH_OUTPUT_ROOT"] = str(Path(output_root).resolve())
    from ..core.atomic import temp_prefix

    # the kernel's connection file (else /tmp/tmp*.json, left behind when this process is killed): a temp named
    # after this process, which the next run's prepare_output removes once this process is gone
    connection = out_dir / f"{temp_prefix(out_dir / 'kernel.json')}{spec.stem}.json"
    try:
        pm.execute_notebook(
            str(notebooks_dir(root) / spec.file),
            str(running),
            parameters={"profile": profile, "overrides": dict(overrides or {})},
            kernel_name="python3",
            cwd=str(notebooks_dir(root)),
            log_output=log_output,
            progress_bar=False,
            request_save_on_cell_execute=True,
            extra_arguments=["--IPKernelApp.log_level=ERROR"],  # no "running over TCP without encryption" warning
            kernel_manager_class=_kernel_manager_class(connection),  # a class: the client still owns, and stops, the kernel
        )
    except PapermillExecutionError as exc:
        kept = set_aside(running, final, "failed")
        raise NotebookFailed(spec, kept, exc.exec_count, f"{exc.ename}: {exc.evalue}") from None
    except BaseException as exc:
        interrupted = isinstance(exc, (KeyboardInterrupt, SystemExit))
        kept = set_aside(running, final, "interrupted" if interrupted else "failed")
        if interrupted:
            raise
        raise NotebookFailed(spec, kept, None, f"{type(exc).__name__}: {exc}") from None
    finally:
        os.environ.clear()
        os.environ.update(env_before)
        if own_progress:
            progress_file.unlink(missing_ok=True)
        connection.unlink(missing_ok=True)
    os.replace(running, final)  # a complete copy: the only thing that ever replaces one
    for what in PARTIAL:  # the partial copies of earlier runs are out of date now
        partial_copy(final, what).unlink(missing_ok=True)
    return final


def progress_path(folder: Path, spec: NotebookSpec) -> Path:
    """This process's progress file for ``spec`` in ``folder``: named after the host and the process, so two runs of one
    notebook at once never share one (each console would print both runs' bars); a killed run's is a temp the next
    run's :func:`codeswitch.core.atomic.prepare_output` removes."""
    from ..core.atomic import temp_prefix

    return Path(folder) / f"{temp_prefix(Path(folder) / f'{spec.stem}.progress.log')}log"


def _kernel_manager_class(connection: Path) -> type:
    """jupyter_client's kernel manager, with two changes for headless runs.

    * The kernel's connection file goes to ``connection`` (below the run's folder) instead of
      ``/tmp/tmp*.json``, so a killed kernel leaves nothing behind in /tmp.
    * Shutting a kernel down sends no interrupt first: ``shutdown_kernel`` sends SIGINT before its
      shutdown request, and a kernel still finishing its last message (07, with its many tables)
      logged ``[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel`` on the terminal of a clean
      run.  The shutdown request (then SIGTERM, SIGKILL after ``shutdown_wait_time``) ends it as before.
    """
    from jupyter_client import AsyncKernelManager

    class HeadlessKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            kwargs.setdefault("connection_file", str(connection))
            super().__init__(**kwargs)

        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:
                return
            await super()._async_interrupt_kernel()

    return HeadlessKernelManager


def write_index(profile: str, *, output_root: Path | None = None, root: Path | None = None, overrides: Mapping | None = None,
                warnings_file: Path | None = None) -> Path:
    """Write ``INDEX.md`` in the profile's figures folder (``figures/<profile>[+<hash>]/``) from the index entries the notebooks left.

    Its header is the provenance of the run (:mod:`codeswitch.core.provenance`): profile, overrides, git commit
    (and whether the tree was dirty); each artifact's row names the inputs its runs read.  ``warnings_file``: the
    warnings this run reported (:func:`codeswitch.core.runs.report_warning`), listed under the table.
    """
    from ..core.provenance import lines as provenance_lines, provenance
    from ..core.render import md_escape
    from ..core.report import read_index
    from ..core.runs import read_reported_warnings, summarize_warnings
    from ..core.atomic import remove_all_stale_temps

    root = root or project_root()
    prof = load_profile(profile, overrides, root=root, output_root=output_root)
    remove_all_stale_temps(prof.figures_dir)  # a table write killed while moving its files into place: completed now
    entries = read_index(prof.figures_dir)
    by_name = {e["name"]: e for e in entries}
    order = [a for s in NOTEBOOKS for a in s.artifacts]
    names = [n for n in order if n in by_name] + sorted(n for n in by_name if n not in order)
    prov = provenance(prof, inputs={})
    lines = [
        f"# Tables and figures — profile `{prof.name}`" + (f", with overrides (`{prof.figures_dir.name}`)" if prov["overrides"] else ""),
        "",
        *(f"- {md_escape(line)}" for line in provenance_lines(prov) if not line.startswith("inputs:")),
        f"- written: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- executed notebooks: [`{executed_dir(prof).relative_to(prof.output_root or root)}/`]"
        f"({Path(os.path.relpath(executed_dir(prof), prof.figures_dir)).as_posix()}/)",
        "",
        "| artifact | kind | files | notebook | profile | written | caption | inputs | the paper's claim: "
        + ("its outcome on the smoke data (not a test of the paper) |" if prof.name == "smoke" else "supported by this run? |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    stale = []
    other_settings = []
    for n in names:
        e = by_name[n]
        files = ", ".join(f"[{f}]({f})" for f in e["files"])
        caption = md_escape(e["caption"])
        made_with = (e.get("provenance") or {}).get("profile_hash")
        mark = "" if made_with == prov["profile_hash"] else " **STALE**"
        lines.append(f"| `{n}`{mark} | {e['kind']} | {files} | `{e['notebook']}` | {e['profile']} | {e['written']} | {caption} | "
                     f"{_inputs_cell(e)} | {_claim_cell(e)} |")
        if mark:
            other_settings.append(f"`{n}` ({made_with or 'settings not recorded'})")
        written_by = (e.get("provenance") or {}).get("git_commit")
        if written_by and written_by != prov["git_commit"]:
            stale.append(f"`{n}` ({written_by})")
    failed = failed_notebooks(prof)
    if failed:
        lines += ["", "**The last run of these notebooks did not complete**; their artifacts above are from an earlier run:", "",
                  *(f"- `{stem}`: {md_escape(reason)} (log: [{log.name}]({Path(os.path.relpath(log, prof.figures_dir)).as_posix()}))"
                    for stem, reason, log in failed)]
    if other_settings:
        lines += ["", f"**STALE**: made with other profile settings than this profile's now (settings hash "
                      f"{prov['profile_hash']}): " + ", ".join(other_settings) + ". Run their notebooks again."]
    if stale:
        lines += ["", "Written by another commit than this index: " + ", ".join(stale)]
    from ..core.claims import inputs_note

    recorded = {k: v for e in by_name.values() for k, v in (((e.get("provenance") or {}).get("inputs")) or {}).items()}
    note = inputs_note(prof.name, recorded)  # what the numbers are, read from the inputs the artifacts recorded
    if note:
        lines += ["", note]
    missing = [a for s in available(root) for a in s.artifacts if a not in by_name]
    if missing:
        lines += ["", "Not (yet) produced: " + ", ".join(f"`{m}`" for m in missing)]
    reported = read_reported_warnings(warnings_file) if warnings_file else []
    if reported:
        lines += ["", "Warnings of the run that wrote this index:", "", *(f"- {md_escape(w)}" for w in summarize_warnings(reported))]
    return atomic_write_text(prof.figures_dir / "INDEX.md", "\n".join(lines) + "\n")


def _inputs_cell(entry: Mapping) -> str:
    """INDEX.md's inputs column: the input identities recorded with the artifact."""
    from ..core.render import md_escape

    inputs = (entry.get("provenance") or {}).get("inputs")
    if inputs is None:
        return "not recorded"
    return md_escape("; ".join(f"{k}: {', '.join(v) if isinstance(v, (list, tuple)) else v}" for k, v in inputs.items())) or "none"


def _claim_cell(entry: Mapping) -> str:
    """INDEX.md's claim column: verdict mark and the claim (tables; figures show the claim of their table); under the
    smoke profile worded from the artifact's recorded inputs (synthetic or real data), as its table note is."""
    from ..core.claims import Claim, real_data
    from ..core.render import md_escape

    c = entry.get("claim")
    if not c:
        return "–" if entry.get("kind") == "table" else ""
    claim = Claim(**c)
    cell = claim.index_cell(entry.get("profile"), real_data=real_data((entry.get("provenance") or {}).get("inputs")))
    return f"{md_escape(cell)}: {md_escape(claim.text)}"


def check_outputs(profile) -> None:
    """Every folder a run writes, checked writable before any work (``PermissionError`` naming the folder): the run
    cache (with its kept models), the executed notebooks' folder, and the tables' and figures' folder (a read-only
    ``figures/`` was found only after all training, in the cell that saved the first table)."""
    from ..core.atomic import ensure_writable

    prepare_output(profile.runs_dir)
    ensure_writable(executed_dir(profile), what="the executed notebooks' folder")
    ensure_writable(profile.figures_dir, what="the tables' and figures' folder")
