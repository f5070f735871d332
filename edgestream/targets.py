"""Cross builds of a bundle with a board's toolchain, and runs of it under the board's emulator.

:func:`build` compiles the bundle's sources (its manifest's ``sources``) and a firmware harness
(``codegen/firmware_main.c.j2``) with the board's compiler and reports what the linker produced: text/data/bss of
the ELF, the model's objects (tables in flash, the learning state ``<name>_memory`` in RAM) and the stack of every
function (``-fstack-usage``). Bare-metal boards are linked with picolibc at the chip's memory map.

:func:`run` links the same code at the emulated machine's memory map and runs it under QEMU (semihosting files on
Cortex-M, plain files under qemu-user). The harness reads ``rows.bin`` from its working directory: one mode byte
(0 = predict, 1 = test-then-train), then per row the features as little-endian float32/int32/int16, followed in mode 1 by
the target: a classifier's uint8 class index, a regressor's int16 target code (a detector learns the row alone). The
bundle's manifest says the task, and the task the calls (:data:`CALLS`): per row a classifier's harness calls
predict_proba, then predict, then (mode 1) learn, and writes to ``results.bin`` the uint8 class and the uint16 Q15
probabilities; a regressor's calls predict_raw, then (mode 1) learn, and writes the int32 raw output; a detector's
calls score, then (mode 1) learn, and writes its int32 output (the Q15 score, plus ``task.FLAG`` when flagged). The exit status of the firmware is QEMU's. AVR has
no files under simavr: the same input is a table in the firmware's flash, and the same results come back as hex
text lines on USART0 (``io = "uart"``, :func:`uart_results`).

Counting (``run(..., instructions=True)``) gives per API call and row what the board's emulator can measure
(:func:`count_unit`). Under QEMU: executed instructions, exactly, from its ``-singlestep -d exec,nochain`` log
(:func:`count_instructions`). Under simavr, whose Debian build has no instruction trace: CPU cycles, measured by
the harness itself with Timer1 at the CPU clock (simavr advances the timer by the cycles of each instruction it
executes: a call that waits 1,000 cycles counts 1,000 more than an empty one, tests/test_targets.py). AVR executes
most instructions in 1 cycle and none in fewer, so the cycles bound the instructions from above, and they are what
a sample rate needs (cycles per sample = clock / rate). A count includes the call and its return (an empty
function counts 19 cycles on the ATmega2560, 17 on the ATmega328P), not the measurement, whose cost is
calibrated once and subtracted. What remains is Timer1's overflow interrupt, which extends the counter to 32
bits: about 40 cycles every 65,536 (0.06% of a long call) are counted with the call they interrupt.

Firmware is cached by a hash of its sources, the harness and the compiler commands in
``$EDGESTREAM_CACHE/targets`` (see :func:`edgestream.simulate.cache_dir`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .boards import Board, board_names, load_board
from .ranges import Range
from .scratch import scratch_dir
from .emit import C_TYPES, environment
from .export import load_bundle_model, read_manifest
from .simulate import cache_dir
from .task import ANOMALY, CLASSIFICATION, REGRESSION, check_target

COMPILE_FLAGS = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Os", "-ffunction-sections",
                 "-fdata-sections", "-fstack-usage", "-ffp-contract=off")
LINK_FLAGS = ("-Wl,--gc-sections",)
HARNESS = "firmware_main.c"
ELF = "firmware.elf"
INPUT_FILE, OUTPUT_FILE = "rows.bin", "results.bin"
EXIT_STATUS = {2: "a file could not be opened or written", 3: "the input file is malformed"}
EXIT_CALLS = {16: "predict_proba", 32: "predict", 48: "learn", 64: "predict_raw", 80: "score"}
# The API calls of a bundle of each task, in the harness's order (learn last), and all of them.
CALLS = {CLASSIFICATION: ("predict_proba", "predict", "learn"), REGRESSION: ("predict_raw", "learn"),
         ANOMALY: ("score", "learn")}
API_CALLS = ("predict_proba", "predict", "predict_raw", "score", "learn")
# The target a learning harness reads after each row, per task (a detector's learn takes the row alone).
LABEL_FORMATS = {CLASSIFICATION: "u1", REGRESSION: "<i2", ANOMALY: None}
HARNESS_FUNCTIONS = {"main", "step"}
TRACE = "trace.log"


class ToolchainMissing(RuntimeError):
    """A compiler, binutils tool or emulator of the board is not installed."""


class TargetError(RuntimeError):
    """A cross build failed, or the firmware under emulation ended with an error."""


class EmulatorTimeout(TimeoutError):
    """The emulator did not finish in time."""


class NotRunnable(TargetError, ValueError):
    """A board whose emulator cannot run programs with file I/O (it can be built, not run): a usage error."""


TIMEOUT = Range("timeout", 0.0, 24 * 3600.0, float, above=True)  # seconds an emulator run may take


def check_runnable(board) -> None:
    """Refuse a board that has no emulator able to run the firmware harness (before any build)."""
    if not runs_programs(board):
        runnable = ", ".join(name for name in board_names() if runs_programs(load_board(name)))
        raise NotRunnable(f"board {board.name} has no emulated file I/O; it can be built, not run (boards that "
                          f"run: {runnable})")


def count_unit(board) -> str:
    """What ``run(..., instructions=True)`` counts on ``board``: ``"cycles"`` measured by the UART harness's
    Timer1 (AVR under simavr, which traces no instructions), else ``"instructions"`` from QEMU's log."""
    return "cycles" if board.io == "uart" else "instructions"


