"""The memory-budget manager, the one owner of every RAM and flash figure: what a learner needs on a board, and the
largest configuration of its ladder that fits.

RAM is the learner's state (the generated struct, laid out like the board's compiler does: natural alignment on ARM
and x86, none on AVR), the stack of one call (its deepest call chain as compiled for the board), and on AVR the
state's config and pointer struct (the runtime reads them in place, so avr-gcc copies them to RAM; every other
constant table stays in flash, ES_FLASH in csrc/es_flash.h). Flash is every constant object of the bundle (exact for
a fitted model: the bin edges it really keeps, its nodes and leaf rows; the worst case for a configuration not
trained yet), the initial image of the learning state (an initialized static struct sits in .data, whose image is in
flash; an all-zero state goes to .bss and costs none), and the code as compiled for the board when its toolchain is
installed (without it the report says the code is not counted). For an exported model, code and stack are those of
its bundle's C compiled as a firmware build does: the functions (and the runtime's constant tables) its predict and
learn calls reach, and their deepest chain of GCC's -fstack-usage frames, equal to the linked ELF's; for a
configuration not trained yet, the code its runtime's public functions reach (an upper bound) and their deepest
chain under a bound of the wrapper's frame (its locals, every register a function may save and the return address,
rounded up to the frame alignment), so a plan is never below the exported model's figures.

The figures, named the same in every output (defined in docs/tutorials/plan-the-memory.md, "The memory figures"):
*model state* (the learning state's struct), *RAM at peak* (model state + image sequence number + the deepest
call's stack + on AVR the tables read from RAM), *flash* (tables + the state's initial image + code); each either
*exact* (a trained model: its bundle's) or *a bound* (a configuration not trained yet). `edgestream build` adds the
*firmware* figures, the whole linked program with its harness.

Time and energy of an online learner come from the two owners of their figures: :mod:`edgestream.costs`
(instructions per prediction and per learn call on the board's core, mean and worst) and the board profile (its
clock and, where its datasheet gives them, the active current and supply voltage, ``[energy]``). From them the
budget derives the highest sample rate the board sustains (one instruction per cycle, a Cortex-M's best case) and
an energy estimate per sample; a board without energy figures gets none.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from . import cache, emit, learners, targets
from .boards import Energy, Flash
from .costs import CallCost, beyond_calibration, calibrated_cores, call_cost
from .emit import wrapper_stack_bytes
from .checkpoint import image_layout
from .emit import SOURCE_DIR
from .export import bundle_files, runtime_modules, runtime_sources
from .scratch import scratch_dir
from .simulate import identify_compiler
from .state import RAM_DESCRIPTORS
from .task import CLASSIFICATION, REGRESSION, output_context, task_of
from .tree import CLASSES, FEATURES
from .units import BYTES

DEFAULT_NAME = "model"  # export's default --name
NAME = "NAME_"  # in a note, the bundle's C prefix (Budget.name)
MEMORY_TERMS = "docs/tutorials/plan-the-memory.md#the-memory-figures"  # where the figures below are defined
STATE_GROUPS_OUTSIDE = ("stack", "tables", "checkpoint")  # RAM groups that are not the learning state
STACK_NOTE = ("stack is the deepest call chain of one call as compiled for the board (GCC's -fstack-usage frames "
              "over the call graph of the objects); `edgestream build` measures it on the linked firmware")


@dataclass(frozen=True)
class Item:
    """One named amount of memory."""

    name: str
    group: str
    bytes: int


@dataclass(frozen=True)
class DeviceTime:
    """Predicted instructions of a prediction and a learn call on the board's core, its clock and its datasheet
    energy figures. A test-then-train sample costs one of each."""

    cost: CallCost
    clock_hz: int
    energy: Energy | None  # None: the board profile has no energy figures
    flash: Flash | None = None  # the board's flash (its wait states at the clock), None without the figures

    def cycles(self) -> dict[str, dict[str, float]]:
        """Cycles per sample, mean and worst: at one instruction per cycle (``fastest``) and, where the board's
        flash has wait states, with every instruction fetch waiting them (``every_fetch_waiting``)."""
        per_sample = {key: self.cost.per_sample(worst=key == "worst") for key in ("mean", "worst")}
        cycles = {"fastest": per_sample}
        if self.flash is not None and self.flash.wait_states:
            cycles["every_fetch_waiting"] = {key: value * (1 + self.flash.wait_states)
                                             for key, value in per_sample.items()}
        return cycles

    def microseconds(self) -> dict[str, dict[str, float]]:
        """:meth:`cycles` at the board's clock."""
        return {case: {key: value / self.clock_hz * 1e6 for key, value in values.items()}
                for case, values in self.cycles().items()}

    def wait_states_text(self) -> str:
        if self.flash is None:
            return "flash wait states: no figures for this board"
        if self.flash.wait_states is None:
            return f"flash wait states: none apply ({self.flash.source})"
        return f"{self.flash.wait_states} flash wait states at {self.clock_hz / 1e6:g} MHz ({self.flash.source})"

    def rates(self) -> dict[str, float]:
        """The highest sample rates the board sustains: on average (rows buffered during a long call) and when every
        sample must be predicted and learned before the next arrives (the worst calls)."""
        return {key: self.clock_hz / self.cost.per_sample(worst=key == "worst") for key in ("mean", "worst")}

    def microjoules(self) -> dict[str, float] | None:
        """Energy estimate per sample, mean and worst, or None without the board's figures."""
        if self.energy is None:
            return None
        return {key: self.energy.microjoules(self.cost.per_sample(worst=key == "worst"), self.clock_hz)
                for key in ("mean", "worst")}

    def to_json(self) -> dict:
        energy = self.microjoules()
        return {**self.cost.to_json(), "samples_per_second": self.rates(), "cycles_per_sample": self.cycles(),
                "microseconds_per_sample": self.microseconds(),
                "flash_wait_states": self.flash.wait_states if self.flash else None,
                "energy_estimate_uj_per_sample": energy,
                "energy_source": self.energy.source if energy else "no energy figures for this board"}

    def lines(self) -> list[str]:
        """The report's lines: instructions, time per sample, sample rates and the energy estimate."""
        cost = self.cost
        lines = [f"{kind}: {calls.mean:,.0f} instructions on average, {calls.worst:,.0f} at worst (predicted by the "
                 f"learner's cost model)" for kind, calls in (("predict", cost.predict), ("learn", cost.learn))]
        cycles, micro = self.cycles(), self.microseconds()
        waiting = "" if "every_fetch_waiting" not in cycles else (
            f"; with every instruction fetch waiting the flash, {cycles['every_fetch_waiting']['worst']:,.0f} cycles, "
            f"{micro['every_fetch_waiting']['worst']:,.1f} µs")
        lines.append(f"time per sample at worst (predict and learn): {cycles['fastest']['worst']:,.0f} cycles, "
                     f"{micro['fastest']['worst']:,.1f} µs at {self.clock_hz / 1e6:g} MHz and one instruction per "
                     f"cycle{waiting}; {self.wait_states_text()}")
        return lines + self.rate_lines()

    def rate_lines(self) -> list[str]:
        """The highest sample rates and the energy estimate (or that there is none)."""
        rates, energy = self.rates(), self.microjoules()
        lines = [f"highest sample rate at {self.clock_hz / 1e6:g} MHz (predict and learn each sample): "
                 f"{rates['mean']:,.0f} samples/s on average, {rates['worst']:,.0f} if every sample must end "
                 f"before the next"]
        if energy is None:
            return lines + ["energy per sample: no energy figures for this board"]
        return lines + [f"energy per sample, an estimate: {energy['mean']:.3g} µJ on average, {energy['worst']:.3g} "
                        f"µJ at worst (instructions / clock x {self.energy.active_current_ma:g} mA x "
                        f"{self.energy.supply_voltage:g} V; {self.energy.source})"]


