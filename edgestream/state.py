"""One description of a learner's device state, and everything generated from it.

A learning model keeps its whole state in static memory of a size fixed at generation time. A learner describes
that state once, as a :class:`StateSpec`: its configuration fields (constant, in flash), its counters (small
integers that change) and its regions (arrays whose lengths follow from the configuration). From the description
come:

* the runtime's C declarations (``csrc/es_<learner>_state.h``: the config, counters and pointer structs that the
  hand-written ``es_<learner>.c`` works on), written by ``scripts/generate_headers.py`` and held against the
  file by the tests;
* through that header, the cffi declarations of the same structs for the host simulation;
* for one configuration, a :class:`StateLayout`: the generated bundle's state struct, its initializer from the
  current Python state, the pointer struct that binds the runtime to it, its ``sizeof`` (natural alignment or
  packed, as on AVR) and the named regions that the budget reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable

import numpy as np

from .adwin import ADWIN_DTYPE
from .task import ANOMALY, CLASSIFICATION, REGRESSION
from .tree import NODE_DTYPE

# The bundle objects <name>_config and <name>_model (as a learner's ``tables`` names them): plain const data that
# the runtime reads in place through pointers, so AVR keeps them in RAM (its other constant tables stay in flash).
RAM_DESCRIPTORS = ("config", "model")

# C type -> (size, alignment, numpy dtype) on the targets (ARM, x86; AVR packs everything to alignment 1)
C_TYPES = {
    "uint8_t": (1, 1, np.dtype(np.uint8)),
    "int16_t": (2, 2, np.dtype("<i2")),
    "uint16_t": (2, 2, np.dtype("<u2")),
    "int32_t": (4, 4, np.dtype("<i4")),
    "uint32_t": (4, 4, np.dtype("<u4")),
    "int64_t": (8, 8, np.dtype("<i8")),
    "uint64_t": (8, 8, np.dtype("<u8")),
    "float": (4, 4, np.dtype("<f4")),
    "es_node": (4, 2, NODE_DTYPE),
    "es_adwin": (ADWIN_DTYPE.itemsize, ADWIN_DTYPE.alignment, ADWIN_DTYPE),
}
# The runtime header that declares a struct type used in a state (the generated header includes it).
TYPE_HEADERS = {"es_node": "es_tree.h", "es_adwin": "es_adwin.h"}
# Per task, the C type of the target a runtime's learn call takes and the runtime's learn and predict calls: a
# classifier learns a class index and predicts a class (``<prefix>_learn``, ``<prefix>_predict``), a regressor
# learns an int16 target code (:class:`edgestream.task.TargetScale`) and predicts an int32 raw output
# (``<prefix>_learn_target``, ``<prefix>_predict_raw(model, row, int32_t *raw_out)``), a detector learns a row
# alone (no target: ``<prefix>_learn(model, row)``) and scores it (``<prefix>_score(model, row, int32_t *out)``:
# the Q15 score and the flag, edgestream.task.split_output).
TARGET_TYPES = {CLASSIFICATION: "uint8_t", REGRESSION: "int16_t", ANOMALY: None}
RUNTIME_CALLS = {CLASSIFICATION: ("learn", "predict"), REGRESSION: ("learn_target", "predict_raw"),
                 ANOMALY: ("learn", "score")}


@dataclass(frozen=True)
class Field:
    """A scalar member of the config or counters struct."""

    name: str
    c_type: str
    comment: str = ""


@dataclass(frozen=True)
class RegionSpec:
    """An array of the state; ``count`` gives its length from the learner's configuration values."""

    name: str
    group: str  # window, node pool, leaves, weights, scratch, ...
    c_type: str
    count: Callable[[dict], int]
    comment: str = ""


@dataclass(frozen=True)
class Region:
    """One member of a generated state struct."""

    name: str
    group: str
    c_type: str
    count: int

    @property
    def size(self) -> int:
        return C_TYPES[self.c_type][0] if self.c_type in C_TYPES else 0

    @property
    def bytes(self) -> int:
        return self.size * self.count

    @property
    def dtype(self) -> np.dtype:
        return C_TYPES[self.c_type][2]