def runs_programs(board) -> bool:
    """The board's emulator runs the firmware harness (rows in a file or in flash, results in a file or on the
    UART)."""
    return board.io != "none" and board.emulator is not None


@dataclass
class StackUsage:
    function: str
    file: str
    bytes: int
    qualifier: str  # "static", "dynamic" or "dynamic,bounded" (as GCC writes it)


@dataclass
class SymbolSize:
    bytes: int
    memory: str  # "flash" or "ram"
    zeroed: bool = False  # in .bss: a variable that starts at zero (a table always has values)


@dataclass
class BuildReport:
    board: str
    bundle: str
    elf: str
    text: int
    data: int
    bss: int
    stack_reserved: int  # part of bss the C library reserves for the stack (picolibc's .stack; 0 elsewhere)
    ram_bytes: int  # the board's
    flash_bytes: int | None  # the board's; None when programs load from a disk
    code_bytes: int  # functions compiled from the bundle's sources (runtime and model wrappers), the runtime's es_ tables
    objects: dict[str, SymbolSize]  # the model's objects: tables and state
    state_bytes: int | None  # <name>_memory, the learning state (None for frozen models)
    state_image_bytes: int  # its initial image in flash (0 when it starts all zero, in .bss)
    stack: list[StackUsage] = field(default_factory=list)  # per function, largest first
    stack_max: dict[str, int] = field(default_factory=dict)  # main and API functions -> deepest call chain

    @property
    def flash_used(self) -> int:
        return self.text + self.data  # .data initializers are stored in flash

    @property
    def ram_used(self) -> int:
        return self.data + self.bss

    @property
    def ram_peak(self) -> int:
        """Static RAM plus the deepest stack of the firmware, in place of the C library's reservation."""
        return self.ram_used - self.stack_reserved + self.stack_max.get("main", 0)

    @property
    def tables_bytes(self) -> int:
        return sum(s.bytes for name, s in self.objects.items() if name != f"{self.bundle}_memory" and not s.zeroed)

    @property
    def tables_in_ram(self) -> int:
        """Bytes of constant tables the toolchain placed in RAM (AVR copies const data to RAM)."""
        return sum(s.bytes for name, s in self.objects.items()
                   if s.memory == "ram" and name != f"{self.bundle}_memory" and not s.zeroed)

    @property
    def fits(self) -> bool:
        return self.ram_peak <= self.ram_bytes and (self.flash_bytes is None or self.flash_used <= self.flash_bytes)

    def to_dict(self) -> dict:
        computed = ("flash_used", "ram_used", "ram_peak", "tables_bytes", "tables_in_ram", "fits")
        return {**dataclasses.asdict(self), **{key: getattr(self, key) for key in computed},
                "firmware_flash_bytes": self.flash_used, "firmware_ram_at_peak_bytes": self.ram_peak,
                "model_state_bytes": self.state_bytes}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


@dataclass
class RunResult:
    board: str
    emulator: str
    classes: np.ndarray | None  # uint8 [n], class indices (a classifier's)
    proba: np.ndarray | None  # uint16 [n, n_classes], Q15 (a classifier's)
    seconds: float  # wall time of the emulator
    raw: np.ndarray | None = None  # int32 [n], a regressor's raw outputs
    instructions: dict[str, np.ndarray] | None = None  # API call -> per row, in count_unit(board)
    functions: dict[str, dict[str, float]] | None = None  # API call -> function -> mean instructions (by_function)


