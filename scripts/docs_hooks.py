"""The generated parts of the documentation site (an mkdocs hook, named in mkdocs.yml under ``hooks:``).

A page asks for generated text with a line of its own, ``<!-- generated: KIND [ARGUMENT] -->``; at build time the
line is replaced by what :data:`GENERATORS` makes of the code as it is (the argument parser, the learner registry
and the estimators' signatures, the board profiles, the C headers, the benchmark results), so the reference never
goes stale and nothing in it is copied by hand. ``python scripts/docs_hooks.py KIND [ARGUMENT]`` prints one part.
"""

from __future__ import annotations

import argparse
import inspect
import posixpath
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- generated: ([a-z-]+)(?: (\S+))? -->$", re.MULTILINE)
RESULTS = ROOT / "benchmarks" / "results"
ERRORS_PER_COMMAND = 6  # rows of the bad-input table shown under each command of the CLI reference


PAGE = {"path": "index.md"}  # the page being built: generated links are relative to it


def on_page_markdown(markdown: str, page=None, config=None, files=None) -> str:
    """mkdocs hook: expand every marker of a page."""
    PAGE["path"] = page.file.src_uri if page is not None else "index.md"
    return MARKER.sub(lambda match: generate(match.group(1), match.group(2)), markdown)


SPHINX_ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj):(?=<code>)")


def on_page_content(html: str, page=None, config=None, files=None) -> str:
    """mkdocs hook: the docstrings' Sphinx roles (``:class:`Name```) read as plain code."""
    return SPHINX_ROLE.sub("", html)


def link(target: str) -> str:
    """The link to the page ``target`` (a path under docs/) from the page being built."""
    return posixpath.relpath(target, posixpath.dirname(PAGE["path"]) or ".")


def generate(kind: str, argument: str | None = None) -> str:
    if kind not in GENERATORS:
        raise ValueError(f"unknown generated part {kind!r}; the parts are: {', '.join(GENERATORS)}")
    maker = GENERATORS[kind]
    return maker(argument) if argument is not None else maker()


def cell(text) -> str:
    """A table cell: a ``|`` outside code spans escaped (inside them the table reads it as text)."""
    parts = str(text).replace("\n", " ").split("`")
    return "`".join(part if index % 2 else part.replace("|", "\\|") for index, part in enumerate(parts))


def table(header: tuple[str, ...], rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


# --- the command line ----------------------------------------------------------------------------------------

def cli_reference() -> str:
    """Every command of ``edgestream`` and every option, from the parser the command itself uses."""
    from edgestream.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in commands._choices_actions}
    parts = ["```text", parser.format_usage().strip(), "```", "", options_table(parser)]
    for name, sub in commands.choices.items():
        parts += ["", f"## edgestream {name}", "", helps.get(name, "") + ".", "", "```text",
                  sub.format_usage().strip(), "```", "", options_table(sub), "", command_errors(name)]
    return "\n".join(parts)


def options_table(parser: argparse.ArgumentParser) -> str:
    rows = []
    for group in parser._action_groups:
        for action in group._group_actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            rows.append((argument_name(action), group.title or "", describe(action)))
    return table(("argument", "group", "what"), rows)