@dataclass
class Budget:
    """RAM and flash of one learner configuration on one board, against the budgets."""

    learner: str
    board: str
    config: dict  # the parameters that set the size, and the features and classes
    params: dict  # every parameter of the estimator (``learners.get(learner).make(**params)`` rebuilds it)
    ram: list[Item]
    flash: list[Item]
    ram_budget: int
    flash_budget: int | None  # None: no flash limit (a Linux board's storage)
    code_measured: bool = False
    notes: list[str] = field(default_factory=list)
    time: DeviceTime | None = None  # online learners with a cost model for the board's core
    exact: bool = False  # a trained model's figures (its bundle's); else a bound of a configuration not trained
    checkpoint: dict | None = None  # learning bundles with state images: the image and its two slots in flash
    name: str = DEFAULT_NAME  # the bundle's C prefix, in the notes' function names

    @property
    def ram_bytes(self) -> int:
        """RAM at peak: the model state, the image sequence number, the deepest call's stack and (AVR) the tables
        the runtime reads from RAM."""
        return sum(item.bytes for item in self.ram)

    @property
    def state_bytes(self) -> int:
        """The model state: the static learning state alone (what the ELF's ``<name>_memory`` holds), padding
        included."""
        return sum(item.bytes for item in self.ram if item.group not in STATE_GROUPS_OUTSIDE)

    @property
    def flash_bytes(self) -> int:
        """Flash: the constant tables, the state's initial image and the code."""
        return sum(item.bytes for item in self.flash)

    @property
    def fits(self) -> bool:
        return self.ram_bytes <= self.ram_budget and (self.flash_budget is None or
                                                      self.flash_bytes <= self.flash_budget)

    @property
    def basis(self) -> str:
        """What the figures are: a trained model's exact ones or a bound of a configuration not trained yet."""
        return "exact, of the trained model's bundle" if self.exact else "a bound, of the configuration untrained"

    def ram_parts(self) -> dict[str, int]:
        """RAM at peak, part by part (the parts that hold bytes)."""
        parts = {"model state": self.state_bytes, "image sequence": _sum(self.ram, "checkpoint"),
                 "stack": _sum(self.ram, "stack"), "tables in RAM": _sum(self.ram, "tables")}
        return {name: size for name, size in parts.items() if size}

    def flash_parts(self) -> dict[str, int]:
        """Flash, part by part (the parts that hold bytes)."""
        parts = {name: _sum(self.flash, name) for name in ("tables", "state image", "code")}
        return {name: size for name, size in parts.items() if size}

    def figures(self) -> str:
        """The memory figures in one line with their relation: ``RAM at peak 5,704 = model state 5,536 + stack
        168; flash 7,604 = tables 1,000 + ...`` (terms: :data:`MEMORY_TERMS`)."""
        def relation(total: int, parts: dict[str, int]) -> str:
            return f"{total:,} = " + " + ".join(f"{name} {size:,}" for name, size in parts.items())

        return (f"RAM at peak {relation(self.ram_bytes, self.ram_parts())}; "
                f"flash {relation(self.flash_bytes, self.flash_parts())}")

    def sections(self) -> dict[str, int]:
        """The model's static RAM by section: ``.data`` (an initialized state, tables copied to RAM) and ``.bss``
        (an all-zero state, the image sequence)."""
        image = _sum(self.flash, "state image")
        return {".data": image + _sum(self.ram, "tables"),
                ".bss": self.state_bytes - image + _sum(self.ram, "checkpoint")}

    def named(self, name: str) -> Budget:
        """This budget for the bundle named ``name`` (its notes' function names)."""
        return replace(self, name=name)

    @property
    def shown_notes(self) -> list[str]:
        return [note.replace(NAME, f"{self.name}_") for note in self.notes]

    def to_json(self) -> dict:
        fields = {key: value for key, value in asdict(self).items() if key != "time"}
        fields["notes"] = self.shown_notes
        return {**fields, "model_state_bytes": self.state_bytes, "ram_at_peak_bytes": self.ram_bytes,
                "flash_bytes": self.flash_bytes, "ram_at_peak_parts": self.ram_parts(),
                "flash_parts": self.flash_parts(), "sections": self.sections(), "basis": self.basis,
                "terms": MEMORY_TERMS, "fits": self.fits,
                **(self.time.to_json() if self.time else {})}

    def to_text(self) -> str:
        lines = [f"{self.learner} on {self.board}: " + ", ".join(f"{k}={v}" for k, v in self.config.items()),
                 f"  {self.figures()} ({self.basis}; terms: {MEMORY_TERMS})"]
        for title, items, total, budget in (("RAM at peak", self.ram, self.ram_bytes, self.ram_budget),
                                            ("flash", self.flash, self.flash_bytes, self.flash_budget)):
            share = f"of {budget:,} bytes ({100 * total / budget:.1f}%)" if budget else "bytes (no limit)"
            lines.append(f"  {title}: {total:,} {share}")
            lines += [f"    {item.name:<16} {item.group:<10} {item.bytes:>9,}" for item in items]
        lines.append("  fits" if self.fits else "  DOES NOT FIT")
        lines.append("  static RAM by section: "
                     + ", ".join(f"{name} {size:,}" for name, size in self.sections().items()))
        if self.checkpoint:
            lines.append(f"  checkpoint: {slots_text(self.checkpoint)}")
        lines += [f"  {line}" for line in (self.time.lines() if self.time else [])]
        lines += [f"  note: {note}" for note in self.shown_notes]
        return "\n".join(lines)