@dataclass(frozen=True)
class Firmware:
    board: Board
    manifest: dict
    directory: Path

    @property
    def elf(self) -> Path:
        return self.directory / ELF


def require(tool: str, packages, board: Board) -> str:
    """Full path of ``tool``, or a clear error naming the Debian packages that provide it."""
    found = shutil.which(tool)
    if found is None:
        raise ToolchainMissing(f"{tool} (needed for board {board.name}) is not installed; install the Debian "
                               f"package(s) {' '.join(packages)} (apt-get install {' '.join(packages)}) "
                               "or run scripts/setup.sh")
    return found


def tool(board: Board, name: str, *args) -> str:
    """Output of one of the board's binutils (size, readelf, ...)."""
    command = [require(getattr(board.toolchain, name), board.toolchain.packages, board), *map(str, args)]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def task_of_manifest(manifest: dict) -> str:
    return manifest.get("task", CLASSIFICATION)


def api_calls(manifest: dict) -> tuple[str, ...]:
    """The API calls the harness makes on the bundle's rows, in order (:data:`CALLS`)."""
    return CALLS[task_of_manifest(manifest)]


def render_harness(manifest: dict, board: Board, rows: bytes | None = None, count: bool = False) -> str:
    """The firmware's main for the bundle's task: file I/O, the input ``rows`` in flash with results on the UART
    (with ``count``, and the cycles of every call), or (builds, and boards that cannot run) one row from a
    volatile buffer."""
    name = manifest["name"]
    io = "none" if board.io == "none" else ("uart" if rows is not None else "none") if board.io == "uart" else "file"
    return environment().get_template("firmware_main.c.j2").render(
        name=name, NAME=name.upper(), input_type=C_TYPES[manifest["input_dtype"]],
        learning=manifest["learning"], io=io, input_file=INPUT_FILE, output_file=OUTPUT_FILE,
        rows=list(rows or b""), count=count, task=task_of_manifest(manifest), calls=api_calls(manifest))


def compile_commands(manifest: dict, board: Board, emulated: bool, out: Path) -> list[list[str]]:
    """Compiler invocations: one per source (objects and .su files in ``out``), then the link."""
    bundle, chain = Path(manifest["directory"]), board.toolchain
    sources = [bundle / s for s in manifest["sources"]] + [out / HARNESS]
    commands = [[chain.cc, *COMPILE_FLAGS, *chain.cflags, "-I", manifest["include_directory"], "-c", str(source),
                 "-o", str(out / f"{source.stem}.o")] for source in sources]
    link = board.link_for(emulated)
    commands.append([chain.cc, *chain.cflags, *(str(out / f"{s.stem}.o") for s in sources), *chain.ldflags,
                     *(link.ldflags() if link else []), *LINK_FLAGS, "-o", str(out / ELF)])
    return commands


def firmware(bundle_dir, board, emulated: bool, out_dir=None, rows: bytes | None = None,
             count: bool = False) -> Firmware:
    """Compile the bundle and its harness for ``board`` (cached by content unless ``out_dir`` is given); ``rows``:
    the input built into a UART harness, which with ``count`` measures the cycles of every call."""
    board = load_board(board)
    manifest = read_manifest(bundle_dir)
    require(board.toolchain.cc, board.toolchain.packages, board)
    harness = render_harness(manifest, board, rows, count)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        compile_into(out, manifest, board, emulated, harness)
        return Firmware(board, manifest, out)
    digest = hashlib.sha256(harness.encode() + repr(compile_commands(manifest, board, emulated, Path())).encode())
    for source in manifest["sources"]:
        digest.update(source.encode() + (Path(manifest["directory"]) / source).read_bytes())
    for header in sorted(Path(manifest["include_directory"]).glob("*.h")):
        digest.update(header.name.encode() + header.read_bytes())
    out = cache_dir() / "targets" / f"{board.name}-{'emulated' if emulated else 'chip'}-{digest.hexdigest()[:20]}"
    if not (out / ELF).is_file():
        with scratch_dir(".building-", out.parent) as scratch:  # a killed or failed build leaves nothing
            work = scratch / "firmware"
            work.mkdir()
            compile_into(work, manifest, board, emulated, harness)
            try:
                work.rename(out)
            except OSError:  # built meanwhile by another process
                pass
    return Firmware(board, manifest, out)


