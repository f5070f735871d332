"""Bundles drop into firmware projects: Make/CMake (library by default), Arduino, PlatformIO, Zephyr, ESP-IDF."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgestream import ShrubEnsemble, TreeClassifier, __version__
from edgestream.data import make_stream
from edgestream.export import export_bundle, read_manifest
from edgestream.simulate import load_bundle

STUB = Path(__file__).parent / "arduino_stub"
M4F = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]


def needs(*tools):
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (scripts/setup.sh installs them)")


def cmake() -> str:
    found = Path(sys.executable).parent / "cmake"
    return str(found) if found.exists() else (shutil.which("cmake") or pytest.skip("cmake not installed"))


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    X, y = make_stream("blobs", 300, seed=1)
    labels = np.array(["idle", 'say "hi"', "run"])[y]
    root = tmp_path_factory.mktemp("bundles")
    tree = export_bundle(TreeClassifier(max_depth=4).fit(X, labels), root / "frozen", "gesture")
    learn = export_bundle(ShrubEnsemble(window_size=16, max_shrubs=4).fit(X, y), root / "learning", "learn")
    return {"frozen": tree, "learning": learn, "X": X}


def test_a_bundle_is_an_arduino_platformio_and_zephyr_library(bundles):
    out = bundles["frozen"]
    manifest = read_manifest(out)
    assert manifest["class_names"] == ["idle", "run", 'say "hi"'] and manifest["edgestream_version"] == __version__
    assert len(manifest["model_sha256"]) == 64 and manifest["sources"] == ["src/es_infer.c", "src/gesture.c"]
    header = (out / "src" / "gesture.h").read_text()
    assert '#define GESTURE_CLASS_NAMES {"idle", "run", "say \\"hi\\""}' in header
    assert f'#define GESTURE_EDGESTREAM_VERSION "{__version__}"' in header and manifest["model_sha256"] in header
    properties = dict(line.split("=", 1) for line in (out / "library.properties").read_text().splitlines())
    assert properties["name"] == "gesture" and properties["includes"] == "gesture.h"
    assert {"version", "author", "maintainer", "sentence", "paragraph", "category", "url", "architectures"} <= \
        set(properties)
    library = json.loads((out / "library.json").read_text())
    assert library["name"] == "gesture" and library["build"]["srcDir"] == "src"
    assert (out / "examples" / "gesture" / "gesture.ino").is_file()
    assert "cmake: zephyr" in (out / "zephyr" / "module.yml").read_text()
    assert "config GESTURE" in (out / "zephyr" / "Kconfig").read_text()
    assert "../src/gesture.c" in (out / "zephyr" / "CMakeLists.txt").read_text()
    assert sorted(manifest["files"]) == sorted(str(p.relative_to(out)) for p in out.rglob("*")
                                               if p.is_file() and p.name != "edgestream.json")
    bundle = load_bundle(out)  # the harness reads the sources from the manifest
    assert bundle.predict_proba_q15(bundles["X"]).shape == (300, 3)


def test_export_removes_what_it_wrote_before_and_keeps_foreign_files(tmp_path):
    X, y = make_stream("blobs", 100, seed=2)
    model = TreeClassifier(max_depth=2).fit(X, y)
    export_bundle(model, tmp_path / "b", "first")
    (tmp_path / "b" / "notes.txt").write_text("mine")
    export_bundle(model, tmp_path / "b", "second")
    files = sorted(str(p.relative_to(tmp_path / "b")) for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert not any("first" in name for name in files) and "notes.txt" in files and "src/second.c" in files
    assert not (tmp_path / "b" / "examples" / "first").exists()
    (tmp_path / "other").mkdir()  # a firmware folder: its own files stay, the bundle goes beside them
    (tmp_path / "other" / "main.c").write_text("int main(void) { return 0; }\n")
    export_bundle(model, tmp_path / "other", "third")
    assert (tmp_path / "other" / "main.c").read_text() == "int main(void) { return 0; }\n"
    assert (tmp_path / "other" / "src" / "third.c").is_file()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "library.json").write_text("{}")
    with pytest.raises(ValueError, match="it holds library.json, which edgestream did not write"):
        export_bundle(model, tmp_path / "mine", "fourth")


def test_make_builds_only_the_library_and_the_example_on_request(bundles, tmp_path):
    needs("make", "cc")
    out = shutil.copytree(bundles["learning"], tmp_path / "copy")
    subprocess.run(["make", "-s"], cwd=out, check=True, capture_output=True)
    assert (out / "liblearn.a").is_file() and not (out / "example").exists()
    subprocess.run(["make", "-s", "example"], cwd=out, check=True, capture_output=True)
    assert "class" in subprocess.run([str(out / "example")], check=True, capture_output=True, text=True).stdout


def test_cmake_cross_builds_the_library_with_the_arm_toolchain_file(bundles, tmp_path):
    needs("arm-none-eabi-gcc")
    out = bundles["learning"]
    build = tmp_path / "build"
    env = {**os.environ, "CFLAGS": " ".join(M4F)}
    subprocess.run([cmake(), "-S", str(out), "-B", str(build), f"-DCMAKE_TOOLCHAIN_FILE={out}/extras/arm-none-eabi.cmake"],
                   check=True, capture_output=True, env=env)
    subprocess.run([cmake(), "--build", str(build)], check=True, capture_output=True)
    library = build / "liblearn.a"
    assert library.is_file() and not list(build.glob("learn_example*"))
    members = subprocess.run(["arm-none-eabi-objdump", "-f", str(library)], check=True, capture_output=True,
                             text=True).stdout
    assert "elf32-littlearm" in members


RV32IMC = ["--specs=picolibc.specs", "-march=rv32imc", "-mabi=ilp32"]


def test_cmake_cross_builds_the_library_with_the_risc_v_toolchain_file(bundles, tmp_path):
    needs("riscv64-unknown-elf-gcc")
    out = bundles["learning"]
    build = tmp_path / "build"
    subprocess.run([cmake(), "-S", str(out), "-B", str(build),
                    f"-DCMAKE_TOOLCHAIN_FILE={out}/extras/riscv64-unknown-elf.cmake",
                    "-DCMAKE_C_FLAGS=-march=rv32imc -mabi=ilp32"], check=True, capture_output=True)
    subprocess.run([cmake(), "--build", str(build)], check=True, capture_output=True)
    members = subprocess.run(["riscv64-unknown-elf-objdump", "-f", str(build / "liblearn.a")], check=True,
                             capture_output=True, text=True).stdout
    assert "elf32-littleriscv" in members and "elf64" not in members


def test_make_cross_builds_the_library_for_risc_v(bundles, tmp_path):
    needs("make", "riscv64-unknown-elf-gcc")
    out = shutil.copytree(bundles["frozen"], tmp_path / "copy")
    flags = " ".join(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Os", *RV32IMC])
    subprocess.run(["make", "-s", "CC=riscv64-unknown-elf-gcc", "AR=riscv64-unknown-elf-ar", f"CFLAGS={flags}"],
                   cwd=out, check=True, capture_output=True)
    header = subprocess.run(["riscv64-unknown-elf-readelf", "-h", "-A", str(out / "build" / "gesture.o")],
                            check=True, capture_output=True, text=True).stdout
    assert "ELF32" in header and "RISC-V" in header and "_c2p0" in header  # RV32 with compressed instructions


ESP_IDF_STUB = """
cmake_minimum_required(VERSION 3.13)
project(idf_stub C)
# What ESP-IDF does with a component's CMakeLists.txt, reduced to its registration: the sources become a library
set(ESP_PLATFORM 1)
function(idf_component_register)
  cmake_parse_arguments(ARG "" "" "SRCS;INCLUDE_DIRS" ${ARGN})
  add_library(component STATIC ${ARG_SRCS})
  target_include_directories(component PUBLIC ${ARG_INCLUDE_DIRS})
  set(COMPONENT_LIB component PARENT_SCOPE)