@dataclass(frozen=True)
class StateSpec:
    """The device state of one learner: ``prefix`` names its C types (``es_shrubs_config`` ...).

    ``input_type`` is the C type of the row the runtime's ``<prefix>_learn`` and ``<prefix>_predict_proba``
    take: ``uint8_t`` bins (quantized by the bundle) or ``float`` raw features. ``predict_scratch``: the
    runtime's ``<prefix>_predict`` takes the ``work`` and ``proba`` scratch before ``class_out`` (else only the
    row and ``class_out``). ``tasks``: those the runtime serves; each names the type of the target its learn call
    takes and its calls (:data:`TARGET_TYPES`, :data:`RUNTIME_CALLS`). A regressor's state has one output: its
    config's ``n_classes`` is 1."""

    prefix: str
    title: str
    config: tuple[Field, ...]
    counters: tuple[Field, ...]
    regions: tuple[RegionSpec, ...]
    input_type: str = "uint8_t"
    predict_scratch: bool = True
    tasks: tuple[str, ...] = (CLASSIFICATION,)

    def target_type(self, task: str) -> str | None:
        """The C type of the target ``<prefix>_learn`` (or ``_learn_target``) takes for ``task`` (None: none)."""
        if task not in self.tasks:
            raise ValueError(f"the {self.prefix} runtime serves {', '.join(self.tasks)}, not {task}")
        return TARGET_TYPES[task]

    def call(self, task: str, kind: int) -> str:
        """The runtime function of ``task``: kind 0 learns, 1 predicts (the class or the raw output)."""
        self.target_type(task)
        return f"{self.prefix}_{RUNTIME_CALLS[task][kind]}"

    @property
    def config_type(self) -> str:
        return f"{self.prefix}_config"

    @property
    def counters_type(self) -> str:
        return f"{self.prefix}_counters"

    def config_bytes(self, packed: bool = False) -> int:
        """sizeof the config struct (natural alignment, or none when packed)."""
        return struct_size([Region(f.name, "", f.c_type, 1) for f in self.config], packed)

    def layout(self, config: dict) -> "StateLayout":
        missing = [f.name for f in self.config if f.name not in config]
        if missing:
            raise ValueError(f"{self.prefix}: configuration values missing: {missing}")
        regions = [Region(r.name, r.group, r.c_type, int(r.count(config))) for r in self.regions]
        return StateLayout(self, dict(config), regions)

    def declarations(self) -> str:
        """The config, counters and pointer structs (C99; the host reads them from the generated header)."""
        def struct(members: list[str], name: str) -> str:
            return "typedef struct {\n" + "\n".join(members) + f"\n}} {name};\n"

        def member(declaration: str, comment: str) -> str:
            return f"    {declaration:<32}/* {comment} */" if comment else f"    {declaration}"

        config = struct([member(f"{f.c_type} {f.name};", f.comment) for f in self.config], self.config_type)
        counters = struct([member(f"{f.c_type} {f.name};", f.comment) for f in self.counters], self.counters_type)
        pointers = [member(f"const {self.config_type} *config;", "constant, in flash")]
        pointers += [member(f"{r.c_type} *{r.name};", f"{r.group}: {r.comment}" if r.comment else r.group)
                     for r in self.regions]
        pointers.append(member(f"{self.counters_type} *counters;", ""))
        return "\n".join([config, counters, struct(pointers, self.prefix)])

    def header(self) -> str:
        """``csrc/<prefix>_state.h``: the runtime's view of the state (generated, never edited by hand)."""
        guard = f"{self.prefix.upper()}_STATE_H"
        used = {item.c_type for item in self.config + self.counters + self.regions}
        includes = [header for c_type, header in TYPE_HEADERS.items() if c_type in used] or ["es_common.h"]
        include = "".join(f'#include "{header}"\n' for header in includes)
        return (f"/* {self.title}: the device state's C types. Generated from edgestream's state description "
                f"(edgestream.state);\n * regenerate with `python scripts/generate_headers.py`, never edit by hand. */\n"
                f"#ifndef {guard}\n#define {guard}\n\n{include}\n{self.declarations()}\n#endif\n")