def compile_into(out: Path, manifest: dict, board: Board, emulated: bool, harness: str) -> None:
    (out / HARNESS).write_text(harness)
    for command in compile_commands(manifest, board, emulated, out):
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise TargetError(f"building for {board.name} failed:\n$ {' '.join(command)}\n{result.stderr}"
                              f"(the board's toolchain comes from the Debian packages "
                              f"{' '.join(board.toolchain.packages)})")


def build(bundle_dir, board, out_dir=None) -> BuildReport:
    """Cross-compile a bundle for ``board`` (a name, a board file or a Board) and report sizes and stack."""
    return report(firmware(bundle_dir, board, emulated=False, out_dir=out_dir))


def report(fw: Firmware) -> BuildReport:
    board, name = fw.board, fw.manifest["name"]
    text, data, bss = (int(v) for v in tool(board, "size", "-B", fw.elf).splitlines()[1].split()[:3])
    sections, symbols = read_elf(fw.elf)
    linked = {symbol for symbol, (kind, _, _) in symbols.items() if kind == "FUNC"}  # gc-sections dropped the rest
    stack = sorted((s for s in stack_usage(fw.directory, linked) if s.function in linked),
                   key=lambda s: (-s.bytes, s.function))
    objects = {symbol: SymbolSize(size, sections[index].memory, sections[index].name.startswith(".bss")) for symbol, (kind, size, index) in symbols.items()
               if kind == "OBJECT" and symbol.startswith(name + "_") and index in sections}
    state = objects.get(f"{name}_memory")
    state_section = sections[symbols[f"{name}_memory"][2]].name if state else ""
    calls = call_graph(tool(board, "objdump", "-d", "--no-show-raw-insn", fw.elf))
    for caller, callees in indirect_calls(name).items():
        calls.setdefault(caller, set()).update(callees & linked)
    return BuildReport(
        board=board.name, bundle=name, elf=str(fw.elf), text=text, data=data, bss=bss,
        stack_reserved=sum(s.size for s in sections.values() if s.name == ".stack"),
        ram_bytes=board.ram_bytes, flash_bytes=board.flash_bytes,
        code_bytes=sum(symbols[s.function][1] for s in stack if s.file != HARNESS) + sum(
            size for symbol, (kind, size, _) in symbols.items() if kind == "OBJECT" and symbol.startswith("es_")),
        objects=dict(sorted(objects.items())), state_bytes=state.bytes if state else None,
        state_image_bytes=state.bytes if state_section.startswith(".data") else 0, stack=stack,
        stack_max=worst_stack(calls, {s.function: s.bytes for s in stack},
                              ["main", *(f"{name}_{call}" for call in API_CALLS)]))


@dataclass(frozen=True)
class Section:
    name: str
    size: int
    memory: str  # "ram" (writable) or "flash"


SYMBOL_KINDS = {"STT_FUNC": "FUNC", "STT_OBJECT": "OBJECT"}


def read_elf(path) -> tuple[dict[int, Section], dict[str, tuple[str, int, int]]]:
    """Section index -> Section, and symbol -> (type ``FUNC``/``OBJECT``, size, section index) of the functions
    and objects of an ELF file (pyelftools; symbols in no section are left out)."""
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        sections = {index: Section(section.name, section["sh_size"],
                                   "ram" if section["sh_flags"] & SH_FLAGS.SHF_WRITE else "flash")
                    for index, section in enumerate(elf.iter_sections()) if index}
        symbols = {}
        for table in elf.iter_sections():
            if not isinstance(table, SymbolTableSection):
                continue
            for symbol in table.iter_symbols():
                kind, index = SYMBOL_KINDS.get(symbol["st_info"]["type"]), symbol["st_shndx"]
                if kind and symbol.name and isinstance(index, int):
                    symbols[symbol.name] = (kind, symbol["st_size"], index)
    return sections, symbols


def stack_usage(directory: Path, symbols=None) -> list[StackUsage]:
    """Every function of the ``.su`` files GCC wrote with -fstack-usage (``file:line:col:function  bytes  kind``),
    named as in ``symbols`` when given: some GCC ports write a clone (``f.isra.0``, ``f.constprop.1``) under its
    origin's name ``f``, others under its own."""
    usage = []
    for su in sorted(directory.glob("*.su")):
        for line in su.read_text().splitlines():
            location, size, qualifier = line.rsplit("\t", 2)
            function = location.rsplit(":", 1)[1]
            if symbols is not None and function not in symbols:
                clones = [symbol for symbol in symbols if symbol.startswith(function + ".")]
                function = clones[0] if len(clones) == 1 else function
            usage.append(StackUsage(function, Path(location.split(":")[0]).name, int(size), qualifier))
    return usage


