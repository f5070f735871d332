#!/usr/bin/env bash
# Prepare a fresh machine: the cross toolchains and emulators (Debian packages), a project-local venv with
# edgestream installed in editable mode plus its test, benchmark and documentation (docs) extras, and a venv per
# other supported Python found on the machine (3.12, 3.13: scripts/pythons.py) for tests/test_pythons.py.
set -euo pipefail
cd "$(dirname "$0")/.."

# Cortex-M (picolibc, QEMU system mode; newlib and libstdc++ for the C++ of Arduino sketches), AVR (simavr runs it),
# RISC-V microcontrollers (picolibc's rv32 multilibs; qemu-system-misc has qemu-system-riscv32), and ARM Linux boards
# (cross C libraries, QEMU user mode); clang for the fuzz targets (libFuzzer with ASan and UBSan ships with Debian's
# clang); chromium for the docs tests, which look at the memory report in a headless browser.
APT_PACKAGES="gcc-arm-none-eabi binutils-arm-none-eabi picolibc-arm-none-eabi qemu-system-arm make
    libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib
    gcc-avr binutils-avr avr-libc simavr
    gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc
    gcc-arm-linux-gnueabihf libc6-dev-armhf-cross gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
    clang chromium"

missing_tools() {
    for tool in arm-none-eabi-gcc arm-none-eabi-g++ arm-none-eabi-size arm-none-eabi-readelf arm-none-eabi-objdump qemu-system-arm \
        avr-gcc avr-size avr-readelf avr-objdump simavr \
        riscv64-unknown-elf-gcc riscv64-unknown-elf-size riscv64-unknown-elf-objdump qemu-system-riscv32 arm-linux-gnueabihf-gcc aarch64-linux-gnu-gcc \
        qemu-arm qemu-aarch64 make cc clang chromium; do
        command -v "$tool" >/dev/null 2>&1 || echo "$tool"
    done
    [ -f /usr/lib/picolibc/arm-none-eabi/picolibc.specs ] || echo picolibc
    [ -d /usr/lib/arm-none-eabi/include/c++ ] || echo libstdc++-arm-none-eabi-newlib
    [ -f /usr/lib/avr/include/avr/io.h ] || echo avr-libc
    [ -f /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ] || echo picolibc-riscv64-unknown-elf
    [ -f /usr/arm-linux-gnueabihf/include/stdio.h ] || echo libc6-dev-armhf-cross
    [ -f /usr/aarch64-linux-gnu/include/stdio.h ] || echo libc6-dev-arm64-cross
}

if [ -n "$(missing_tools)" ]; then
    echo "setup: installing Debian packages:" $APT_PACKAGES
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    # another apt run on the machine holds the lock for a while: wait for it rather than fail
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq $APT_PACKAGES >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test,bench,docs]"
.venv/bin/python scripts/pythons.py setup