@dataclass
class StateLayout:
    """The state of one configuration: regions in struct order, plus the counters struct at the end."""

    spec: StateSpec
    config: dict
    regions: list[Region]

    def members(self) -> list[Region]:
        counters = Region("counters", "counters", self.spec.counters_type, 1)
        return self.regions + [counters]

    def _member_size_align(self, region: Region, packed: bool) -> tuple[int, int]:
        if region.c_type == self.spec.counters_type:
            size = struct_size([Region(f.name, "", f.c_type, 1) for f in self.spec.counters], packed)
            align = 1 if packed else max(C_TYPES[f.c_type][1] for f in self.spec.counters)
            return size, align
        return region.bytes, 1 if packed else C_TYPES[region.c_type][1]

    def offsets(self, packed: bool = False) -> tuple[dict[str, int], int]:
        """Offset of every member and ``sizeof`` the struct (natural alignment, or none when packed)."""
        offset, offsets, largest = 0, {}, 1
        for region in self.members():
            size, align = self._member_size_align(region, packed)
            offset = -(-offset // align) * align
            offsets[region.name] = offset
            offset += size
            largest = max(largest, align)
        return offsets, -(-offset // largest) * largest

    def size(self, packed: bool = False) -> int:
        return self.offsets(packed)[1]

    def groups(self, packed: bool = False) -> list[tuple[str, str, int]]:
        """(name, group, bytes) of every member, then the alignment padding if any."""
        items = [(r.name, r.group, self._member_size_align(r, packed)[0]) for r in self.members()]
        padding = self.size(packed) - sum(size for _, _, size in items)
        return items + ([("padding", "alignment", padding)] if padding else [])

    def zeros(self) -> dict[str, np.ndarray]:
        """A zeroed array for every region."""
        return {r.name: np.zeros(r.count, dtype=r.dtype) for r in self.regions}

    def state_struct(self, name: str) -> str:
        """The bundle's typedef ``<name>_state``: one member per region, in layout order."""
        members = [f"    {r.c_type} {r.name}[{r.count}];" for r in self.regions]
        members.append(f"    {self.spec.counters_type} counters;")
        return "typedef struct {\n" + "\n".join(members) + f"\n}} {name}_state;"

    def initializer(self, name: str, arrays: dict[str, np.ndarray], counters: dict[str, int], emit_array) -> str:
        """``static <name>_state <name>_memory = {...}`` holding the given state (all-zero regions left out, so a
        fresh state goes to .bss instead of taking its image in flash)."""
        lines = [f"static {name}_state {name}_memory = {{"]
        for region in self.regions:
            body = _region_values(region, arrays[region.name], emit_array)
            if body is not None:
                lines.append(f"    .{region.name} = {{\n        {body}\n    }},")
        lines.append(f"    .counters = {self._counters_literal(counters)}")
        return "\n".join(lines) + "\n};"

    def _counters_literal(self, counters: dict[str, int]) -> str:
        return "{ " + ", ".join(c_scalar(counters[f.name], f.c_type) for f in self.spec.counters) + " }"

    def binding(self, name: str) -> str:
        """The constant pointer struct that hands the bundle's state to the runtime."""
        lines = [f"static const {self.spec.prefix} {name}_model = {{", f"    .config = &{name}_config,"]
        lines += [f"    .{r.name} = {name}_memory.{r.name}," for r in self.regions]
        lines.append(f"    .counters = &{name}_memory.counters")
        return "\n".join(lines) + "\n};"

    def split_state(self, name: str, arrays: dict[str, np.ndarray], counters: dict[str, int], emit_array) -> str:
        """For sanitizer builds: every region a static array of its own (ASan puts a redzone after each, so an
        overflow from one region into the next is caught), ``<name>_memory`` a struct of pointers to them and the
        counters, and the binding; it replaces :meth:`initializer` and :meth:`binding` (same names in use)."""
        lines = []
        for region in self.regions:
            body = _region_values(region, arrays[region.name], emit_array)
            value = f" = {{\n    {body}\n}}" if body is not None else ""
            lines.append(f"static {region.c_type} {name}_region_{region.name}[{region.count}]{value};")
        members = [f"    {r.c_type} *{r.name};" for r in self.regions] + [f"    {self.spec.counters_type} counters;"]
        pointers = ", ".join(f"{name}_region_{r.name}" for r in self.regions)
        lines.append("static struct {\n" + "\n".join(members) + f"\n}} {name}_memory = {{ {pointers}, "
                     f"{self._counters_literal(counters)} }};")
        binding = [f"static const {self.spec.prefix} {name}_model = {{", f"    .config = &{name}_config,"]
        binding += [f"    .{r.name} = {name}_region_{r.name}," for r in self.regions]
        binding.append(f"    .counters = &{name}_memory.counters")
        return "\n".join(lines + ["\n".join(binding) + "\n};"])

    def config_initializer(self, name: str) -> str:
        values = ", ".join(c_scalar(self.config[f.name], f.c_type) for f in self.spec.config)
        return f"static const {self.spec.config_type} {name}_config = {{ {values} }};"

    def initial_image_bytes(self, arrays: dict[str, np.ndarray], counters: dict[str, int],
                            packed: bool = False) -> int:
        """Flash bytes of the state's initial image: the whole struct unless it is all zero (then .bss)."""
        nonzero = any(np.asarray(arrays[r.name]).view(np.uint8).any() for r in self.regions)
        return self.size(packed) if nonzero or any(counters.values()) else 0


def _region_values(region: Region, values, emit_array) -> str | None:
    """The C initializer values of a region, or None when it is all zero."""
    values = np.asarray(values)
    if not values.view(np.uint8).any():
        return None
    if region.c_type == "es_node":
        return ",\n        ".join(f"{{ {n['feature']}, {n['threshold']}, {n['child']} }}" for n in values)
    if values.dtype.names:
        return ",\n        ".join(c_record(record) for record in values)
    if region.c_type == "float":
        return emit_array(values, "float32").replace("\n    ", "\n        ")
    return emit_array(values).replace("\n    ", "\n        ")


def c_scalar(value, c_type: str) -> str:
    """An exact C literal of a config value: integers (``u`` for unsigned types) or a float32 as a hexadecimal
    float literal (``0x1.bb67aep+0f``), which the compiler reads back to the same bits."""
    if c_type == "float":
        value = np.float32(value)
        if not np.isfinite(value):
            raise ValueError(f"config value {value!r} is not finite")
        return float(value).hex() + "f"
    return f"{int(value)}{'u' if c_type.startswith('uint') else ''}"


def c_record(value) -> str:
    """A C initializer of a numpy record or (nested) integer array: braces per struct and array level."""
    if isinstance(value, np.void) and value.dtype.names:
        return "{ " + ", ".join(c_record(value[name]) for name in value.dtype.names) + " }"
    array = np.asarray(value)
    if array.ndim:
        return "{ " + ", ".join(c_record(item) for item in array) + " }"
    return str(int(array))


def struct_size(regions, packed: bool = False) -> int:
    """sizeof() of a C struct of plain arrays in this order (natural alignment, or none when packed)."""
    offset, largest = 0, 1
    for region in regions:
        align = 1 if packed else C_TYPES[region.c_type][1]
        offset = -(-offset // align) * align + region.bytes
        largest = max(largest, align)
    return -(-offset // largest) * largest


def runtime_header_path(spec: StateSpec) -> Path:
    return Path(str(resources.files("edgestream.csrc"))) / f"{spec.prefix}_state.h"


def engine_header_path() -> Path:
    return Path(__file__).parent / "_engine_learners.h"


def engine_header(specs) -> str:
    """``edgestream/_engine_learners.h``: the table through which the compiled host engine (``_engine.pyx``)
    calls every learning runtime: per state prefix and task, ``sizeof`` its pointer, config and counters structs,
    and its learn, predict_proba (classifiers) and predict calls behind one signature each: the target an int32
    (a class index or a target code), the one output an int32 (the class or the raw output). Generated, never
    edited by hand."""
    specs = list({spec.prefix: spec for spec in specs}.values())
    includes = "".join(f'#include "{spec.prefix}.h"\n' for spec in specs)
    wrappers, entries = [], []
    for spec in specs:
        for task in spec.tasks:
            wrapper, entry = _engine_wrappers(spec, task)
            wrappers.append(wrapper)
            entries.append(entry)
    return ("/* The compiled host engine's table of learning runtimes. Generated from edgestream's state descriptions "
            "(edgestream.state);\n * regenerate with `python scripts/generate_headers.py`, never edit by hand. */\n"
            "#ifndef ES_ENGINE_LEARNERS_H\n#define ES_ENGINE_LEARNERS_H\n\n#include <stddef.h>\n" + includes +
            "\ntypedef es_status (*es_engine_learn_fn)(const void *model, const void *row, int32_t target);\n"
            "typedef es_status (*es_engine_proba_fn)(const void *model, const void *row, uint32_t *work, "
            "uint16_t *proba);\n"
            "typedef es_status (*es_engine_output_fn)(const void *model, const void *row, uint32_t *work, "
            "uint16_t *proba,\n                                          int32_t *out);\n\n"
            "typedef struct {\n    const char *prefix;\n    const char *task;\n"
            "    size_t model_bytes, config_bytes, counters_bytes;\n"
            "    es_engine_learn_fn learn;\n    es_engine_proba_fn predict_proba; /* NULL: a regressor */\n"
            "    es_engine_output_fn predict;\n} es_engine_learner;\n\n" + "\n".join(wrappers) +
            "\nstatic const es_engine_learner es_engine_learners[] = {\n" + "\n".join(entries) + "\n};\n\n"
            f"#define ES_ENGINE_N_LEARNERS {len(entries)}\n\n#endif\n")


def _engine_wrappers(spec: StateSpec, task: str) -> tuple[str, str]:
    """The engine's wrappers of one runtime's calls for ``task``, and its table entry."""
    p, row, target = spec.prefix, f"const {spec.input_type} *", spec.target_type(task)
    tag = "" if task == CLASSIFICATION else f"_{task}"
    given, ignored = (f", ({target})target", "") if target else ("", "    (void)target;\n")
    learn = (f"static es_status {p}_engine_learn{tag}(const void *model, const void *row, int32_t target)\n"
             f"{{\n{ignored}"
             f"    return {spec.call(task, 0)}((const {p} *)model, ({row})row{given});\n}}\n\n")
    output = (f"static es_status {p}_engine_output{tag}(const void *model, const void *row, uint32_t *work, "
              f"uint16_t *proba,\n                                  int32_t *out)\n{{\n")
    scratch = task == CLASSIFICATION and spec.predict_scratch
    unused = "" if scratch else "    (void)work;\n    (void)proba;\n"
    if task == CLASSIFICATION:
        output += (f"    uint8_t class_out = 0;\n    es_status status;\n{unused}"
                   f"    status = {p}_predict((const {p} *)model, ({row})row, {'work, proba, ' if scratch else ''}"
                   f"&class_out);\n    *out = class_out;\n    return status;\n}}\n")
        proba = (f"static es_status {p}_engine_proba(const void *model, const void *row, uint32_t *work, "
                 f"uint16_t *proba)\n{{\n    return {p}_predict_proba((const {p} *)model, ({row})row, work, proba);\n}}\n\n")
    else:
        output += f"{unused}    return {spec.call(task, 1)}((const {p} *)model, ({row})row, out);\n}}\n"
        proba = ""
    entry = (f'    {{ "{p}", "{task}", sizeof({p}), sizeof({p}_config), sizeof({p}_counters), {p}_engine_learn{tag}, '
             f"{p + '_engine_proba' if proba else 'NULL'}, {p}_engine_output{tag} }},")
    return learn + proba + output, entry