FUNCTION_LINE = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
INSTRUCTION_LINE = re.compile(r"^\s*[0-9a-f]+:\t")
REFERENCE = re.compile(r"<([^>+]+)>")
LOCAL_LABEL = ".L"  # GNU as names its local labels .L...
RELOCATION_LINE = re.compile(r"^\s*[0-9a-f]+: R_\w+\s+(?:\.(?:text|rodata|progmem\.data|data|bss)\.)?([A-Za-z_][\w.]*)")


def call_graph(disassembly: str) -> dict[str, set[str]]:
    """Function -> functions it calls or jumps to, from ``objdump -dr`` of a linked ELF (``<symbol>`` operands;
    branches inside a function read ``<symbol+offset>``) or of an object compiled with -ffunction-sections, whose
    calls are relocations (against the callee or its section ``.text.<callee>``; the constant tables a function
    reads appear the same way, ``.rodata.<table>``). RISC-V objects keep the local labels their branches are
    relocated against (``<.L4>:``): those lines and references stay within the enclosing function."""
    calls, current = {}, None
    for line in disassembly.splitlines():
        if (match := FUNCTION_LINE.match(line)) and not match[1].startswith(LOCAL_LABEL):
            current = calls.setdefault(match[1], set())
        elif current is not None and (match := RELOCATION_LINE.match(line)):
            current.add(match[1])
        elif current is not None and INSTRUCTION_LINE.match(line):
            current.update(name for name in REFERENCE.findall(line) if not name.startswith(LOCAL_LABEL))
    for function, callees in calls.items():
        callees.discard(function)
    return calls


TABLE_SECTION = re.compile(r"^RELOCATION RECORDS FOR \[\.(?:rodata|progmem\.data|data\.rel\.ro(?:\.local)?)\.(\w+)\]:$")
TABLE_ENTRY = re.compile(r"^[0-9a-f]+\s+R_\w+\s+(?:\.text\.)?([A-Za-z_]\w*)")


def table_references(relocations: str) -> dict[str, set[str]]:
    """Constant table -> the functions it points to, from ``objdump -r`` of an object compiled with
    -fdata-sections (a table of function pointers calls nothing itself, but whatever reaches it links them)."""
    tables, current = {}, None
    for line in relocations.splitlines():
        if line.startswith("RELOCATION RECORDS FOR"):
            match = TABLE_SECTION.match(line)
            current = tables.setdefault(match[1], set()) if match else None
        elif current is not None and (match := TABLE_ENTRY.match(line)):
            current.add(match[1])
    return tables


SHRUBS_PAIR_UPDATE = {"es_pair_update", "es_pair_update_codes"}
SHRUBS_TRAINING = {"es_scan_level", "es_scan_level_codes", "es_new_shrub_terms", "es_new_shrub_terms_codes"}


def indirect_calls(name: str) -> dict[str, set[str]]:
    """Calls through function pointers, which no disassembly shows: ``es_forest_predict_inline`` calls the inline
    walk of a bundle exported for speed (``<name>_walk``); the shrubs' learning calls its task's steps (the
    functions of es_shrubs.c that call through its table, and those they may be inlined into). Only the callees
    that a firmware links (or that its entry points reach) count."""
    return {"es_forest_predict_inline": {f"{name}_walk"},
            "es_learn_row": SHRUBS_PAIR_UPDATE, "es_learn_oldest": SHRUBS_PAIR_UPDATE, "es_shrubs_learn": SHRUBS_PAIR_UPDATE,
            "es_shrubs_learn_target": SHRUBS_PAIR_UPDATE,
            "es_rebuild": SHRUBS_PAIR_UPDATE, "es_shrubs_rebuild": SHRUBS_PAIR_UPDATE,
            "es_shrubs_rebuild_target": SHRUBS_PAIR_UPDATE, "es_train_level": SHRUBS_TRAINING,
            "es_train_piece": SHRUBS_TRAINING, "es_job_piece": SHRUBS_TRAINING}


def worst_stack(calls: dict[str, set[str]], frames: dict[str, int], functions) -> dict[str, int]:
    """Deepest stack of each function over its call chains: the sum of GCC's frame sizes (-fstack-usage).
    Functions without one (C library and compiler helpers such as memset or soft-float routines) count 0."""

    def depth(function: str, chain: frozenset) -> int:
        callees = calls.get(function, set()) - chain  # a cycle (none in the runtime) is counted once
        return frames.get(function, 0) + max((depth(c, chain | {c}) for c in callees), default=0)

    return {function: depth(function, frozenset([function])) for function in functions if function in calls}


