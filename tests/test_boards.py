"""Board profiles: the built-in ones, user files, and clear errors for unknown boards and malformed files."""

import re
from pathlib import Path

import pytest

from edgestream.boards import Board, BoardError, Link, board_names, boards_dir, list_boards, load_board

REQUIRED = {"rp2040", "stm32f411", "nrf52840", "stm32h743", "atmega328p", "rpi-zero", "rpi4", "esp32c3", "gd32vf103",
            "fe310"}


def test_every_required_board_is_built_in():
    assert REQUIRED <= set(board_names())
    assert [board.name for board in list_boards()] == board_names()


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_built_in_boards_are_complete(name):
    board = load_board(name)
    assert board.name == name == board.path.stem
    assert board.ram_bytes > 0 and board.clock_hz > 0 and board.toolchain.packages
    if board.io == "semihosting":  # linked with picolibc at the chip's map; runs at the emulated machine's
        assert board.link.flash_size == board.flash_bytes and board.link.ram_size == board.ram_bytes
        assert board.emulator.kind == "qemu-system" and board.emulator.link.ram_size


@pytest.mark.parametrize("name, arch, ram, flash, clock, machine", [
    ("esp32c3", "rv32imc", 384 * 1024, 4 * 1024 * 1024, 160_000_000, "virt"),
    ("gd32vf103", "rv32imac", 32 * 1024, 128 * 1024, 108_000_000, "virt"),
    ("fe310", "rv32imac", 16 * 1024, 4 * 1024 * 1024 - 64 * 1024, 320_000_000, "sifive_e"),
])
def test_risc_v_profiles_are_cited_and_emulated_within_their_memory(name, arch, ram, flash, clock, machine):
    """A RISC-V profile's figures come from its datasheet; the emulated machine's link holds the profile's RAM and
    flash (virt has 128 MiB: the linker script, not the machine, enforces the chip's sizes)."""
    board = load_board(name)
    assert (board.arch, board.abi, board.ram_bytes, board.flash_bytes, board.clock_hz, board.fpu) == (
        arch, "ilp32", ram, flash, clock, False)
    assert "atasheet" in board.source and (board.emulator.command, board.emulator.machine) == (
        "qemu-system-riscv32", machine)
    assert (board.emulator.link.ram_size, board.emulator.link.flash_size) == (ram, flash)
    assert f"-march={arch}" in board.toolchain.cflags and "-mabi=ilp32" in board.toolchain.cflags


@pytest.mark.parametrize("name, cpu, ram, flash, fpu, machine", [
    ("rp2040", "cortex-m0plus", 264 * 1024, 2 * 1024 * 1024, False, "microbit"),
    ("stm32f411", "cortex-m4", 128 * 1024, 512 * 1024, True, "mps2-an386"),
    ("nrf52840", "cortex-m4", 256 * 1024, 1024 * 1024, True, "mps2-an386"),
    ("stm32h743", "cortex-m7", 512 * 1024, 2 * 1024 * 1024, True, "mps2-an500"),
    ("atmega328p", "atmega328p", 2048, 32 * 1024, False, ""),  # simavr: no machine, -m atmega328p
])
def test_microcontroller_profiles(name, cpu, ram, flash, fpu, machine):
    board = load_board(name)
    assert (board.cpu, board.ram_bytes, board.flash_bytes, board.fpu, board.emulator.machine) == (
        cpu, ram, flash, fpu, machine)


def test_linux_boards_run_in_qemu_user_mode():
    for name, command in (("rpi-zero", "qemu-arm"), ("rpi4", "qemu-aarch64")):
        board = load_board(name)
        assert board.io == "stdio" and board.flash_bytes is None and board.link is None
        assert (board.emulator.kind, board.emulator.command) == ("qemu-user", command)


def test_link_passes_the_memory_map_to_picolibc():
    flags = Link(flash=0x0, ram=0x20000000, flash_size=0x40000, ram_size=0x4000).ldflags()
    assert flags == ["-Wl,--defsym=__flash=0x0,--defsym=__flash_size=0x40000,--defsym=__ram=0x20000000,"
                     "--defsym=__ram_size=0x4000"]
    board = load_board("rp2040")
    assert board.link_for(emulated=False).flash == 0x10000000  # the RP2040's XIP flash
    assert board.link_for(emulated=True).ram_size == 16 * 1024  # the micro:bit's RAM