def argument_name(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    takes_value = action.nargs != 0
    value = f" {action.metavar or action.dest.upper()}" if takes_value and not action.choices else ""
    if takes_value and action.choices:
        value = " {" + ",".join(map(str, action.choices)) + "}"
    return ", ".join(f"`{flag}{value}`" for flag in action.option_strings)


def describe(action: argparse.Action) -> str:
    text = (action.help or "").replace("%(default)s", str(action.default))
    if action.required and action.option_strings:
        text += " (required)"
    default = action.default
    if default not in (None, False, argparse.SUPPRESS) and action.nargs != 0 and "default" not in text:
        text += f" (default {default})"
    return text


def command_errors(command: str) -> str:
    """The first rows of the bad-input table (tests/bad_inputs.py) for one command, with their answers."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import bad_inputs
    finally:
        sys.path.remove(str(ROOT / "tests"))
    cases = [case for case in bad_inputs.CASES if shlex.split(case.command)[:1] == [command]]
    if not cases:
        return ""
    rows = [(f"`edgestream {case.command}`", case.code, f"`{case.fragment}`") for case in cases[:ERRORS_PER_COMMAND]]
    more = f" ({len(cases)} in all in [the bad-input table]({link('bad-input.md')}))"
    return f"Common mistakes and their answers{more}:\n\n" + table(("command", "exit", "error contains"), rows)


# --- the learners --------------------------------------------------------------------------------------------

def learners_table() -> str:
    from edgestream import learners

    rows = []
    for spec in learners.REGISTRY.values():
        device = "keeps learning" if spec.learning else "frozen"
        rows.append((f"[`{spec.name}`]({link(f'learners/{spec.name}.md')})", f"`{estimator_of(spec).__name__}`", spec.summary, device,
                     "yes" if spec.online else "batch", ", ".join(f"`{m}`" for m in spec.runtime)))
    return table(("learner", "estimator", "what", "on the device", "learns online", "runtime modules"), rows)


def estimator_of(spec):
    """The estimator of the learner's first task (its classifier, or a detector's)."""
    return spec.estimator(spec.tasks[0])


def learner_parameters(name: str) -> str:
    """Every constructor parameter of a learner's estimator: default, command-line option, whether the budget
    chooses it."""
    from edgestream import learners

    spec = learners.get(name)
    chosen = set(spec.ladder_params)
    rows = []
    for parameter in inspect.signature(estimator_of(spec).__init__).parameters.values():
        if parameter.name == "self":
            continue
        option = spec.option(parameter.name)
        flag, what = "(Python only)", ""
        if option is not None:
            flag = f"`{option.flag}`" + (f" `{option.metavar}`" if option.metavar and option.type is not bool else "")
            choices = f" ({', '.join(map(str, option.choices))})" if option.choices else ""
            what = option.help + choices
        budget = "yes" if parameter.name in chosen else ""
        default = "" if parameter.default is inspect.Parameter.empty else f"`{parameter.default!r}`"
        rows.append((f"`{parameter.name}`", default, flag, budget, what))
    header = ("parameter", "default", "option of `fit` and `budget`", "budget chooses", "what")
    return f"`{estimator_of(spec).__name__}` ({estimator_of(spec).__module__}):\n\n" + table(header, rows)


def learner_state(name: str) -> str:
    """A learning learner's device state, region by region, with the size formula its description declares."""
    from edgestream import learners

    spec = learners.get(name)
    if spec.state is None:
        return (f"`{name}` is frozen on the device: no state in RAM but one call's stack; its tables are in flash "
                "(see the budget ladder below).")
    state = spec.state
    config = ", ".join(f"`{f.name}`" for f in state.config)
    counters = ", ".join(f"`{f.name}`" for f in state.counters)
    rows = [(f"`{r.name}`", r.group, f"`{r.c_type}`", r.comment) for r in state.regions]
    return (f"The state of `{state.prefix}` ({state.title}), from its description in `{estimator_of(spec).__module__}`: "
            f"configuration {config} (constant, in flash); counters {counters}; and these regions "
            "(arrays sized at generation):\n\n" + table(("region", "group", "C type", "elements"), rows))


def learner_ladder(name: str) -> str:
    """The configurations the budget tries, largest first, with the RAM and flash each takes on a board."""
    from edgestream import boards, budget, learners

    spec = learners.get(name)
    if not spec.ladder:
        return f"`{name}` has no ladder: the budget takes its parameters as given."
    board = boards.load_board("stm32f411")
    task = spec.tasks[0]
    features, classes = 8, 2 if task == "classification" else 1
    plans = budget.configurations(name, board, features, classes, task=task)
    timed = all(plan.time for plan in plans)
    rows = [(", ".join(f"{k}={v}" for k, v in plan.config.items() if k not in ("features", "classes")),
             f"{plan.state_bytes:,}", f"{plan.ram_bytes:,}", f"{plan.flash_bytes:,}",
             *(time_cells(plan.time) if timed else ()))
            for plan in plans]
    time_header = ("predict (mean / worst)", "learn (mean / worst)", "samples/s (worst)") if timed else ()
    time_text = (" Time: instructions per call on its Cortex-M4F predicted by the learner's cost model "
                 "(`edgestream.costs`), and the sample rate at its 100 MHz when every sample is predicted and learned "
                 "before the next.") if timed else ""
    return (f"The budget's ladder for `{name}` (largest first; the budget takes the first rung that fits), each "
            f"rung's bytes on `{board.name}` for {features} features and {classes} classes, as "
            f"`edgestream budget --learner {name} --board {board.name} --features {features} --classes {classes}` "
            "computes them (RAM: state and stack; flash: tables, the state's initial image and, with the board's "
            f"toolchain installed, the code).{time_text}\n\n"
            + table(("rung", "state bytes", "RAM bytes", "flash bytes", *time_header), rows))


def time_cells(time) -> tuple[str, str, str]:
    predict, learn = time.cost.predict, time.cost.learn
    return (f"{predict.mean:,.0f} / {predict.worst:,.0f}", f"{learn.mean:,.0f} / {learn.worst:,.0f}",
            f"{time.rates()['worst']:,.0f}")


def benchmark_result(name: str) -> str:
    """A benchmark's last measured table (written by scripts/bench_docs.py), or how to measure it."""
    path = RESULTS / f"{name}.md"
    if not path.is_file():
        return (f"No measured table is stored yet: `python scripts/bench_docs.py {name}` runs the benchmark and "
                f"writes it here.")
    return path.read_text().split("\n", 1)[1].strip()  # without its title line


# --- boards, C runtime, formats ------------------------------------------------------------------------------

def boards_table() -> str:
    from edgestream import boards

    rows = []
    for name in boards.board_names():
        b = boards.load_board(name)
        flash = f"{b.flash_bytes:,}" if b.flash_bytes else "(disk)"
        emulator = f"{b.emulator.command} {b.emulator.machine}".strip() if b.emulator else "none"
        rows.append((f"`{b.name}`", b.description, b.cpu, f"{b.ram_bytes:,}", flash, f"{b.clock_hz:,}",
                     "yes" if b.fpu else "no", b.io, f"`{b.toolchain.cc}`", emulator))
    return table(("name", "description", "cpu", "RAM bytes", "flash bytes", "clock Hz", "FPU", "io", "compiler",
                  "emulator"), rows)