def encode_rows(manifest: dict, X, labels, learn: bool | None = None) -> bytes:
    """The harness input: mode byte (``learn``, by default whether ``labels`` are given), then per row the features
    (and, when learning, the class index or the regressor's target code, :func:`learn_targets`; a detector learns
    rows alone)."""
    learn = labels is not None if learn is None else learn
    rows = np.asarray(X)
    n_features = manifest["n_features"]
    if rows.ndim != 2 or rows.shape[1] != n_features:
        raise ValueError(f"X must have shape (rows, {n_features}), got {rows.shape}")
    fields = [("x", {"float32": "<f4", "int32": "<i4", "int16": "<i2"}[manifest["input_dtype"]], (n_features,))]
    label_format = LABEL_FORMATS[task_of_manifest(manifest)] if learn else None
    if label_format is not None:
        fields.append(("label", label_format))
    records = np.zeros(len(rows), dtype=fields)
    records["x"] = rows
    if label_format is not None:
        records["label"] = labels
    return bytes([learn]) + records.tobytes()


def output_fields(manifest: dict) -> list[tuple]:
    """The harness's results of one row (little-endian): a classifier's class and Q15 probabilities, a
    regressor's int32 raw output, a detector's int32 output (score and flag)."""
    if task_of_manifest(manifest) != CLASSIFICATION:
        return [("raw", "<i4")]
    return [("class", "u1"), ("proba", "<u2", (manifest["n_classes"],))]


