"""The documentation site: its strict build, and every code block of the tutorials and learner pages run as written.

A page's blocks run in order in one working folder, ``project/``, beside which ``shared`` leads to the shared data,
so ``../shared/data/elec.csv`` means what it means in the repository. Kinds of block:

* ``sh``: run line by line (``edgestream`` commands through :func:`edgestream.cli.main` in this process, the others
  by bash with the venv first on PATH); every command must succeed;
* ``python``: run as written, all of a page's blocks in one namespace;
* a block with ``title="FILE"``: written to FILE (a source file or a configuration the next blocks use);
* ``text`` right after a run block: the output it shows, checked with doctest's rules (``...`` stands for any text,
  runs of spaces are one);
* a block right under a line ``<!-- not run: WHY -->`` and a blank line: a command that sets up a machine, serves the site or runs
  this suite (getting started shows them); left out, with the reason in the page's source.

Any other block in these pages fails the test, so every example a reader sees is one that ran.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUN_PAGES = sorted([DOCS / "getting-started.md", *DOCS.glob("tutorials/*.md"), *DOCS.glob("learners/*.md")])
FENCE = re.compile(r"^(?P<skip><!-- not run: [^\n]+ -->\n\n)?```(?P<info>[^\n]*)\n(?P<body>.*?)^```[ \t]*$",
                   re.MULTILINE | re.DOTALL)
TITLE = re.compile(r'title="([^"]+)"')
CHECKER = doctest.OutputChecker()
CHECK_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
SHELL_SYNTAX = re.compile(r"[|<>;&`$]")  # a command that needs bash

pytestmark = pytest.mark.docs


def blocks(page: Path) -> list[tuple[str, str | None, str, int]]:
    """(language, file title, body, line) of every fenced block of a page."""
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        if match.group("skip"):
            continue
        info = match.group("info").strip()
        title = TITLE.search(info)
        found.append((info.split()[0] if info else "", title.group(1) if title else None, match.group("body"),
                      text.count("\n", 0, match.start()) + 1))
    return found


def steps(page: Path) -> list[tuple[str, str | None, str, int, str | None]]:
    """The blocks of a page as steps: (language, file title, body, line, expected output or None)."""
    found = blocks(page)
    result = []
    for index, (language, title, body, line) in enumerate(found):
        if language == "text" and title is None:
            before = found[index - 1] if index else None
            if before is None or before[0] not in ("sh", "python") or before[1] is not None:
                raise AssertionError(f"{page.name}:{line}: a text block shows the output of the sh or python block "
                                     "right before it")
            continue
        expected = None
        if index + 1 < len(found) and found[index + 1][0] == "text" and found[index + 1][1] is None:
            expected = found[index + 1][2]
        if title is None and language not in ("sh", "python"):
            raise AssertionError(f"{page.name}:{line}: a {language or 'plain'} block that does not run; give it "
                                 'title="FILE" (written to FILE) or make it sh or python')
        result.append((language, title, body, line, expected))
    return result


@pytest.fixture
def workplace(tmp_path, shared_data) -> Path:
    """A folder with ``shared`` leading to the shared data, as the repository's parent has it."""
    (tmp_path / "shared").symlink_to(shared_data.parent, target_is_directory=True)
    return tmp_path


def check_output(page: Path, line: int, expected: str | None, output: str) -> None:
    if expected is not None and not CHECKER.check_output(expected, output, CHECK_FLAGS):
        raise AssertionError(f"{page.name}:{line}: the output differs from the page's\n--- page:\n{expected}"
                             f"--- run:\n{output}")


def run_shell(page: Path, line: int, body: str, folder: Path) -> str:
    """Run a shell block command by command: an ``edgestream`` command in this process (as the installed script
    calls :func:`edgestream.cli.main`, without a new interpreter's start-up per command), any other, or one that
    uses the shell's redirections or pipes, by bash."""
    output = []
    for command in commands(body):
        words = shlex.split(command, comments=True)
        if words[:1] == ["edgestream"] and not SHELL_SYNTAX.search(command):
            output.append(run_cli(page, line, command, words[1:]))
        else:
            output.append(run_bash(page, line, command, folder))
    return "".join(output)