endfunction()
add_subdirectory({bundle} bundle)
"""


def test_a_bundle_is_an_esp_idf_component(bundles, tmp_path):
    """Under ESP-IDF (ESP_PLATFORM) the bundle's CMakeLists.txt registers every source and src/ as a component,
    with -ffp-contract=off; ESP-IDF itself is not built here: a stub registration builds what it registers."""
    out = bundles["learning"]
    manifest = (out / "idf_component.yml").read_text()
    assert f'version: "{__version__}"' in manifest and "shrubs model learn" in manifest
    project = tmp_path / "project"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(ESP_IDF_STUB.replace("{bundle}", str(out)))
    build = tmp_path / "build"
    subprocess.run([cmake(), "-S", str(project), "-B", str(build)], check=True, capture_output=True)
    result = subprocess.run([cmake(), "--build", str(build), "--verbose"], check=True, capture_output=True, text=True)
    assert list(build.rglob("libcomponent.a")) and not list(build.rglob("liblearn.a"))
    compiled = {Path(line.split(" -c ")[1].split()[0]).name for line in result.stdout.splitlines() if " -c " in line}
    assert compiled == {Path(source).name for source in read_manifest(out)["sources"]}
    assert "-ffp-contract=off" in result.stdout


CORES = {"cortex-m4f": ("arm-none-eabi-", M4F, "gnu++17"), "atmega328p": ("avr-", ["-mmcu=atmega328p"], "gnu++11")}


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("kind", ["frozen", "learning"])
def test_the_arduino_sketch_and_library_compile_for_cortex_m_and_avr(bundles, kind, core, tmp_path):
    prefix, flags, cxx_standard = CORES[core]
    needs(f"{prefix}gcc", f"{prefix}g++")
    out = bundles[kind]
    name = read_manifest(out)["name"]
    sketch = out / "examples" / name / f"{name}.ino"
    compile_cxx = [f"{prefix}g++", *flags, f"-std={cxx_standard}", "-Os", "-Wall", "-Wextra", "-Werror", "-I",
                   str(STUB), "-I", str(out / "src"), "-x", "c++", "-c", str(sketch), "-o", str(tmp_path / "sketch.o")]
    subprocess.run(compile_cxx, check=True, capture_output=True)
    for source in read_manifest(out)["sources"]:  # as the Arduino IDE builds src/: C with its default gnu11
        subprocess.run([f"{prefix}gcc", *flags, "-Os", "-Wall", "-Wextra", "-Werror", "-I", str(out / "src"),
                        "-c", str(out / source), "-o", str(tmp_path / (Path(source).stem + ".o"))],
                       check=True, capture_output=True)
    symbols = subprocess.run([f"{prefix}nm", str(tmp_path / "sketch.o")], check=True, capture_output=True,
                             text=True).stdout
    assert f"U {name}_predict" in symbols  # C linkage: the C library's symbol, unmangled
