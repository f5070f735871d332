#!/usr/bin/env bash
# Prepare a fresh machine: the cross toolchain and emulator (Debian packages) and a project-local venv
# with edgestream installed in editable mode plus its test and benchmark extras.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="gcc-arm-none-eabi binutils-arm-none-eabi picolibc-arm-none-eabi qemu-system-arm make"

missing_tools() {
    for tool in arm-none-eabi-gcc arm-none-eabi-size qemu-system-arm make cc; do
        command -v "$tool" >/dev/null 2>&1 || echo "$tool"
    done
    [ -f /usr/lib/picolibc/arm-none-eabi/picolibc.specs ] || echo picolibc
}

if [ -n "$(missing_tools)" ]; then
    echo "setup: installing Debian packages: $APT_PACKAGES"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $APT_PACKAGES >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test,bench]"