def board_file(name: str) -> str:
    return f"```toml\n{(ROOT / 'boards' / f'{name}.toml').read_text().strip()}\n```"


C_ITEM = re.compile(r"^[ \t]*/\*(?P<comment>(?:[^*]|\*(?!/))*)\*/|^(?P<declaration>(?:static inline )?[a-z_][\w ]*\**\s*"
                    r"(?P<name>es_\w+)\((?:[^;{])*\)\s*(?:;|\{[^\n]*\}))", re.MULTILINE)


def c_api() -> str:
    """Every function the runtime's headers declare, header by header, each under the comment that precedes it
    (a comment before several declarations speaks for all of them)."""
    parts = []
    for header in sorted((ROOT / "csrc").glob("es_*.h")):
        if header.name.endswith("_state.h"):
            continue
        parts += [f"### `{header.name}`", ""]
        comment, seen = None, set()
        text = re.sub(r"\{[^{}]*\n[^{}]*\}", "{}", header.read_text())  # struct and enum bodies, their comments
        for match in C_ITEM.finditer(text):
            if match.group("comment") is not None:
                if comment:  # a comment of its own (the header's introduction, a section)
                    parts += [comment, ""]
                comment = c_comment(match.group("comment"))
                continue
            if match.group("name") in seen:  # a second definition for another target (es_flash.h)
                continue
            seen.add(match.group("name"))
            if comment:
                parts += [comment, ""]
                comment = None
            declaration = re.sub(r"\s*\{.*\}$", ";", " ".join(match.group("declaration").split()))
            parts += [f"    {declaration}", ""]
        if comment:
            parts += [comment, ""]
    return "\n".join(parts)


def c_comment(text: str) -> str:
    lines = [line.strip().lstrip("*").strip() for line in text.strip().splitlines()]
    return " ".join(line for line in lines if line).replace("|", "\\|")


def status_codes() -> str:
    text = (ROOT / "csrc" / "es_common.h").read_text()
    body = re.search(r"typedef enum \{(.*?)\} es_status;", text, re.DOTALL).group(1)
    rows = re.findall(r"(ES_\w+) = (\d+),?\s*/\*(.*?)\*/", body)
    return table(("status", "value", "meaning"), ((f"`{n}`", v, c.strip()) for n, v, c in rows))


def bundle_api() -> str:
    """The public header of a learning bundle with state images, for a model exported with ``--name model``."""
    import jinja2

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(ROOT / "codegen"), trim_blocks=True,
                                     lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    context = {"name": "model", "NAME": "MODEL", "version": "VERSION", "checkpoint": {"payload_bytes": 1000,
               "exported": True}, "n_features": "D", "n_classes": "C", "model_sha256": "...",
               "class_names": ['"a"', '"b"'], "feature_names": ['"temperature"', '"current"'],
               "missing_rule": "NaN refused with ES_ERR_INPUT", "learning": True, "input_type": "float",
               "task": "classification", "target": None}
    text = environment.get_template("model.h.j2").render(**context)
    return f"```c\n{text.strip()}\n```"


def format_versions() -> str:
    from edgestream import checkpoint, export, modelfile

    rows = [("model file (`.esm`)", modelfile.FORMAT_VERSION, "`edgestream.modelfile.FORMAT_VERSION`"),
            ("bundle manifest (`edgestream.json`)", export.BUNDLE_FORMAT_VERSION,
             "`edgestream.export.BUNDLE_FORMAT_VERSION`"),
            ("state image", checkpoint.IMAGE_VERSION, "`ES_IMAGE_VERSION` (csrc/es_image.h), "
             "`edgestream.checkpoint.IMAGE_VERSION`")]
    return table(("format", "version", "defined by"), rows)


# --- the Python API ------------------------------------------------------------------------------------------

def python_api() -> str:
    """An mkdocstrings directive for the package and for every public module in it."""
    package = ROOT / "edgestream"
    modules = sorted(".".join(path.relative_to(ROOT).with_suffix("").parts) for path in package.rglob("*.py")
                     if not any(part.startswith("_") for part in path.relative_to(package).with_suffix("").parts))
    parts = ["::: edgestream", "    options:", "      members: true", "      show_submodules: false", ""]
    for module in modules:
        parts += [f"::: {module}", ""]
    return "\n".join(parts)


GENERATORS = {
    "cli": cli_reference, "learners": learners_table, "parameters": learner_parameters, "state": learner_state,
    "ladder": learner_ladder, "results": benchmark_result, "boards": boards_table, "board-file": board_file,
    "c-api": c_api, "status-codes": status_codes, "bundle-api": bundle_api, "format-versions": format_versions,
    "python-api": python_api,
}

if __name__ == "__main__":
    print(generate(*sys.argv[1:]))