def commands(body: str) -> list[str]:
    """The commands of a shell block: its lines, continued lines joined, blank and comment lines left out."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [text for text in joined.splitlines() if text.strip() and not text.lstrip().startswith("#")]


def run_cli(page: Path, line: int, command: str, argv: list[str]) -> str:
    from edgestream.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    if status != 0:
        raise AssertionError(f"{page.name}:{line}: `{command}` exited with {status}\n{out.getvalue()}{err.getvalue()}")
    return out.getvalue()


def run_bash(page: Path, line: int, command: str, folder: Path) -> str:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "MPLBACKEND": "Agg"}
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{page.name}:{line}: `{command}` exited with {done.returncode}\n{done.stdout}"
                             f"{done.stderr}")
    return done.stdout


def run_python(page: Path, line: int, body: str, namespace: dict) -> str:
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(body, f"{page.name}:{line}", "exec"), namespace)
    return output.getvalue()


@pytest.mark.parametrize("page", RUN_PAGES, ids=lambda page: str(page.relative_to(DOCS)))
def test_every_example_of_the_page_runs(page, workplace, monkeypatch):
    folder = workplace / page.stem
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__docs__"}
    for language, title, body, line, expected in steps(page):
        if title is not None:
            (folder / title).parent.mkdir(parents=True, exist_ok=True)
            (folder / title).write_text(body)
        elif language == "sh":
            check_output(page, line, expected, run_shell(page, line, body, folder))
        else:
            check_output(page, line, expected, run_python(page, line, body, namespace))


def test_the_readme_examples_run(tmp_path, monkeypatch):
    """The ten-line example of the README (its Python block) and its command-line lines run as written and print
    what it shows."""
    monkeypatch.chdir(tmp_path)
    readme = ROOT / "README.md"
    examples = steps(readme)
    assert [language for language, *_ in examples] == ["python", "sh"]
    for language, title, body, line, expected in examples:
        output = run_python(readme, line, body, {"__name__": "__docs__"}) if language == "python" else \
            run_shell(readme, line, body, tmp_path)
        check_output(readme, line, expected, output)


def test_the_pages_that_run_have_examples():
    """Each tutorial and learner page shows at least one example, and the conventions are read as meant."""
    assert len(RUN_PAGES) >= 12  # three tutorials, the learners' index and eight learners
    for page in (page for page in RUN_PAGES if page.name != "index.md"):
        assert any(language in ("sh", "python") for language, *_ in steps(page)), page


ELIDED_FIGURE = re.compile(r"\.\.\. (?:state )?bytes|\.\.\. (?:instructions|µJ|samples/s at)|"
                           r"\b(?:text|data|bss|flash|peak|code|state|mean|worst|stack|main|learn|predict) \.\.\.")


def test_the_pages_show_the_figures_of_the_device():
    """The bytes, instructions and cycles a firmware engineer reads are shown, not elided with ``...`` (they are
    deterministic: the same data, toolchain and emulators give the same figures)."""
    for page in RUN_PAGES:
        for language, title, body, line, expected in steps(page):
            for text in () if expected is None else expected.splitlines():
                assert ELIDED_FIGURE.search(text) is None, f"{page.name}:{line}: a figure elided: {text}"


def test_a_changed_output_fails(tmp_path):
    """The output check can fail: a page whose shown output is not what its command prints."""
    page = tmp_path / "page.md"
    page.write_text("```sh\necho 41\n```\n\n```text\n42\n```\n")
    (language, title, body, line, expected), = steps(page)
    with pytest.raises(AssertionError, match="differs"):
        check_output(page, line, expected, run_shell(page, line, body, tmp_path))
    check_output(page, line, "4...\n", run_shell(page, line, body, tmp_path))


def test_a_block_marked_not_run_is_left_out(tmp_path):
    """Only the block right under the marker is left out: the next one runs."""
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: sets up a machine -->\n\n```sh\nexit 1\n```\n\n```sh\necho 42\n```\n")
    (language, title, body, line, expected), = steps(page)
    assert (body, line) == ("echo 42\n", 7)


def test_a_block_that_cannot_run_is_refused(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```c\nint x;\n```\n")
    with pytest.raises(AssertionError, match="does not run"):
        steps(page)


def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: a warning (a broken link, a docstring mkdocstrings cannot read, a page out of
    the navigation) fails."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    for page in (tmp_path / "site").rglob("index.html"):  # a Markdown list that rendered as text
        literal = re.search(r"^\* <strong>[^<]*</strong>", page.read_text(), re.MULTILINE)
        assert literal is None, f"{page.relative_to(tmp_path / 'site')}: a list item shown as text: {literal[0]}"


def docs_hooks():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import docs_hooks
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return docs_hooks


def test_the_cli_reference_has_every_command_and_option():
    import argparse

    from edgestream.cli import build_parser

    page = docs_hooks().cli_reference()
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in commands.choices.items():
        assert f"## edgestream {name}\n" in page
        for action in parser._actions:
            for flag in [] if isinstance(action, argparse._HelpAction) else action.option_strings:
                assert f"`{flag}" in page, (name, flag)


def test_the_c_reference_has_every_runtime_function():
    page = docs_hooks().c_api()
    declared = set()
    for header in (ROOT / "csrc").glob("es_*.h"):
        if not header.name.endswith("_state.h"):
            declared |= set(re.findall(r"^[a-z_][\w ]*\**\s*(es_\w+)\(", header.read_text(), re.MULTILINE))
    assert len(declared) > 20
    assert {name for name in declared if f"{name}(" not in page} == set()


def test_the_python_reference_has_every_public_module():
    page = docs_hooks().python_api()
    for path in (ROOT / "edgestream").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if not any(part.startswith("_") for part in parts[1:]):
            assert f"::: {'.'.join(parts)}\n" in page, path


def test_every_learner_has_a_page_in_the_navigation():
    from edgestream import learners

    nav = (ROOT / "mkdocs.yml").read_text()
    for name in learners.REGISTRY:
        page = DOCS / "learners" / f"{name}.md"
        assert page.is_file(), f"no page for the learner {name!r}: write {page.relative_to(ROOT)}"
        assert f"learners/{name}.md" in nav
        assert f"<!-- generated: parameters {name} -->" in page.read_text()


def test_the_memory_report_renders_in_a_browser(tmp_path, monkeypatch):
    """The HTML memory report, opened in headless Chromium (scripts/setup.sh installs it): the page parses, every
    section a firmware engineer signs off is in the rendered DOM, and its screenshot is a drawn page, not a blank
    one."""
    from matplotlib.image import imread

    from edgestream.cli import main

    monkeypatch.setenv("MPLBACKEND", "Agg")
    report = tmp_path / "report.html"
    argv = ["budget", "--learner", "shrubs", "--board", "stm32f411", "--ram", "8KiB", "--features", "6",
            "--classes", "2"]
    assert main([*argv, "--html", str(report)]) == 0
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert main([*argv, "--json"]) == 0
    figures = json.loads(printed.getvalue())
    ram = f"RAM at peak {figures['ram_at_peak_bytes']:,} = model state {figures['model_state_bytes']:,}"
    browser = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1100,2400"]
    shot = tmp_path / "report.png"
    done = subprocess.run([*browser, f"--screenshot={shot}", report.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and shot.is_file(), done.stderr
    pixels = imread(shot)
    assert pixels.shape[:2] == (2400, 1100) and len(np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)) > 100
    dom = subprocess.run([*browser, "--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr
    for section in ("<h1>shrubs on stm32f411</h1>", ram, "<h2>Checkpoint slots</h2>",
                    "<h2>Static RAM by section</h2>", "3 flash wait states at 100 MHz", "<th>toolchain</th>"):
        assert section in dom.stdout, section