def decode_results(manifest: dict, raw: bytes, n_rows: int, board: Board,
                   calls=()) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The outputs of every row (a classifier's ``class`` and Q15 ``proba``, a regressor's int32 ``raw``) and, per
    API call in ``calls``, the uint32 counts that follow them in a row."""
    record = np.dtype([*output_fields(manifest), *((c, "<u4") for c in calls)])
    if len(raw) != n_rows * record.itemsize:
        raise TargetError(f"{board.name}: the firmware wrote {len(raw)} bytes of results, expected "
                          f"{n_rows * record.itemsize} ({n_rows} rows of {record.itemsize} bytes)")
    results = np.frombuffer(raw, dtype=record)
    return ({name: results[name].astype(record[name].base.newbyteorder("=")) for name, *_ in output_fields(manifest)},
            {call: results[call].astype(np.int64) for call in calls})


def learn_targets(manifest: dict, y, n_rows: int) -> np.ndarray:
    """What a learning bundle learns of each row: labels of the model's classes -> class indices, a regressor's
    targets -> int16 codes of its target scale (saturated as the model saturates them); a detector nothing (None)."""
    if not manifest["learning"]:
        raise ValueError(f"bundle {manifest['directory']} holds a frozen {manifest['learner']} model; it cannot learn")
    if task_of_manifest(manifest) == ANOMALY:
        return None
    if y is None or len(y) != n_rows:
        raise ValueError(f"learning needs one label per row: {n_rows} rows, "
                         f"{'no labels' if y is None else f'{len(y)} labels'}")
    model = load_bundle_model(manifest)
    if task_of_manifest(manifest) == REGRESSION:
        return model.target_.encode(check_target(y, n_rows))[0].astype(np.int16)
    return np.array([model.encode_label(label) for label in y], dtype=np.uint8)


def emulator_command(board: Board, elf: Path, options=()) -> list[str]:
    emulator = board.emulator
    command = require(emulator.command, emulator.packages, board)
    if emulator.kind == "simavr":
        return [command, "-m", board.cpu, "-f", str(board.clock_hz), *emulator.args, *options, str(elf)]
    if emulator.kind == "qemu-user":
        return [command, *emulator.args, *options, str(elf)]
    return [command, "-M", emulator.machine, "-display", "none", "-semihosting-config", "enable=on,target=native",
            *emulator.args, *options, "-kernel", str(elf)]


def traced_calls(trace: Path, name: str):
    """(API call, whether the instruction starts the call, function symbol) of every instruction executed within an
    API call, from a QEMU ``-singlestep -d exec,nochain`` log (one line per instruction, ending with the function's
    symbol): a call is the run of lines from the entry of ``<name>_<call>`` up to the next line in the harness, so
    it includes every callee."""
    entries = {f"{name}_{call}": call for call in API_CALLS}
    current = None
    with trace.open() as log:
        for line in log:
            if not line.startswith("Trace"):
                continue
            symbol = line.rstrip().rsplit(" ", 1)[-1]
            started = current is None and symbol in entries
            if symbol in HARNESS_FUNCTIONS:
                current = None
            elif started:
                current = entries[symbol]
            if current is not None:
                yield current, started, symbol


def count_instructions(trace: Path, name: str) -> dict[str, np.ndarray]:
    """Executed instructions of every API call, per call (:func:`traced_calls`)."""
    counts = {call: [] for call in API_CALLS}
    for call, started, _ in traced_calls(trace, name):
        if started:
            counts[call].append(0)
        counts[call][-1] += 1
    return {call: np.array(values, dtype=np.int64) for call, values in counts.items() if values}


def instructions_by_function(trace: Path, name: str) -> dict[str, dict[str, float]]:
    """Per API call, the mean executed instructions per call of each function itself (not its callees), most first
    (:func:`traced_calls`)."""
    calls, tally = Counter(), {call: Counter() for call in API_CALLS}
    for call, started, symbol in traced_calls(trace, name):
        calls[call] += started
        tally[call][symbol] += 1
    return {call: {symbol: n / calls[call] for symbol, n in tally[call].most_common()} for call in calls}


def instruction_summary(counts: dict[str, np.ndarray]) -> dict[str, dict]:
    """Per API call counted, the mean and the worst count (instructions or cycles, :func:`count_unit`) over its
    calls."""
    return {call: {"mean": float(values.mean()), "worst": int(values.max())} for call, values in counts.items()}


def describe_exit(code: int) -> str:
    if code in EXIT_STATUS:
        return EXIT_STATUS[code]
    call = EXIT_CALLS.get(code & ~15)
    return f"{call} returned es_status {code & 15}" if call else "the firmware crashed or the emulator failed"


def run(bundle_dir, board, X, y=None, learn: bool = False, timeout: float = 60,
        instructions: bool = False, by_function: bool = False) -> RunResult:
    """Run a bundle under ``board``'s emulator: per row class and Q15 probabilities, or a regressor's raw output
    (test-then-train with ``learn``, which needs the labels or targets ``y`` of a learning bundle). With ``instructions``, the result counts per API
    call and row the executed instructions (QEMU logs every one: slow, keep the stream short) or, under simavr,
    the CPU cycles the harness measures (:func:`count_unit`); with ``by_function`` too (QEMU only), where they go
    (:func:`instructions_by_function`)."""
    if by_function and not instructions:
        raise ValueError("by_function tallies the counted instructions: give instructions=True too")
    board = load_board(board)
    emulator = board.emulator
    check_runnable(board)
    TIMEOUT.check(timeout)
    manifest = read_manifest(bundle_dir)
    rows = np.asarray(X)
    labels = learn_targets(manifest, y, len(rows)) if learn else None
    payload = encode_rows(manifest, rows, labels, learn)
    if board.io == "uart":
        if by_function:
            raise TargetError(f"board {board.name}: {emulator.command} counts cycles per call, not per function")
        return run_uart(bundle_dir, board, manifest, payload, len(rows), timeout, instructions, learn)
    fw = check_ram(firmware(bundle_dir, board, emulated=True))
    command = emulator_command(board, fw.elf, ["-singlestep", "-d", "exec,nochain", "-D", TRACE] * instructions)
    where = f"{emulator.command} {emulator.machine}".strip()
    with scratch_dir("edgestream-run-") as work:
        (Path(work) / INPUT_FILE).write_bytes(payload)
        watch = (Path(work) / OUTPUT_FILE, np.dtype(output_fields(manifest)).itemsize, len(rows))
        seconds = execute(command, Path(work), timeout, f"board {board.name}: {where}", watch)
        outputs, _ = decode_results(manifest, (Path(work) / OUTPUT_FILE).read_bytes(), len(rows), board)
        trace = Path(work) / TRACE
        counts = count_instructions(trace, manifest["name"]) if instructions else None
        functions = instructions_by_function(trace, manifest["name"]) if by_function else None
    return run_result(board.name, where, outputs, seconds, counts, functions)


def run_result(board: str, emulator: str, outputs: dict[str, np.ndarray], seconds: float, counts=None,
               functions=None) -> RunResult:
    return RunResult(board, emulator, outputs.get("class"), outputs.get("proba"), seconds, outputs.get("raw"),
                     counts, functions)


def check_ram(fw: Firmware) -> Firmware:
    """Refuse firmware whose static RAM and deepest stack exceed the board's RAM: its stack would overwrite the
    state (no MMU or guard on a microcontroller) and the run would report mismatches instead of the cause."""
    built = report(fw)
    if built.ram_peak > built.ram_bytes:
        static = built.ram_used - built.stack_reserved
        raise TargetError(f"board {built.board}: the firmware needs {built.ram_peak:,} bytes of RAM ({static:,} "
                          f"static, {built.ram_peak - static:,} of stack on its deepest call chain) and the board has "
                          f"{built.ram_bytes:,}: plan the model for less RAM (fit --ram)")
    return fw


UART_MAX_ROWS_FLASH = 0.5  # the share of the board's flash the rows built into a UART harness may take
UART_MAX_ROWS_BYTES = 32768  # and at most this: pgm_read_* reaches the low 64 KiB, where the rows and tables sit


def run_uart(bundle_dir, board: Board, manifest: dict, payload: bytes, n_rows: int, timeout: float,
             count: bool = False, learn: bool = False) -> RunResult:
    """A run on a board without files (AVR under simavr): the input in the firmware's flash, results on USART0;
    with ``count``, the cycles of every call made (``learn``: the learn calls too)."""
    limit = min(int(board.flash_bytes * UART_MAX_ROWS_FLASH), UART_MAX_ROWS_BYTES)
    if len(payload) > limit:
        raise ValueError(f"{n_rows} rows take {len(payload):,} bytes; board {board.name} carries its input in flash: "
                         f"at most {limit:,} bytes (run fewer rows at a time)")
    fw = check_ram(firmware(bundle_dir, board, emulated=True, rows=payload, count=count))
    with scratch_dir("edgestream-run-") as work:
        seconds = execute(emulator_command(board, fw.elf), Path(work), timeout, f"board {board.name}: "
                          f"{board.emulator.command}")
        text = "".join((Path(work) / f"emulator.{stream}").read_text(errors="replace") for stream in ("out", "err"))
    calls = api_calls(manifest)[:None if learn else -1] if count else ()
    outputs, counts = decode_results(manifest, uart_results(text, board), n_rows, board, calls)
    return run_result(board.name, board.emulator.command, outputs, seconds, counts if count else None)


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def uart_results(text: str, board: Board) -> bytes:
    """The results file's bytes from the harness's UART lines ('R' + hex per row, 'E' + hex exit status) as the
    emulator prints them (simavr colours each line and shows control characters as '.')."""
    lines = [line.rstrip(".") for line in ANSI_ESCAPE.sub("", text).splitlines()]
    end = [line for line in lines if line.startswith("E")]
    if not end:
        raise TargetError(f"board {board.name}: the firmware ended without its exit line; output:\n" + text[-400:])
    status = int(end[-1][1:], 16)
    if status != 0:
        raise TargetError(f"board {board.name}: the firmware exited with status {status} ({describe_exit(status)})")
    return b"".join(bytes.fromhex(line[1:]) for line in lines if line.startswith("R"))


def execute(command: list[str], work: Path, timeout: float, what: str, watch=None) -> float:
    """Run the emulator in ``work``; its wall time, or a clear error when it hangs or the firmware fails.
    ``watch`` = (results file, bytes per row, rows) shows a progress bar of the rows the firmware has written
    (on a terminal)."""
    from tqdm import tqdm

    start = time.perf_counter()
    path, record, total = watch or (None, 1, 0)
    with open(work / "emulator.out", "w+") as out, open(work / "emulator.err", "w+") as err, \
            tqdm(total=total, desc=what.split(":")[0], unit="row", leave=False,
                 disable=not total or not sys.stderr.isatty()) as bar:
        process = subprocess.Popen(command, cwd=work, stdout=out, stderr=err)
        while True:
            try:
                process.wait(timeout=max(0.0, min(0.2, timeout - (time.perf_counter() - start))))
                break
            except subprocess.TimeoutExpired:
                if time.perf_counter() - start >= timeout:
                    process.kill()
                    process.wait()
                    raise EmulatorTimeout(f"{what} did not finish within {timeout:g} s") from None
                if path is not None and path.exists():
                    bar.update(min(total, path.stat().st_size // record) - bar.n)
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(command, process.returncode, out.read(), err.read())
    if result.returncode != 0:
        output = "\n".join((result.stderr.strip() or result.stdout.strip()).splitlines()[:4])
        raise TargetError(f"{what}: the firmware exited with status {result.returncode} "
                          f"({describe_exit(result.returncode)})" + (f":\n{output}" if output else ""))
    return time.perf_counter() - start
