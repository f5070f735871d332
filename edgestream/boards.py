"""Board profiles: what a target offers (RAM, flash, CPU, FPU), how to build for it and what emulates it.

A profile is a TOML file; the built-in ones live in ``boards/`` (installed as ``edgestream.board_profiles``) and a
user can pass the path of their own. Fields (``?`` = optional):

* ``name``, ``description``, ``cpu``, ``arch`` (the instruction set, one of :data:`ARCHES`), ``abi?`` (RISC-V
  only, and required there: the calling convention, one of :data:`RISCV_ABIS`; the compiler's ``-march`` and
  ``-mabi`` must say the same), ``ram_bytes``, ``flash_bytes?`` (absent for boards that load programs from a disk;
  both at least the runtime's minimum, :data:`MIN_RAM_BYTES` and :data:`MIN_FLASH_BYTES`), ``clock_hz``, ``fpu``,
  ``source?`` (the datasheet the figures come from), ``io``: how the firmware harness reads rows and writes results:
  ``"semihosting"`` (bare metal under QEMU), ``"stdio"`` (Linux), ``"uart"`` (AVR under simavr: the rows built
  into the firmware's flash, the results written to USART0 as text) or ``"none"`` (builds only);
* ``[toolchain]``: ``cc``, ``size``, ``nm``, ``readelf``, ``objdump``, ``cflags``, ``ldflags``, ``packages`` (the
  Debian packages that provide them), ``note?``;
* ``[link]?``: the chip's memory map for bare-metal builds: ``flash`` and ``ram`` origins (picolibc's
  ``__flash``/``__ram``; the sizes default to ``flash_bytes``/``ram_bytes``);
* ``[emulator]?``: ``kind`` (``"qemu-system"``, ``"qemu-user"`` or ``"simavr"``), ``command``, ``machine?``,
  ``args?``, ``packages``, ``note?`` and ``[emulator.link]?``: the emulated machine's memory map (origins and
  sizes), used to link the programs it runs;
* ``[energy]?``: datasheet figures for the budget's energy estimate: ``active_current_ma`` (run-mode supply current
  at ``clock_hz``), ``supply_voltage`` (volts) and ``source`` (the datasheet, its section or table, and how the
  figure was read). A board without them gets no energy estimate, never a guess;
* ``[flash]?``: the datasheet's flash for the memory report: ``sector_sizes`` and ``sector_counts`` (the erase
  sectors or pages in address order, runs of equal size: sizes in bytes, adding up to ``flash_bytes``),
  ``wait_states?`` (flash wait states at ``clock_hz``; absent where the core runs from a cache in front of external
  flash) and ``source`` (the document and section of each figure).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
import tomllib

IO_KINDS = ("semihosting", "stdio", "uart", "none")
ARCHES = ("armv6-m", "armv7e-m", "armv6", "armv8-a", "avr5", "avr6", "rv32imc", "rv32imac")
RISCV_ABIS = ("ilp32",)  # integer registers only: the runtime's float32 is soft float, as on Cortex-M0
# The least RAM and flash a profile may offer: what the runtime's smallest firmware takes, rounded up (a frozen
# depth-1 tree's bundle and the one-row harness, linked for the ATmega328P: 1,472 bytes of flash, 114 of RAM with
# its deepest stack)
MIN_RAM_BYTES = 128
MIN_FLASH_BYTES = 2048
EMULATOR_KINDS = ("qemu-system", "qemu-user", "simavr")


class BoardError(ValueError):
    """An unknown board name or a board file that cannot be used."""


@dataclass(frozen=True)
class Link:
    """A bare-metal memory map, passed to picolibc's linker script with ``--defsym``."""

    flash: int
    ram: int
    flash_size: int | None = None
    ram_size: int | None = None

    def ldflags(self) -> list[str]:
        symbols = {"__flash": self.flash, "__flash_size": self.flash_size, "__ram": self.ram,
                   "__ram_size": self.ram_size}
        return ["-Wl," + ",".join(f"--defsym={key}={value:#x}" for key, value in symbols.items())]


@dataclass(frozen=True)
class Toolchain:
    cc: str
    size: str
    nm: str
    readelf: str
    objdump: str
    cflags: tuple[str, ...]
    ldflags: tuple[str, ...]
    packages: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class Emulator:
    kind: str
    command: str
    packages: tuple[str, ...]
    machine: str = ""
    args: tuple[str, ...] = ()
    note: str = ""
    link: Link | None = None


