"""Progress bars that read well both in JupyterLab and in a log file.

In a notebook opened by a person, :func:`progress` is tqdm's widget, which leaves its
final line in its place once closed (:func:`notebook_tqdm`: no frozen ``0%`` in a saved notebook).
Under ``reproduce.sh`` (``CODESWITCH_LOG_PROGRESS=1``) or any non-interactive
stream it prints whole lines instead of carriage-return redraws, at most one every
``CODESWITCH_PROGRESS_INTERVAL`` seconds (default 10), plus the final line, and
never a line before the first step is done (no stuck ``0%`` lines)::

    [glue] 12/60 run  20% | 0:00:41 elapsed, 0:02:44 left

When ``CODESWITCH_PROGRESS_FILE`` names a file (``reproduce.sh`` sets it and
prints what arrives there), the lines go to that file, and the executed notebook
gets one line per outermost loop of the notebook's own process, its final one, on
stdout: a loop inside another (epochs inside runs) or inside a worker process
stays in the log.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from typing import Iterable

from tqdm import tqdm as _tqdm


class LogTqdm(_tqdm):
    """tqdm that writes one plain line per update interval (no ``\\r``)."""

    _open = 0  # bars of this process not yet closed: a bar opened inside another is an inner loop

    def __init__(self, *args, **kwargs):
        self._last_line = 0.0
        self._interval = float(os.environ.get("CODESWITCH_PROGRESS_INTERVAL", "10"))
        self._log_file = os.environ.get("CODESWITCH_PROGRESS_FILE") or None
        self._outermost = LogTqdm._open == 0 and _main_process()
        self._final_written = False
        kwargs.setdefault("file", sys.stderr)
        kwargs.setdefault("mininterval", 0.5)
        kwargs["dynamic_ncols"] = False
        kwargs["ascii"] = True
        super().__init__(*args, **kwargs)
        if not self.disable:
            LogTqdm._open += 1
            self._counted = True

    def _line(self, final: bool) -> str:
        return _line(self, final)

    def _emit(self, line: str, final: bool) -> None:
        if self._log_file:
            with open(self._log_file, "a", encoding="utf-8") as f:
                f.write(line + "\n")
            if final and self._outermost:
                sys.stdout.write(line + "\n")  # the executed notebook's one line for this loop
                sys.stdout.flush()
            return
        self.fp.write(line + "\n")
        self.fp.flush()

    def display(self, msg=None, pos=None):  # noqa: D401 - tqdm API
        if self.n == 0 or self._final_written:
            return True  # nothing done yet: no "0%" line
        now = time.monotonic()
        finished = self.total is not None and self.n >= self.total
        if not finished and now - self._last_line < self._interval:
            return True
        self._last_line = now
        self._final_written = finished
        self._emit(self._line(finished), finished)
        return True

    def close(self):
        if getattr(self, "_counted", False):
            LogTqdm._open -= 1
            self._counted = False
        if not self.disable and self.n and not self._final_written:
            self._final_written = True
            self._emit(self._line(True), True)
        self.disable = True  # we already printed the final line ourselves
        super().close()


def _line(bar: _tqdm, final: bool) -> str:
    """One plain line for ``bar``: ``[desc] 12/60 run  20% | 0:00:41 elapsed`` (and, until it is final, the time left)."""
    d = bar.format_dict
    elapsed = hms(d.get("elapsed", 0))
    if bar.total:
        line = f"[{bar.desc or 'progress'}] {bar.n}/{bar.total} {bar.unit}  {100 * bar.n / bar.total:3.0f}% | {elapsed} elapsed"
        if not final:
            rate = bar.n / d["elapsed"] if d.get("elapsed") else 0
            line += f", {hms((bar.total - bar.n) / rate) if rate else '?'} left"
    else:
        line = f"[{bar.desc or 'progress'}] {bar.n} {bar.unit} | {elapsed} elapsed"
    if bar.postfix:
        line += f" | {bar.postfix}"
    return line


@functools.cache
def notebook_tqdm() -> type:
    """tqdm's JupyterLab widget, which leaves a plain line where it stood once closed.

    A saved notebook keeps no widget state, so on reopening (and in the book) Lab shows each widget's text fallback,
    the bar as it was when first displayed: a frozen ``0%`` (issue 42).  This bar is displayed with a display id and,
    when closed, its output is replaced by its final line (:func:`_line`: where the loop ended, e.g. ``100%``), or by
    nothing for a bar that does not stay (``leave=False``: an inner loop)."""
    from tqdm.auto import tqdm as auto_tqdm
    from tqdm.notebook import tqdm as widget_tqdm

    if not issubclass(auto_tqdm, widget_tqdm):  # IPython in a terminal, not a Jupyter kernel: tqdm's text bar
        return auto_tqdm

    class NotebookTqdm(widget_tqdm):
        def __init__(self, *args, **kwargs):
            self._handle = None
            super().__init__(*args, **{**kwargs, "display": False})
            if not self.disable:
                from IPython.display import display

                self._handle = display(self.container, display_id=True)
                self.displayed = True

        def close(self):
            handle, self._handle = getattr(self, "_handle", None), None
            closing = not self.disable
            super().close()
            if closing and handle is not None:
                handle.update({"text/plain": _line(self, True) if self.leave else ""}, raw=True)

    return NotebookTqdm


def _main_process() -> bool:
    import multiprocessing

    return multiprocessing.parent_process() is None


def hms(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def log_mode() -> bool:
    """True when progress should be printed as log lines (headless runs, non-TTY streams)."""
    if os.environ.get("CODESWITCH_LOG_PROGRESS") == "1":
        return True
    try:
        from IPython import get_ipython

        if get_ipython() is not None:
            return False
    except ImportError:
        pass
    return not sys.stderr.isatty()


def progress(iterable: Iterable | None = None, *, total: int | None = None, desc: str | None = None, unit: str = "it",
             min_total: int | None = None, **kwargs):
    """A progress bar over ``iterable`` suited to where the code runs (see module doc).

    ``min_total``: no bar for a loop of fewer items (``total``, else ``len(iterable)``): it finishes at once, and a bar
    would only lengthen the log (smoke's small corpora and query lists)."""
    if os.environ.get("CODESWITCH_NO_PROGRESS") == "1":
        kwargs["disable"] = True
    if min_total is not None:
        n = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        if n is not None and n < min_total:
            kwargs["disable"] = True
    if log_mode():
        return LogTqdm(iterable, total=total, desc=desc, unit=unit, **kwargs)
    tqdm = notebook_tqdm()
    # in JupyterLab a bar inside another (epochs inside runs) disappears when done: the saved notebook keeps the
    # outermost bar's final line, not a stack of inner bars (some never started: "0%")
    kwargs.setdefault("leave", not any(not b.disable for b in list(getattr(tqdm, "_instances", ()))))
    return tqdm(iterable, total=total, desc=desc, unit=unit, **kwargs)