def test_to_dict_is_plain_data():
    data = load_board("stm32f411").to_dict()
    assert data["toolchain"]["cc"] == "arm-none-eabi-gcc" and data["emulator"]["link"]["ram"] == 0x20000000
    assert isinstance(data["path"], str)


def test_unknown_board_lists_the_known_ones():
    with pytest.raises(BoardError, match="unknown board 'esp32'.*rp2040.*stm32f411"):
        load_board("esp32")


def test_a_board_is_passed_through():
    board = load_board("rpi4")
    assert load_board(board) is board


@pytest.fixture
def user_board(tmp_path) -> Path:
    """A user's board file: a copy of the STM32F411 profile under another name."""
    path = tmp_path / "myboard.toml"
    path.write_text((boards_dir() / "stm32f411.toml").read_text().replace('name = "stm32f411"', 'name = "mine"'))
    return path


def test_user_board_file_by_path(user_board):
    board = load_board(user_board)
    assert isinstance(board, Board) and board.name == "mine" and board.path == user_board
    assert load_board(str(user_board)) == board


def edit(path: Path, pattern: str, replacement: str) -> Path:
    text = path.read_text()
    assert re.search(pattern, text, flags=re.M), pattern
    path.write_text(re.sub(pattern, replacement, text, count=1, flags=re.M))
    return path


@pytest.mark.parametrize("pattern, replacement, message", [
    (r"^ram_bytes = .*$", "", "missing field 'ram_bytes'"),
    (r"^ram_bytes = .*$", 'ram_bytes = "128K"', "field 'ram_bytes' must be int, got '128K'"),
    (r"^fpu = true", "fpu = 1", "field 'fpu' must be bool, got 1"),
    (r"^clock_hz = .*$", "clock_hz = true", "field 'clock_hz' must be int, got True"),
    (r"^cflags = .*$", 'cflags = "-mcpu=cortex-m4"', "field 'toolchain.cflags' must be a list of strings"),
    (r"^cc = .*$", "", "missing field 'toolchain.cc'"),
    (r"^clock_hz", "clock_mhz", "unknown field 'clock_mhz'"),
    (r"^machine = .*$", 'machin = "mps2-an386"', "unknown field 'emulator.machin'"),
    (r"^io = .*$", 'io = "serial"', "field 'io' must be one of semihosting, stdio, uart, none, got 'serial'"),
    (r"^io = .*$", 'io = "uart"', "field 'io' must be 'uart' with a simavr emulator and only then, got 'uart' with "
                                  "'qemu-system'"),
    (r"^kind = .*$", 'kind = "renode"', "field 'emulator.kind' must be one of"),
    (r"^ram_bytes = .*$", "ram_bytes = 0", "field 'ram_bytes' must be positive"),
    (r"^fpu = true", "fpu = true\nfpu = false", "is not valid TOML"),
    (r"^\[link\][^\[]*", "", "field 'link' and flash_bytes are required for semihosting boards"),
    (r"^\[emulator\.link\][^\[]*", "", "field 'emulator.link' needs flash, flash_size"),
    (r"^active_current_ma = .*$", "active_current_ma = 0", "field 'energy.active_current_ma' must be positive"),
    (r"^supply_voltage = .*$", 'supply_voltage = "3V3"', "field 'energy.supply_voltage' must be float, got '3V3'"),
    (r"^source = .*$", "", "missing field 'energy.source'"),
    (r"^sector_counts = .*$", "sector_counts = [4, 1, 2]",
     "field 'flash' sectors add up to 393,216 bytes, not flash_bytes 524288"),
    (r"^sector_sizes = .*$", 'sector_sizes = ["16K"]', "field 'flash.sector_sizes' must be a list of integers"),
    (r"^wait_states = .*$", "wait_states = -1", "field 'flash.wait_states' must be 0 or more, got -1"),
    (r"^arch = .*$", 'arch = "armv9-m"', "field 'arch' must be one of armv6-m, .*rv32imac, got 'armv9-m'"),
    (r"^arch = .*$", 'arch = "armv7e-m"\nabi = "ilp32"', "field 'abi' applies to RISC-V boards only"),
    (r"^ram_bytes = .*$", "ram_bytes = 100", "field 'ram_bytes' must be at least the runtime's minimum of 128 bytes, "
                                             "got 100"),
    (r"^flash_bytes = .*$", "flash_bytes = 2047", "field 'flash_bytes' must be at least the runtime's minimum of "
                                                  "2,048 bytes, got 2,047"),
])
def test_malformed_board_files_name_the_file_and_the_field(user_board, pattern, replacement, message):
    edit(user_board, pattern, replacement)
    with pytest.raises(BoardError, match=message) as error:
        load_board(user_board)
    assert str(user_board) in str(error.value)


