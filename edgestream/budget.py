"""The memory-budget manager: what a learner needs in RAM and flash on a board, and the largest one that fits.

RAM is exact for the static state (the generated struct, laid out like the C compiler does for the board: natural
alignment on ARM and x86, none on AVR) plus the stack the generated wrappers use for one call. Flash counts the
generated tables exactly (worst case for a tree model not trained yet) and the runtime code as compiled for the
board when its toolchain is installed, or a recorded size for its architecture otherwise.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .export import runtime_sources, wrapper_stack_bytes
from .shrubs import Region, ShrubEnsemble, struct_size

LEARNERS = ("tree", "forest", "shrubs")
BUNDLE_KIND = {"tree": "trees", "forest": "trees", "shrubs": "shrubs"}
# text bytes of the runtime files at -Os (gcc 12), used when the board's toolchain is not installed (es_infer.c:
# as a bundle compiles it for a float32 model with uint16 child refs and Q15 leaves)
RECORDED_CODE_BYTES = {
    "armv6-m": {"es_binning.c": 244, "es_tree.c": 274, "es_cart.c": 1368, "es_shrubs.c": 1792, "es_infer.c": 472},
    "armv7e-m": {"es_binning.c": 200, "es_tree.c": 282, "es_cart.c": 1330, "es_shrubs.c": 1522, "es_infer.c": 376},
}


@dataclass(frozen=True)
class Item:
    """One named amount of memory."""

    name: str
    group: str
    bytes: int


@dataclass
class Budget:
    """RAM and flash of one learner configuration on one board, against the budgets."""

    learner: str
    board: str
    config: dict
    ram: list[Item]
    flash: list[Item]
    ram_budget: int
    flash_budget: int | None  # None: no flash limit (a Linux board's storage)
    code_measured: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def ram_bytes(self) -> int:
        return sum(item.bytes for item in self.ram)

    @property
    def state_bytes(self) -> int:
        """The static learning state alone (what the ELF's ``<name>_memory`` holds), padding included."""
        return sum(item.bytes for item in self.ram if item.group not in ("stack", "tables"))

    @property
    def flash_bytes(self) -> int:
        return sum(item.bytes for item in self.flash)

    @property
    def fits(self) -> bool:
        return self.ram_bytes <= self.ram_budget and (self.flash_budget is None or
                                                      self.flash_bytes <= self.flash_budget)

    def to_json(self) -> dict:
        return {**asdict(self), "ram_bytes": self.ram_bytes, "flash_bytes": self.flash_bytes, "fits": self.fits}

    def to_text(self) -> str:
        lines = [f"{self.learner} on {self.board}: " + ", ".join(f"{k}={v}" for k, v in self.config.items())]
        for title, items, total, budget in (("RAM", self.ram, self.ram_bytes, self.ram_budget),
                                            ("flash", self.flash, self.flash_bytes, self.flash_budget)):
            share = f"of {budget:,} bytes ({100 * total / budget:.1f}%)" if budget else "bytes (no limit)"
            lines.append(f"  {title}: {total:,} {share}")
            lines += [f"    {item.name:<16} {item.group:<10} {item.bytes:>9,}" for item in items]
        lines.append("  fits" if self.fits else "  DOES NOT FIT")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def state_ram(learner: ShrubEnsemble, n_features: int, n_classes: int, packed: bool) -> list[Item]:
    regions = learner.layout(n_features, n_classes)
    items = [Item(r.name, r.group, r.bytes) for r in regions]
    padding = struct_size(regions, packed) - sum(r.bytes for r in regions)
    return items + ([Item("padding", "alignment", padding)] if padding else [])


def call_stack(n_features: int, n_classes: int) -> Item:
    return Item("call locals", "stack", wrapper_stack_bytes(n_features, n_classes))


def table_flash(n_features: int, n_classes: int, n_edges: int, input_bytes: int, n_nodes: int = 0,
                n_leaves: int = 0, n_trees: int = 0) -> list[Item]:
    items = [Item("bin edges", "tables", n_edges * input_bytes), Item("bin offsets", "tables", 2 * (n_features + 1))]
    if n_trees:
        items += [Item("nodes", "tables", 4 * n_nodes), Item("leaf values", "tables", 2 * n_leaves * n_classes),
                  Item("roots+weights", "tables", 4 * n_trees)]
    return items


def code_flash(learner: str, board) -> tuple[list[Item], bool]:
    """Runtime code: compiled for the board when its compiler is installed, else the recorded sizes."""
    sizes = measured_code_bytes(board)
    measured = sizes is not None
    if sizes is None:
        sizes = RECORDED_CODE_BYTES.get(board.arch, RECORDED_CODE_BYTES["armv7e-m"])
    items = [Item(p.stem, "code", sizes[p.name]) for p in runtime_sources(BUNDLE_KIND[learner]) if p.suffix == ".c"]
    return items, measured


_CODE_CACHE: dict[str, dict] = {}


def measured_code_bytes(board) -> dict | None:
    """text+data bytes of each runtime file compiled at -Os for the board, or None without its compiler."""
    sources = [p for p in runtime_sources() if p.suffix == ".c"]
    key = hashlib.sha256(json.dumps([board.name, board.toolchain.cc, board.toolchain.cflags]).encode()
                         + b"".join(p.read_bytes() for p in sources)).hexdigest()
    if key in _CODE_CACHE:
        return _CODE_CACHE[key]
    sizes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for source in sources:
            obj = Path(tmp) / (source.stem + ".o")
            try:
                subprocess.run([board.toolchain.cc, *board.toolchain.cflags, "-std=c99", "-Os", "-ffunction-sections",
                                "-c", str(source), "-o", str(obj)], check=True, capture_output=True)
                out = subprocess.run([board.toolchain.size, str(obj)], check=True, capture_output=True, text=True)
            except (OSError, subprocess.CalledProcessError):
                return None
            text, data = (int(v) for v in out.stdout.splitlines()[1].split()[:2])
            sizes[source.name] = text + data
    _CODE_CACHE[key] = sizes
    return sizes


STACK_NOTE = ("stack counts the generated wrapper's locals; `edgestream build` measures the deepest call chain "
              "(a few hundred bytes for a shrub learn step)")


def tables_in_ram(board, tables: list[Item]) -> list[Item]:
    """avr-gcc copies const data to RAM (no PROGMEM in the runtime), so there the tables cost RAM too."""
    if not is_avr(board):
        return []
    return [Item("tables copy", "tables", sum(item.bytes for item in tables))]


def is_avr(board) -> bool:
    return board.arch.startswith("avr")


def pointer_bytes(board) -> int:
    return 2 if is_avr(board) else 8 if board.arch == "armv8-a" else 4


def shrubs_budget(board, n_features: int, n_classes: int, learner: ShrubEnsemble, ram: int, flash: int) -> Budget:
    """Exact for a learner whose bins are fitted (its real edge count); else every feature with max_bins edges."""
    packed = is_avr(board)
    code, measured = code_flash("shrubs", board)
    fitted = hasattr(learner, "bins_")
    n_edges = len(learner.bins_.flat_edges()[0]) if fitted else n_features * (learner.max_bins - 1)
    config = [Region("bytes", "", "uint8_t", 4), Region("sizes", "", "uint16_t", 5), Region("step", "", "uint32_t", 1)]
    structs = [Item("config", "tables", struct_size(config, packed)),
               Item("model pointers", "tables", 18 * pointer_bytes(board))]
    tables = table_flash(n_features, n_classes, n_edges, 4) + structs
    settings = {"window_size": learner.window_size, "max_shrubs": learner.max_shrubs,
                "max_depth": learner.max_depth, "max_bins": learner.max_bins, "features": n_features,
                "classes": n_classes}
    ram_items = state_ram(learner, n_features, n_classes, packed) + [call_stack(n_features, n_classes)]
    notes = [STACK_NOTE] + ([] if fitted else ["bin edges counted for every feature at max_bins"])
    return Budget("shrubs", board.name, settings, ram_items + tables_in_ram(board, tables), tables + code, ram,
                  flash, measured, notes)


def trees_budget(board, learner: str, n_features: int, n_classes: int, max_depth: int, n_trees: int,
                 max_bins: int, ram: int, flash: int) -> Budget:
    """Worst case before training: full trees of max_depth and every bin edge kept."""
    n_leaves = n_trees * 2**max_depth
    code, measured = code_flash(learner, board)
    tables = table_flash(n_features, n_classes, n_features * (max_bins - 1), 4, n_nodes=2 * n_leaves - n_trees,
                         n_leaves=n_leaves, n_trees=n_trees)
    tables.append(Item("ensemble", "tables", 4 * pointer_bytes(board) + 4))
    config = {"max_depth": max_depth, "n_trees": n_trees, "max_bins": max_bins, "features": n_features,
              "classes": n_classes}
    return Budget(learner, board.name, config, [call_stack(n_features, n_classes)] + tables_in_ram(board, tables),
                  tables + code, ram, flash, measured,
                  ["flash is the worst case of full trees; a trained model's exported tables are smaller", STACK_NOTE])


def plan(learner: str, board, n_features: int, n_classes: int, ram: int | None = None, flash: int | None = None,
         **params) -> Budget:
    """The largest configuration of ``learner`` that fits the budgets (the board's RAM and flash by default)."""
    if learner not in LEARNERS:
        raise ValueError(f"learner {learner!r} must be one of {LEARNERS}")
    ram = board.ram_bytes if ram is None else ram
    flash = board.flash_bytes if flash is None else flash
    for name, value, limit in (("RAM", ram, board.ram_bytes), ("flash", flash, board.flash_bytes)):
        if value is not None and limit is not None and value > limit:
            raise ValueError(f"a {name} budget of {value:,} bytes exceeds {board.name}'s {limit:,} bytes")
    if learner == "shrubs":
        return plan_shrubs(board, n_features, n_classes, ram, flash, params)
    return plan_trees(learner, board, n_features, n_classes, ram, flash, params)


def plan_shrubs(board, n_features, n_classes, ram, flash, params) -> Budget:
    fixed = {k: params[k] for k in ("window_size", "max_shrubs", "max_depth") if params.get(k) is not None}
    others = {k: v for k, v in params.items() if k not in fixed and v is not None}
    if len(fixed) == 3:
        learner = ShrubEnsemble(**fixed, **others)
    else:
        worst = shrubs_budget(board, n_features, n_classes, ShrubEnsemble(**others), ram, flash)
        tables = [item for item in worst.flash if item.group == "tables"]
        reserve = sum(item.bytes for item in tables_in_ram(board, tables))
        learner = ShrubEnsemble.for_budget(ram - reserve, n_features, n_classes, **fixed, **others)
    budget = shrubs_budget(board, n_features, n_classes, learner, ram, flash)
    if not budget.fits:
        raise ValueError(f"the shrub ensemble needs {budget.ram_bytes:,} bytes of RAM and {budget.flash_bytes:,} of "
                         f"flash; the budget is {ram:,} and {flash or 'unlimited'} bytes\n{budget.to_text()}")
    return budget


def plan_trees(learner, board, n_features, n_classes, ram, flash, params) -> Budget:
    n_trees = params.get("n_trees") or (1 if learner == "tree" else 10)
    max_bins = params.get("max_bins") or 255
    depths = [params["max_depth"]] if params.get("max_depth") is not None else range(12, -1, -1)
    budget = None
    for depth in depths:
        budget = trees_budget(board, learner, n_features, n_classes, depth, n_trees, max_bins, ram, flash)
        if budget.fits:
            return budget
    raise ValueError(f"no {learner} of {n_trees} tree(s) fits {flash} bytes of flash and {ram:,} of RAM; the "
                     f"smallest tried needs {budget.flash_bytes:,} bytes of flash\n{budget.to_text()}")


def html_report(budget: Budget, path, curve: dict[int, float] | None = None) -> Path:
    """An HTML page with the region breakdown (and accuracy against RAM budget when ``curve`` is given)."""
    import base64

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("the HTML report draws plots with matplotlib: pip install matplotlib") from None
    figures = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, title, items, limit in ((axes[0], "RAM", budget.ram, budget.ram_budget),
                                    (axes[1], "flash", budget.flash, budget.flash_budget)):
        groups: dict[str, int] = {}
        for item in items:  # one bar segment per group keeps the colours distinct
            groups[item.group] = groups.get(item.group, 0) + item.bytes
        left = 0
        for group, size in groups.items():
            ax.barh(0, size, left=left, label=f"{group} ({size:,} B)")
            left += size
        share = f" of {limit:,} ({100 * left / limit:.1f}%)" if limit else ""
        if limit and limit <= 4 * left:  # draw the budget line only where it fits on a readable scale
            ax.axvline(limit, color="black", linestyle="--", label=f"budget {limit:,} B")
        ax.set_title(f"{title}: {left:,} bytes{share}")
        ax.set_xlabel("bytes")
        ax.set_yticks([])
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    fig.tight_layout()
    figures.append(fig)
    if curve:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        budgets = sorted(curve)
        ax.plot([b / 1024 for b in budgets], [curve[b] for b in budgets], marker="o")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("RAM budget (KiB)")
        ax.set_ylabel("prequential accuracy")
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        figures.append(fig)
    images = []
    for fig in figures:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100)
        plt.close(fig)
        images.append(base64.b64encode(buffer.getvalue()).decode())
    body = "".join(f'<img src="data:image/png;base64,{image}">' for image in images)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>edgestream budget: {budget.learner} on "
            f"{budget.board}</title></head><body><h1>{budget.learner} on {budget.board}</h1>"
            f"<pre>{html.escape(budget.to_text())}</pre>{body}</body></html>")
    path = Path(path)
    path.write_text(page)
    return path