def _sum(items: list[Item], group: str) -> int:
    return sum(item.bytes for item in items if item.group == group)


@dataclass(frozen=True)
class Runtime:
    """What the compiler makes of a learner's C for a board: code bytes per file, the deepest stack of one call,
    and the code an application adds when it also calls the state-image functions."""

    code: dict[str, int]
    stack: int
    image_code: int = 0


# Per board architecture family: (frame alignment, the most a function saves besides its locals: callee-saved
# registers and the return address). ARM: r4-r11 and lr; AVR: r2-r17, r28-r29 and a 3-byte return address;
# AArch64: x19-x30 and d8-d15; RV32 (ilp32, 16-byte aligned stack): s0-s11 and ra.
FRAME_BOUNDS = {"avr": (1, 21), "armv8-a": (16, 160), "arm": (8, 36), "riscv": (16, 52)}


def wrapper_frame_bytes(board, n_features: int, n_classes: int) -> int:
    """An upper bound of a generated wrapper's stack frame on ``board``."""
    family = ("avr" if is_avr(board) else "riscv" if board.arch.startswith("rv") else
              board.arch if board.arch in FRAME_BOUNDS else "arm")
    align, saved = FRAME_BOUNDS[family]
    return -(-(wrapper_stack_bytes(n_features, n_classes) + saved) // align) * align


def call_stack(runtime: Runtime | None, n_features: int, n_classes: int) -> Item:
    """One call's stack: the compiled call chain, or the wrapper's locals alone without the board's compiler."""
    return Item("call chain", "stack", runtime.stack if runtime else wrapper_stack_bytes(n_features, n_classes))


def code_flash(runtime: Runtime | None) -> list[Item]:
    """Code compiled for the board; none when the board's compiler is not installed."""
    return [Item(Path(name).stem, "code", size) for name, size in runtime.code.items() if size] if runtime else []


_RUNTIME_CACHE: dict[str, Runtime] = {}


def compiled(board, files: dict[str, str], sources: list[str], roots,
             indirect: dict[str, set[str]] | None = None) -> tuple[dict, int, dict, dict, dict] | None:
    """Compile ``sources`` (names among ``files``: name -> text) for the board as a firmware build does; per file
    the bytes of the functions (and the runtime's ``es_`` tables) reachable from ``roots`` (all of them when
    None), the deepest stack from them, the call graph (with the ``indirect`` calls through function pointers,
    :func:`edgestream.targets.indirect_calls`), every function's size and its stack frame. None
    without the board's compiler."""
    functions, calls, where = {}, {}, {}
    with scratch_dir("edgestream-codesize-") as tmp:
        for filename, text in files.items():
            (Path(tmp) / filename).write_text(text)
        try:
            for source in sources:
                obj = Path(tmp) / (Path(source).stem + ".o")
                subprocess.run([board.toolchain.cc, *targets.COMPILE_FLAGS, *board.toolchain.cflags, "-I", tmp, "-c",
                                str(Path(tmp) / source), "-o", str(obj)], check=True, capture_output=True)
                calls.update(targets.call_graph(targets.tool(board, "objdump", "-dr", "--no-show-raw-insn", obj)))
                calls.update(targets.table_references(targets.tool(board, "objdump", "-r", obj)))
                for name, (kind, size, _) in targets.read_elf(obj)[1].items():
                    if kind == "FUNC" or name.startswith("es_"):  # functions and the runtime's constant tables
                        functions[name], where[name] = size, source
        except (OSError, subprocess.CalledProcessError, targets.ToolchainMissing):
            return None
        frames = {usage.function: usage.bytes for usage in targets.stack_usage(Path(tmp), functions)}
    reached = reachable(calls, functions if roots is None else roots) & set(functions)
    for caller, callees in (indirect or {}).items():  # the callees the roots reach (through a table or a pointer)
        if caller in calls:
            calls[caller] |= callees & reached
    code = {source: sum(functions[f] for f in reached if where[f] == source) for source in sources}
    stack = max(targets.worst_stack(calls, frames, functions if roots is None else roots).values(), default=0)
    return code, stack, calls, functions, frames


def reachable(calls: dict[str, set[str]], roots) -> set[str]:
    seen, todo = set(), list(roots)
    while todo:
        function = todo.pop()
        if function not in seen:
            seen.add(function)
            todo.extend(calls.get(function, ()))
    return seen


API_DECLARATION = re.compile(r"\b(es_\w+)\s*\(")
REBUILD_CALLS = {CLASSIFICATION: "rebuild", REGRESSION: "rebuild_target"}


def other_task_calls(state, task: str) -> set[str]:
    """The runtime functions of ``state``'s tasks other than ``task``: their learn and predict calls, and the
    rebuild of a runtime with one per task (``<prefix>_rebuild`` / ``<prefix>_rebuild_target``, each reaching its
    own task's steps alone)."""
    others = [other for other in state.tasks if other != task]
    return ({state.call(other, kind) for other in others for kind in (0, 1)}
            | {f"{state.prefix}_{REBUILD_CALLS[other]}" for other in others if other in REBUILD_CALLS})


def compiled_runtime(spec, board, n_features: int, n_classes: int, task: str = CLASSIFICATION) -> Runtime | None:
    """A configuration not trained yet: the code its runtime's public functions reach (every variant of the
    runtime: an upper bound; the state-image ones, ``*_validate`` and ``es_image.h``, apart; the learn, predict and
    rebuild calls of the state's other tasks left out) and their deepest call chain under a bound of the wrapper's
    frame."""
    runtime = runtime_sources(runtime_modules(spec, task))
    sources = [p.name for p in runtime if p.suffix == ".c"]
    others = other_task_calls(spec.state, task) if spec.state is not None else set()
    key = hashlib.sha256(json.dumps([board.name, board.toolchain.cc, board.toolchain.cflags, sources,
                                     sorted(others)]).encode() + runtime_digest()).hexdigest()
    if key not in _RUNTIME_CACHE:
        _RUNTIME_CACHE[key] = _stored_runtime(board, key) or _compile_runtime(board, runtime, sources, others, key)
    runtime = _RUNTIME_CACHE[key]
    return runtime and Runtime(runtime.code, wrapper_frame_bytes(board, n_features, n_classes) + runtime.stack,
                               runtime.image_code)


def _compile_runtime(board, runtime: list[Path], sources: list[str], others: set[str], key: str) -> Runtime | None:
    """:func:`compiled_runtime`'s compile, stored for later processes (None without the board's compiler)."""
    declared = {p.name: set(API_DECLARATION.findall(p.read_text())) for p in runtime if p.suffix == ".h"}
    images = declared.pop("es_image.h", set()) | {f for names in declared.values() for f in names
                                                  if f.endswith("_validate")}
    roots = set().union(*declared.values()) - images - others
    files = {p.name: p.read_text() for p in runtime_sources()}
    built = compiled(board, files, sources, roots, targets.indirect_calls("model"))
    if built is None:
        return None
    code, stack, calls, functions, _ = built
    extra = sum(functions[f] for f in reachable(calls, images) - reachable(calls, roots) if f in functions)
    _store_json(_runtime_file(board, key), asdict(Runtime(code, stack, extra)))
    return Runtime(code, stack, extra)


def _runtime_file(board, key: str, adding: bool = True) -> Path:
    """Where a runtime's compiled figures are kept: by ``key`` and the compiler's version (an upgraded compiler
    compiles anew)."""
    compiler = identify_compiler(board.toolchain.cc, " ".join(board.toolchain.cflags))
    return _sizes_file("runtime-" + hashlib.sha256(f"{key}\0{compiler}".encode()).hexdigest(), adding)


def _stored_runtime(board, key: str) -> Runtime | None:
    """The compile of an earlier process (the runtime of every learner takes seconds of the compiler per board)."""
    try:
        return Runtime(**json.loads(_runtime_file(board, key, adding=False).read_text()))
    except (OSError, ValueError, TypeError):
        return None


_DIGESTS: dict[tuple, bytes] = {}


def runtime_digest() -> bytes:
    """SHA-256 of the hand-written runtime (every file of csrc/), read again only when a file's size or
    modification time changed (a search prices hundreds of configurations on the same sources)."""
    files = runtime_sources()
    stamps = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if stamps not in _DIGESTS:
        _DIGESTS[stamps] = hashlib.sha256(b"".join(p.read_bytes() for p in files)).digest()
    return _DIGESTS[stamps]


def compiled_bundle(model, board, optimize: str) -> Runtime | None:
    """A fitted model: its bundle's C (wrapper, tables and runtime) compiled for the board as a firmware does; the
    code and stack of what its prediction and learning calls reach (what a firmware that calls them links)."""
    bundle, context, _ = bundle_files(model, "model", optimize)
    files = {Path(path).name: data.decode() for path, data in bundle.items() if path.startswith(f"{SOURCE_DIR}/")}
    sources = context["sources"]
    key = hashlib.sha256(json.dumps([board.name, board.toolchain.cc, board.toolchain.cflags, files]).encode())
    key = key.hexdigest()
    if key not in _RUNTIME_CACHE:
        entry = [f"model_{call}" for call in targets.API_CALLS]
        built = compiled(board, files, sources, entry, targets.indirect_calls("model"))
        if built is None:
            _RUNTIME_CACHE[key] = None
        else:
            code, stack, calls, functions, _ = built
            used = reachable(calls, entry)
            images = [f for f in functions if f.startswith("model_") and f not in entry]
            extra = sum(functions[f] for f in reachable(calls, images) - used if f in functions)
            _RUNTIME_CACHE[key] = Runtime(code, stack, extra)
    return _RUNTIME_CACHE[key]


@dataclass(frozen=True)
class InlineCode:
    """What the inline code of a bundle exported for speed adds: ``<name>.c``'s code (the wrappers and the walk)
    and the walk's deepest stack, which ``es_forest_predict_inline`` calls through a pointer."""

    code: int
    stack: int


_INLINE_CACHE: dict[str, list[tuple[int, InlineCode]] | None] = {}
LONG_REACH = 4096  # bytes: the longest reach of a short branch or literal load on the boards' cores (AVR's rjmp)


def inline_code_bound(board, worst) -> InlineCode | None:
    """An upper bound of the inline code of every bundle that a configuration not trained yet exports for speed
    (``worst``: its :class:`edgestream.frozen.WorstCase`), compiled for the board; None without its compiler.

    The walk is one function holding one block of nested ifs per tree: what a tree adds is its comparisons, their
    constants, its leaves' additions and the jumps between its blocks, which the compiler lays out over the whole
    function (a jump or a constant load out of a short instruction's reach takes a long one). The bound compiles
    the bundle's ``<name>.c`` (wrappers and walk) with 1, 2, 4, ... synthetic worst-case trees
    (:meth:`WorstCase.device`: as many leaves and levels as the configuration allows, distinct constants that no
    instruction holds as immediates, every leaf a distinct row of full-width additions) until the configuration's
    tree count or until the half as many trees already take ``LONG_REACH`` bytes, past every short reach, so the
    last doubling's growth per tree prices each further tree at the long encodings:
    ``code(T) = code(t) + (T - t) * (code(t) - code(t / 2)) / (t / 2)``, exact for the synthetic trees when
    ``t = T``. The walk's stack is the largest of the compiles. Cached per board, toolchain and configuration shape
    (the tree count only ends the doubling sooner)."""
    key = hashlib.sha256(json.dumps([board.name, board.toolchain.cc, board.toolchain.cflags, worst.shape()],
                                    sort_keys=True).encode() + runtime_digest())
    key = key.hexdigest()
    if key not in _INLINE_CACHE:
        _INLINE_CACHE[key] = _stored_sizes(key)
    measured = _INLINE_CACHE[key]
    if measured is None:
        return None
    n_trees = 1
    while True:
        known = dict(measured)
        if n_trees not in known:
            code = compiled_inline(board, worst, n_trees)
            if code is None:
                _INLINE_CACHE[key] = None
                return None
            measured.append((n_trees, code))
            known[n_trees] = code
            _store_sizes(key, measured)
        half = known.get(n_trees // 2)
        if n_trees >= worst.n_trees or (half is not None and half.code >= LONG_REACH):
            break
        n_trees = min(2 * n_trees, worst.n_trees)
    stack = max(code.stack for _, code in measured)
    last = known[n_trees]
    if n_trees >= worst.n_trees:
        return InlineCode(last.code, stack)
    slope = -(-(last.code - half.code) // (n_trees - n_trees // 2))
    return InlineCode(last.code + (worst.n_trees - n_trees) * slope, stack)


def _sizes_file(key: str, adding: bool = True) -> Path:
    return cache.cache_dir(prune_it=adding) / "sizes" / f"{key}.json"


def _stored_sizes(key: str) -> list[tuple[int, InlineCode]]:
    """The compiles of earlier processes for ``key`` (compiling a worst-case tree takes seconds)."""
    try:
        return [(n, InlineCode(code, stack)) for n, code, stack in json.loads(_sizes_file(key).read_text())]
    except (OSError, ValueError, TypeError):
        return []


def _store_sizes(key: str, measured: list[tuple[int, InlineCode]]) -> None:
    _store_json(_sizes_file(key), [[n, c.code, c.stack] for n, c in measured])


def _store_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(value))
    os.replace(partial, path)  # whole or not at all, whatever runs beside it


def compiled_inline(board, worst, n_trees: int) -> InlineCode | None:
    """``<name>.c`` of a bundle for speed of ``n_trees`` synthetic worst-case trees compiled for the board: its
    code (wrappers and walk) and the walk's deepest stack; None without the board's compiler."""
    from .frozen import device_context

    context = {"name": "model", "learner": "", "learning": False, "input_dtype": worst.input_dtype,
               "missing_rule": "", "n_features": worst.n_features, "n_classes": worst.n_classes, "checkpoint": None,
               "task": "classification", "target": None,
               "version": "", "model_sha256": "", "class_names": [], "feature_names": None,
               **device_context(worst.device(n_trees), "model", "speed")}
    files = {p.name: p.read_text() for p in runtime_sources() if p.suffix == ".h"}
    files.update(emit.render_files(context, {"model.c": "frozen.c.j2", "model.h": "model.h.j2",
                                             **context["extra_files"]}))
    built = compiled(board, files, ["model.c"], [f"model_{call}" for call in targets.API_CALLS])
    if built is None:
        return None
    code, _, calls, _, frames = built
    return InlineCode(code["model.c"], targets.worst_stack(calls, frames, ["model_walk"]).get("model_walk", 0))


def is_avr(board) -> bool:
    return board.arch.startswith("avr")


def pointer_bytes(board) -> int:
    return 2 if is_avr(board) else 8 if board.arch == "armv8-a" else 4


def size_config(spec, model, n_features: int, n_classes: int) -> dict:
    """The parameters that set the model's size, as the budget reports them."""
    params = model.get_params()
    keys = [k for k in spec.ladder_params if k in params] + [k for k in ("n_trees", "max_bins") if k in params]
    return {**{key: params[key] for key in keys}, "features": n_features, "classes": n_classes}


def estimate(spec, board, model, n_features: int, n_classes: int, ram: int, flash: int | None,
             optimize: str = "speed") -> Budget:
    """RAM and flash of ``model`` (fitted: exact; unfitted: its configuration's worst case) on ``board``, exported
    with ``optimize``."""
    packed = is_avr(board)
    tables = [Item(name, "tables", size)
              for name, size in spec.tables(model, n_features, n_classes, pointer_bytes(board), packed, optimize)]
    state, image, sequence, notes, checkpoint = [], [], [], [STACK_NOTE], None
    if spec.state is not None:
        layout = spec.state.layout(model.device_config(n_features, n_classes))
        state = [Item(name, group, size) for name, group, size in layout.groups(packed)]
        exported = model.device_state()
        if exported is not None:
            image_bytes = layout.initial_image_bytes(*exported, packed=packed)
        else:
            image_bytes = layout.size(packed)
            notes.append("the state's initial image is counted whole (a model that has learned exports its state)")
        image = [Item("state image", "state image", image_bytes)] if image_bytes else []
    if spec.state is not None and spec.checkpoints:
        sequence = [Item("image sequence", "checkpoint", 4)]
        reset_bytes = image_layout(layout).payload_bytes if image_bytes else 0
        checkpoint = slots(board, image_layout(layout).image_bytes)
        if reset_bytes:
            notes.append(f"NAME_reset, when an application calls it, links a copy of the exported state's image: "
                         f"{reset_bytes:,} more bytes of flash")
    if not learners.is_fitted(model):
        notes.insert(0, "tables are the configuration's worst case; a trained model's exported tables are smaller")
    # AVR: the tables stay in flash (ES_FLASH); the state's descriptors are read in place, from RAM
    copied = [item for item in tables if spec.state is not None and item.name in RAM_DESCRIPTORS] if packed else []
    fitted = learners.is_fitted(model)
    if fitted:
        runtime = compiled_bundle(model, board, optimize)
    else:
        runtime = compiled_runtime(spec, board, n_features, n_classes, task_of(model))
        notes.append("code is what the runtime's public functions reach in every variant of the runtime; an "
                     "exported model links only its own")
        worst = spec.worst_case(model, n_features, n_classes) if spec.worst_case and optimize == "speed" else None
        inline = inline_code_bound(board, worst) if runtime is not None and worst and worst.inline else None
        if inline is not None:
            runtime = Runtime({**runtime.code, "model.c": inline.code}, runtime.stack + inline.stack,
                              runtime.image_code)
            notes.append(f"the trees are inline code (--optimize speed): {worst.n_trees:,} times the code of one "
                         f"worst-case tree of the configuration ({worst.max_leaves:,} leaves, depth "
                         f"{worst.max_depth}) as compiled, an upper bound, and the walk's stack on top of the call "
                         "chain")
    if runtime is not None and runtime.image_code:
        notes.append(f"the state-image functions (NAME_save, NAME_restore, ...), when an application calls them, "
                     f"add {runtime.image_code:,} bytes of code")
    if runtime is None:
        notes.append(f"runtime code and its stack not counted: {board.toolchain.cc} is not installed "
                     "(scripts/setup.sh installs it)")
    timing = device_time(spec, board, model.get_params(), n_features, n_classes, notes)
    return Budget(spec.name, board.name, size_config(spec, model, n_features, n_classes), model.get_params(),
                  state + sequence + [call_stack(runtime, n_features, n_classes)] + copied,
                  tables + image + code_flash(runtime), ram, flash, runtime is not None, notes, timing,
                  fitted and runtime is not None, checkpoint)


def slots(board, image_bytes: int) -> dict:
    """A state image of ``image_bytes`` (header included) and the flash its two checkpoint slots take in the
    board's erase sectors (:meth:`edgestream.boards.Flash.slots`; none without the board's sector figures)."""
    if board.flash is None:
        return {"image_bytes": image_bytes, "sector_bytes": None}
    sector, per_slot, total = board.flash.slots(image_bytes)
    return {"image_bytes": image_bytes, "sector_bytes": sector or None, "sectors_per_slot": per_slot,
            "flash_bytes": total, "sectors": board.flash.layout_text(), "source": board.flash.source}


def slots_text(slot: dict) -> str:
    image = f"a state image of {slot['image_bytes']:,} bytes"
    if slot["sector_bytes"]:
        return (f"{image}; two slots take {slot['sectors_per_slot']} sector(s) of {slot['sector_bytes']:,} bytes each, "
                f"{slot['flash_bytes']:,} bytes of flash")
    return f"{image}; " + ("no run of the part's sectors holds two slots" if "sectors" in slot
                           else "no flash sector figures for this board")


def device_time(spec, board, params: dict, n_features: int, n_classes: int, notes: list[str]) -> DeviceTime | None:
    """The learner's predicted calls on ``board`` (None without a cost model for its core, said in ``notes`` when
    the learner has a model for other cores)."""
    cost = call_cost(spec, params, n_features, n_classes, board.arch)
    if cost is None:
        if calibrated_cores(spec.name):
            notes.append(f"time per call not predicted: the {spec.name} cost model is not calibrated for "
                         f"{board.name}'s core ({board.arch})")
        return None
    beyond = beyond_calibration(spec, params, n_features, n_classes, board.arch)
    if beyond:
        notes.append(f"time per call extrapolated: {len(beyond)} work terms of this configuration are beyond the "
                     f"{spec.name} cost model's calibration on {board.arch} (the first: {beyond[0]})")
    return DeviceTime(cost, board.clock_hz, board.energy, board.flash)


def plan(learner: str, board, n_features: int, n_classes: int, ram: int | None = None, flash: int | None = None,
         optimize: str = "speed", task: str = CLASSIFICATION, **params) -> Budget:
    """The largest configuration of ``learner`` that fits the budgets (the board's RAM and flash by default), as
    exported with ``optimize``. Parameters given (not None) are fixed; the learner's ladder chooses the others,
    largest first. ``task``: the form of the learner planned (a regressor has one output: ``n_classes`` 1)."""
    budgets = []  # the rungs are estimated in order until one fits (a speed estimate may compile code)
    for budget in each_configuration(learner, board, n_features, n_classes, ram, flash, optimize, task=task,
                                     **params):
        if budget.fits:
            return budget
        budgets.append(budget)
    raise not_fitting(learner, board, n_features, n_classes, budgets)


def configurations(learner: str, board, n_features: int, n_classes: int, ram: int | None = None,
                   flash: int | None = None, optimize: str = "speed", grid: tuple[dict, ...] | None = None,
                   task: str = CLASSIFICATION, **params) -> list[Budget]:
    """The budget of every distinct configuration of ``grid`` (default: the learner's ladder) of the learner's
    form for ``task``, in its order, the parameters given (not None) fixed; budgets larger than the board's are
    refused."""
    return list(each_configuration(learner, board, n_features, n_classes, ram, flash, optimize, grid, task,
                                   **params))


def each_configuration(learner: str, board, n_features: int, n_classes: int, ram: int | None = None,
                       flash: int | None = None, optimize: str = "speed", grid: tuple[dict, ...] | None = None,
                       task: str = CLASSIFICATION, **params):
    """:func:`configurations`, one budget at a time (of the learner's form for ``task``)."""
    spec = learners.get(learner, task)
    FEATURES.check(n_features)
    if task != CLASSIFICATION and n_classes != 1:
        raise ValueError(f"a {task} model has one output, not {n_classes} classes")
    if task == CLASSIFICATION:
        CLASSES.check(n_classes)
    for name, value in (("ram", ram), ("flash", flash)):
        if value is not None:
            BYTES.check(value, name)
    ram = board.ram_bytes if ram is None else ram
    flash = board.flash_bytes if flash is None else flash
    for name, value, limit in (("RAM", ram, board.ram_bytes), ("flash", flash, board.flash_bytes)):
        if value is not None and limit is not None and value > limit:
            raise ValueError(f"a {name} budget of {value:,} bytes exceeds {board.name}'s {limit:,} bytes")
    fixed = {key: value for key, value in params.items() if value is not None}
    spec.make(task, **fixed)  # unknown parameters and bad values are named here
    rungs = [rung | fixed for rung in (spec.ladder if grid is None else grid)] or [fixed]
    given, refused = 0, None
    for config in dict.fromkeys(json.dumps(rung, sort_keys=True) for rung in rungs):
        try:  # a rung that the fixed parameters make invalid (e.g. a window below a fixed minimum) is skipped
            budget = estimate(spec, board, spec.make(task, **json.loads(config)), n_features, n_classes, ram, flash,
                              optimize)
        except ValueError as error:
            refused = error
            continue
        given += 1
        yield budget
    if not given:
        raise refused


def not_fitting(learner: str, board, n_features: int, n_classes: int, budgets: list[Budget]) -> ValueError:
    """The error for budgets none of which fits: what was given, and what the smallest configuration needs."""
    smallest = min(budgets, key=lambda b: (b.ram_bytes, b.flash_bytes))
    flash = smallest.flash_budget
    return ValueError(f"no {learner} configuration for {n_features} features and {n_classes} classes fits "
                      f"{smallest.ram_budget:,} bytes of RAM and {f'{flash:,} bytes' if flash else 'unlimited'} of "
                      f"flash on {board.name}; the smallest needs {smallest.ram_bytes:,} bytes of RAM and "
                      f"{smallest.flash_bytes:,} of flash\n{smallest.to_text()}")


def of_model(model, board, ram: int | None = None, flash: int | None = None, optimize: str = "speed") -> Budget:
    """The exact budget of a fitted model (what its bundle exported with ``optimize`` takes on ``board``)."""
    spec = learners.of_model(model)
    return estimate(spec, board, model, learners.model_input(model)[1], output_context(model)["n_classes"],
                    board.ram_bytes if ram is None else ram, board.flash_bytes if flash is None else flash, optimize)