@pytest.mark.parametrize("pattern, replacement, message", [
    (r"^arch = .*$", 'arch = "rv32gc"', "field 'arch' must be one of .*, got 'rv32gc'"),
    (r"^abi = .*$", 'abi = "lp64"', "field 'abi' must be one of ilp32 for RISC-V, got 'lp64'"),
    (r"^abi = .*$", "", "field 'abi' must be one of ilp32 for RISC-V, got ''"),
    (r'^arch = "rv32imac"', 'arch = "rv32imc"', r"field 'toolchain.cflags' must hold -march=rv32imc \(the board's arch "
                                                r"and abi\)"),
    (r"^flash_bytes = .*$", "flash_bytes = 1024", "field 'flash_bytes' must be at least the runtime's minimum of 2,048"),
])
def test_malformed_risc_v_profiles_name_the_field_and_the_limit(tmp_path, pattern, replacement, message):
    path = tmp_path / "mine.toml"
    path.write_text((boards_dir() / "gd32vf103.toml").read_text())
    edit(path, pattern, replacement)
    with pytest.raises(BoardError, match=message):
        load_board(path)


def test_energy_figures_are_cited_and_only_where_the_datasheet_gives_them():
    with_figures = {board.name: board.energy for board in list_boards() if board.energy is not None}
    assert sorted(with_figures) == ["nrf52840", "stm32f411"]
    assert all("datasheet" in energy.source or "Specification" in energy.source for energy in with_figures.values())
    stm32 = with_figures["stm32f411"]
    assert (stm32.active_current_ma, stm32.supply_voltage) == (10.0, 3.3)  # 100 µA/MHz at 100 MHz, VDD 3.3 V
    assert stm32.microjoules(100_000_000, 100_000_000) == pytest.approx(33_000)  # one second at 33 mW


def test_a_whole_number_is_a_float_field(user_board):
    edit(user_board, r"^active_current_ma = .*$", "active_current_ma = 10")
    assert load_board(user_board).energy.active_current_ma == 10.0


def test_a_table_field_given_as_a_value(user_board):
    edit(user_board, r"^\[link\][^\[]*", "")
    edit(user_board, r"^name = ", "link = 5\nname = ")
    with pytest.raises(BoardError, match="field 'link' must be a table, got 5"):
        load_board(user_board)


def test_invalid_toml_and_unreadable_files(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n")
    with pytest.raises(BoardError, match=f"board file {re.escape(str(broken))} is not valid TOML"):
        load_board(broken)
    with pytest.raises(BoardError, match="cannot read board file"):
        load_board(tmp_path / "absent.toml")


def test_checkpoint_slots_take_whole_sectors_of_one_size():
    """Two slots, each erased on its own: the sector size whose run holds them in the fewest bytes."""
    stm32f411, avr = load_board("stm32f411").flash, load_board("atmega328p").flash
    assert stm32f411.slots(4540) == (16384, 1, 32768)
    assert stm32f411.slots(20000) == (16384, 2, 65536)  # 2 of the 4 small sectors each, not the 128 KiB ones
    assert stm32f411.slots(40000) == (131072, 1, 262144)  # the 16 KiB run holds one slot of 3 sectors, not two
    assert stm32f411.slots(200000) == (0, 0, 0)  # 2 x 2 of the 128 KiB sectors: there are 3
    assert avr.slots(284) == (128, 3, 768)
    assert load_board("rp2040").flash.wait_states is None and stm32f411.wait_states == 3
