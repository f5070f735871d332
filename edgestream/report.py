"""The budget's HTML report: the RAM and flash breakdown against the budget lines, the search's score against RAM budget,
the accuracy/RAM/time trade-off of a search's candidates with the chosen one marked, and the sizes the cross build
measured next to the predicted ones (template ``codegen/report.html.j2``). For a detector: the ROC-AUC of its
candidates against RAM, and of the chosen one, trained as ``fit`` trains it, its ROC-AUC, the threshold calibrated
for its target false-alarm rate, the false alarms per 1,000 normal rows and the precision of its flags."""

from __future__ import annotations

import base64
import datetime
import hashlib
import io
import shlex
import subprocess
import sys
from pathlib import Path

from .budget import MEMORY_TERMS
from .targets import COMPILE_FLAGS
from .emit import environment

COMPARED = {"state_ram": "static state RAM", "tables_ram": "tables RAM", "tables_flash": "tables flash",
            "image_flash": "state image flash", "code_flash": "code flash", "stack": "deepest call stack"}


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("the HTML report draws plots with matplotlib: pip install 'edgestream[report]'") from None
    return plt


def check_dependencies() -> None:
    """Fail at once, before any work, when the report cannot be drawn (matplotlib missing)."""
    _pyplot()


def provenance(data=None, n_rows: int | None = None, board=None) -> dict[str, str]:
    """Where a report comes from: the edgestream version and its git commit, the command, the date (UTC), the data
    file (its path, size and the start of its sha256) with its number of rows, and the board's toolchain (its
    version) and flags."""
    from . import __version__

    fields = {"edgestream": __version__, "commit": git_commit(),
              "command": shlex.join(["edgestream", *sys.argv[1:]]) if sys.argv and sys.argv[0] else "",
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")}
    if data is not None:
        content = Path(data).read_bytes()
        fields["data"] = (f"{Path(data).resolve()} ({len(content):,} bytes, sha256 "
                          f"{hashlib.sha256(content).hexdigest()[:16]}"
                          + (f", {n_rows:,} rows)" if n_rows is not None else ")"))
    if board is not None:
        fields["toolchain"] = tool_version(board.toolchain.cc)
        fields["flags"] = shlex.join([*COMPILE_FLAGS, *board.toolchain.cflags])
    return fields


def git_commit() -> str:
    """The commit of the edgestream source tree (with ``+ changes`` when it differs), or why there is none."""
    source = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "none (not a git checkout)"
    return commit + (" + changes" if dirty else "")


def tool_version(command: str) -> str:
    """The first line of ``command --version``, or that it is not installed."""
    try:
        return subprocess.run([command, "--version"], capture_output=True, text=True,
                              check=True).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return f"{command} (not installed)"


def memory_figure(plt, budget):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, title, items, limit in ((axes[0], "RAM", budget.ram, budget.ram_budget),
                                    (axes[1], "flash", budget.flash, budget.flash_budget)):
        groups: dict[str, int] = {}
        for item in items:  # one bar segment per group keeps the colours distinct
            groups[item.group] = groups.get(item.group, 0) + item.bytes
        left = 0
        colours = plt.get_cmap("tab20").colors[::2] + plt.get_cmap("tab20").colors[1::2]  # a RAM bar: a dozen groups
        for index, (group, size) in enumerate(groups.items()):
            ax.barh(0, size, left=left, label=f"{group} ({size:,} B)", color=colours[index % len(colours)])
            left += size
        share = f" of {limit:,} ({100 * left / limit:.1f}%)" if limit else ""
        if limit and limit <= 4 * left:  # draw the budget line only where it fits on a readable scale
            ax.axvline(limit, color="black", linestyle="--", label=f"budget {limit:,} B")
        ax.set_title(f"{title}: {left:,} bytes{share}")
        ax.set_xlabel("bytes")
        ax.set_yticks([])
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    fig.tight_layout()
    return fig


def curve_figure(plt, curve: dict[int, float], chosen: int):
    fig, ax = plt.subplots(figsize=(6, 3.5))
    budgets = sorted(curve)
    ax.plot([b / 1024 for b in budgets], [curve[b] for b in budgets], marker="o")
    if chosen in curve:
        ax.plot([chosen / 1024], [curve[chosen]], marker="*", markersize=14, color="crimson", label="this budget")
        ax.legend()
    ax.set_xscale("log", base=2)
    ax.set_xlabel("RAM budget (KiB)")
    ax.set_ylabel("score of the choice")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def tradeoff_figure(plt, search):
    """Accuracy against RAM and against predicted instructions per sample of the evaluated candidates; the
    chosen one starred."""
    evaluated = [c for c in search.candidates if c.accuracy is not None]
    timed = all(c.instructions is not None for c in evaluated)
    fig, axes = plt.subplots(1, 2 if timed else 1, figsize=(11 if timed else 6, 4), squeeze=False)
    accuracy = [c.accuracy for c in evaluated]
    panels = [(axes[0][0], [c.budget.ram_bytes for c in evaluated], "RAM (bytes)", search.best.budget.ram_bytes)]
    if timed:
        panels.append((axes[0][1], [c.instructions for c in evaluated], "instructions per sample (predicted)",
                       search.best.instructions))
    colour = [c.instructions for c in evaluated] if timed else None
    for ax, x, label, chosen_x in panels:
        points = ax.scatter(x, accuracy, c=colour, cmap="viridis", s=18)
        ax.plot([chosen_x], [search.best.accuracy], marker="*", markersize=16, color="crimson", linestyle="",
                label="chosen")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(label)
        ax.set_ylabel("score of the choice")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    if timed:
        fig.colorbar(points, ax=axes[0][1], label="instructions per sample")
        if search.rate:
            axes[0][1].axvline(search.clock_hz / search.rate, color="black", linestyle="--", linewidth=1,
                               label=f"{search.rate:g} samples/s")
            axes[0][1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def detector_figure(plt, search):
    """ROC-AUC against RAM of a detector search's evaluated candidates; the chosen one starred."""
    evaluated = [c for c in search.candidates if c.roc_auc is not None]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.scatter([c.budget.ram_bytes for c in evaluated], [c.roc_auc for c in evaluated], s=18)
    ax.plot([search.best.budget.ram_bytes], [search.best.roc_auc], marker="*", markersize=16, color="crimson",
            linestyle="", label="chosen")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("RAM (bytes)")
    ax.set_ylabel(search.criterion.replace("_", " "))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def html_report(budget, path, curve: dict[int, float] | None = None, sizes: dict | None = None,
                origin: dict[str, str] | None = None, search=None, counted: dict | None = None,
                detector: dict | None = None) -> Path:
    """Write the report of ``budget`` to ``path``; ``curve`` maps RAM budgets to the search's score, ``sizes`` is
    :func:`edgestream.parity.compare_sizes`, ``origin`` the provenance (default: :func:`provenance` without
    data), ``search`` the :class:`edgestream.search.Search` (a detector's
    :class:`~edgestream.search.DetectorSearch`) that chose it, ``counted`` the emulator's counts per call
    (:func:`edgestream.cli.measured_counts`), ``detector`` the chosen detector's figures (``threshold``,
    ``false_alarms`` and the prequential ``roc_auc``, ``precision``, ``false_alarms_per_1000``, ``flagged``,
    ``rows``; None where unknown)."""
    plt = _pyplot()
    figures = [("RAM and flash by group", memory_figure(plt, budget))]
    if curve:
        figures.append(("the search's score against RAM budget", curve_figure(plt, curve, budget.ram_budget)))
    detector_search = search if search is not None and hasattr(search, "criterion") else None
    if detector_search is not None:
        figures.append(("ROC-AUC and RAM of the candidates", detector_figure(plt, detector_search)))
        search = None
    if search is not None:
        figures.append(("accuracy, RAM and time of the candidates", tradeoff_figure(plt, search)))
    images = []
    for alt, fig in figures:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100)
        plt.close(fig)
        images.append({"alt": alt, "data": base64.b64encode(buffer.getvalue()).decode()})
    page = environment(autoescape=True).get_template("report.html.j2").render(
        budget=budget, images=images, sizes=sizes, compared=COMPARED, provenance=origin or provenance(),
        search=search, counted=counted, terms=MEMORY_TERMS, detector_search=detector_search, detector=detector)
    path = Path(path)
    try:
        path.write_text(page)
    except OSError as error:
        raise OSError(error.errno, f"cannot write the report {path}: {error.strerror or error}") from None
    return path