@dataclass(frozen=True)
class Energy:
    """The datasheet's active current at the board's clock and its supply voltage, with where they come from."""

    active_current_ma: float
    supply_voltage: float
    source: str

    def microjoules(self, instructions: float, clock_hz: int) -> float:
        """Energy of ``instructions`` at one per cycle: seconds x mA x V is mJ."""
        return instructions / clock_hz * self.active_current_ma * self.supply_voltage * 1e3


@dataclass(frozen=True)
class Flash:
    """The datasheet's flash: erase sectors in address order (runs of equal size) and wait states at the clock."""

    sector_sizes: tuple[int, ...]
    sector_counts: tuple[int, ...]
    source: str
    wait_states: int | None = None  # None: no figure (execution from a cache in front of external flash)

    def slots(self, image_bytes: int) -> tuple[int, int, int]:
        """Two checkpoint slots of ``image_bytes``, each in whole sectors of one size (a slot is erased on its
        own): ``(sector size, sectors per slot, bytes the two take)``, the size that takes the fewest bytes among
        the runs with enough sectors; sectors of 0 when no run holds them."""
        best = (0, 0, 0)
        for size, count in zip(self.sector_sizes, self.sector_counts):
            per_slot = -(-image_bytes // size)
            if 2 * per_slot <= count and (best == (0, 0, 0) or 2 * per_slot * size < best[2]):
                best = (size, per_slot, 2 * per_slot * size)
        return best

    def layout_text(self) -> str:
        return ", ".join(f"{count} x {size:,}" for size, count in zip(self.sector_sizes, self.sector_counts))


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    cpu: str
    arch: str
    ram_bytes: int
    clock_hz: int
    fpu: bool
    io: str
    toolchain: Toolchain
    flash_bytes: int | None = None
    abi: str = ""
    source: str = ""
    link: Link | None = None
    emulator: Emulator | None = None
    energy: Energy | None = None
    flash: Flash | None = None
    path: Path | None = field(default=None, metadata={"toml": False})

    def link_for(self, emulated: bool) -> Link | None:
        """The memory map of a bare-metal build: the emulated machine's for runs, the chip's otherwise."""
        return self.emulator.link if emulated and self.emulator else self.link

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["path"] = str(self.path)
        return data


def boards_dir() -> Path:
    return Path(str(resources.files("edgestream.board_profiles")))


def board_names() -> list[str]:
    return sorted(p.stem for p in boards_dir().glob("*.toml"))


def list_boards() -> list[Board]:
    """Every built-in board profile, by name."""
    return [load_board(name) for name in board_names()]


def load_board(board: str | Path | Board) -> Board:
    """A built-in board by name, or the board file at a path (anything ending in .toml or an existing file)."""
    if isinstance(board, Board):
        return board
    path = Path(board)
    if not (str(board).endswith(".toml") or path.is_file()):
        path = boards_dir() / f"{board}.toml"
        if not path.is_file():
            raise BoardError(f"unknown board {str(board)!r}; known boards: {', '.join(board_names())} "
                             "(or give the path of a board .toml file)")
    return read_board_file(path)


def read_board_file(path: Path) -> Board:
    try:
        table = tomllib.loads(path.read_text())
    except OSError as error:
        raise BoardError(f"cannot read board file {path}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise BoardError(f"board file {path} is not valid TOML: {error}") from None
    board = dataclasses.replace(parse(Board, table, path), path=path)
    if board.link:
        link = dataclasses.replace(board.link, flash_size=board.link.flash_size or board.flash_bytes,
                                   ram_size=board.link.ram_size or board.ram_bytes)
        board = dataclasses.replace(board, link=link)
    check(board, path)
    return board


def check(board: Board, path: Path) -> None:
    def fail(key: str, message: str):
        raise BoardError(f"board file {path}: field {key!r} {message}")

    if board.io not in IO_KINDS:
        fail("io", f"must be one of {', '.join(IO_KINDS)}, got {board.io!r}")
    for key in ("ram_bytes", "flash_bytes", "clock_hz"):
        if getattr(board, key) is not None and getattr(board, key) <= 0:
            fail(key, f"must be positive, got {getattr(board, key)}")
    for key, least in (("ram_bytes", MIN_RAM_BYTES), ("flash_bytes", MIN_FLASH_BYTES)):
        if getattr(board, key) is not None and getattr(board, key) < least:
            fail(key, f"must be at least the runtime's minimum of {least:,} bytes, got {getattr(board, key):,}")
    check_instruction_set(board, fail)
    for key in ("active_current_ma", "supply_voltage"):
        if board.energy is not None and not getattr(board.energy, key) > 0:
            fail(f"energy.{key}", f"must be positive, got {getattr(board.energy, key)}")
    if board.flash is not None:
        flash = board.flash
        if len(flash.sector_sizes) != len(flash.sector_counts) or min(flash.sector_sizes + flash.sector_counts) < 1:
            fail("flash", "needs sector_sizes and sector_counts of equal length, every one positive")
        total = sum(size * count for size, count in zip(flash.sector_sizes, flash.sector_counts))
        if total != board.flash_bytes:
            fail("flash", f"sectors add up to {total:,} bytes, not flash_bytes {board.flash_bytes}")
        if flash.wait_states is not None and flash.wait_states < 0:
            fail("flash.wait_states", f"must be 0 or more, got {flash.wait_states}")
    if board.io == "semihosting" and (board.link is None or board.link.flash_size is None):
        fail("link", "and flash_bytes are required for semihosting boards (the chip's memory map)")
    emulator = board.emulator
    if emulator is None:
        return
    if emulator.kind not in EMULATOR_KINDS:
        fail("emulator.kind", f"must be one of {', '.join(EMULATOR_KINDS)}, got {emulator.kind!r}")
    if emulator.kind == "qemu-system" and not emulator.machine:
        fail("emulator.machine", "is required for qemu-system emulators")
    if (board.io == "uart") != (emulator.kind == "simavr"):
        fail("io", f"must be 'uart' with a simavr emulator and only then, got {board.io!r} with {emulator.kind!r}")
    if board.io == "semihosting":
        if emulator.link is None or None in (emulator.link.flash_size, emulator.link.ram_size):
            fail("emulator.link", "needs flash, flash_size, ram and ram_size for semihosting boards")


def check_instruction_set(board: Board, fail) -> None:
    """A known ``arch``; on RISC-V a known ``abi`` that the compiler flags select (elsewhere none)."""
    if board.arch not in ARCHES:
        fail("arch", f"must be one of {', '.join(ARCHES)}, got {board.arch!r}")
    if not board.arch.startswith("rv"):
        if board.abi:
            fail("abi", f"applies to RISC-V boards only, got {board.abi!r} with arch {board.arch!r}")
        return
    if board.abi not in RISCV_ABIS:
        fail("abi", f"must be one of {', '.join(RISCV_ABIS)} for RISC-V, got {board.abi!r}")
    for flag in (f"-march={board.arch}", f"-mabi={board.abi}"):
        if flag not in board.toolchain.cflags:
            fail("toolchain.cflags", f"must hold {flag} (the board's arch and abi), got {list(board.toolchain.cflags)}")


def parse(cls, table, path: Path, prefix: str = ""):
    """An instance of dataclass ``cls`` from a TOML table, checking names and types of every field."""
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls) if f.metadata.get("toml", True)}
    for key in table:
        if key not in known:
            raise BoardError(f"board file {path}: unknown field {prefix + key!r} "
                             f"(fields: {', '.join(prefix + k for k in known)})")
    values = {}
    for name, spec in known.items():
        if name in table:
            values[name] = value_of(hints[name], table[name], path, prefix + name)
        elif spec.default is dataclasses.MISSING:
            raise BoardError(f"board file {path}: missing field {prefix + name!r}")
    return cls(**values)


def value_of(hint, value, path: Path, key: str):
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(t for t in typing.get_args(hint) if t is not type(None))
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise BoardError(f"board file {path}: field {key!r} must be a table, got {value!r}")
        return parse(hint, value, path, key + ".")
    if typing.get_origin(hint) is tuple:
        item_type = typing.get_args(hint)[0]
        if not (isinstance(value, list) and all(isinstance(item, item_type) and not isinstance(item, bool)
                                                for item in value)):
            kind = "strings" if item_type is str else "integers"
            raise BoardError(f"board file {path}: field {key!r} must be a list of {kind}, got {value!r}")
        return tuple(value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # TOML writes 3 for 3.0
    if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
        raise BoardError(f"board file {path}: field {key!r} must be {hint.__name__}, got {value!r}")
    return value
