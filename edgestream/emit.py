"""Emit the generated files of a bundle from a learner's template context (templates in codegen/)."""

from __future__ import annotations

from importlib import resources

import jinja2
import numpy as np

SOURCE_DIR = "src"  # the C sources and headers of a bundle (an Arduino/PlatformIO library's src/)
# A bundle is at once a Make/CMake project, an Arduino and PlatformIO library, a Zephyr module and an ESP-IDF component.
TEMPLATES = {
    "src/{name}.h": "model.h.j2",
    "extras/main.c": "main.c.j2",
    "extras/arm-none-eabi.cmake": "toolchain_arm.cmake.j2",
    "extras/riscv64-unknown-elf.cmake": "toolchain_riscv.cmake.j2",
    "Makefile": "Makefile.j2",
    "CMakeLists.txt": "CMakeLists.txt.j2",
    "library.properties": "library.properties.j2",
    "library.json": "library.json.j2",
    "examples/{name}/{name}.ino": "sketch.ino.j2",
    "zephyr/module.yml": "zephyr_module.yml.j2",
    "zephyr/CMakeLists.txt": "zephyr_CMakeLists.txt.j2",
    "zephyr/Kconfig": "zephyr_Kconfig.j2",
    "idf_component.yml": "idf_component.yml.j2",
}
C_TYPES = {"float32": "float", "int32": "int32_t", "int16": "int16_t"}
VALUES_PER_LINE = 12


def c_literal(value, dtype: str) -> str:
    """Exact C literal: the shortest decimal that reads back as the same float32, or a plain integer."""
    if dtype == "float32":
        value = np.float32(value)
        if np.isinf(value):
            return "INFINITY" if value > 0 else "-INFINITY"  # <math.h>, a constant expression in C99
        if value == 0 or 1e-4 <= abs(value) < 1e7:
            return np.format_float_positional(value, unique=True, trim="0") + "f"
        return np.format_float_scientific(value, unique=True, trim="0") + "f"
    return str(int(value))


def c_array(values, dtype: str = "int") -> str:
    """Comma-separated literals, a dozen per line; one 0 for an empty array (C has no zero-length arrays)."""
    items = [c_literal(v, dtype) for v in np.asarray(values).reshape(-1)] or ["0"]
    lines = [", ".join(items[i : i + VALUES_PER_LINE]) for i in range(0, len(items), VALUES_PER_LINE)]
    return ",\n    ".join(lines)


def wrapper_stack_bytes(n_features: int, n_classes: int) -> int:
    """Locals of a generated predict wrapper: the bins, the uint32 accumulator and the Q15 probabilities."""
    return n_features + 4 * n_classes + 2 * n_classes


C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "_Bool _Complex _Imaginary".split())


def check_name(name) -> None:
    """A bundle name prefixes every generated C symbol and file: a lowercase C identifier, not a keyword."""
    if not (isinstance(name, str) and name.isidentifier() and name.isascii() and name.lower() == name) or \
            name == "main" or name.startswith("es_") or name in C_KEYWORDS:
        raise ValueError(f"bundle name {name!r} must be a lowercase C identifier (letters, digits, _), not a C "
                         "keyword, not 'main' and not starting with 'es_'")


def environment(autoescape: bool = False) -> jinja2.Environment:
    loader = jinja2.FileSystemLoader(str(resources.files("edgestream.codegen")))
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=autoescape)
    env.filters["c_array"] = c_array
    env.filters["c_float"] = lambda value: c_literal(value, "float32")
    return env


def render_bundle(context: dict, model_template: str) -> dict[str, str]:
    """Path in the bundle -> text of every generated file; ``model_template`` renders ``src/<name>.c``, and the
    context's ``extra_files`` (file name -> template) adds the learner's own generated headers to ``src/``."""
    extra = {f"{SOURCE_DIR}/{out}": template for out, template in context.get("extra_files", {}).items()}
    return render_files(context, {**TEMPLATES, f"{SOURCE_DIR}/{{name}}.c": model_template, **extra})


def c_string(text: str) -> str:
    """A C string literal of ``text`` (UTF-8; quotes, backslashes and non-printable bytes escaped)."""
    out = []
    for byte in str(text).encode():
        char = chr(byte)
        out.append("\\" + char if char in '"\\' else char if 32 <= byte < 127 and char != "?" else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def render_files(context: dict, templates: dict[str, str]) -> dict[str, str]:
    """File name (``{name}`` replaced by the bundle's) -> text of each template rendered with ``context``."""
    env = environment()
    name, input_dtype = context["name"], context["input_dtype"]
    context = {
        "NAME": name.upper(),
        "input_type": C_TYPES[input_dtype],
        "quantize": "es_quantize_f32" if input_dtype == "float32" else "es_quantize_i32",
        **context,
    }
    return {out.format(name=name): env.get_template(template).render(context) for out, template in templates.items()}
