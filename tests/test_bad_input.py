"""Every row of the bad-input table (tests/bad_inputs.py) through the real CLI: the exit status, one clear error
line with the expected fragment, no traceback; a few through a subprocess; the docs page is the table's."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

import bad_inputs
from edgestream import cli

CASES = bad_inputs.CASES + bad_inputs.ACCEPTED


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return bad_inputs.prepare(tmp_path_factory.mktemp("bad-input"))


def run_cli(argv, capsys) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def error_line(err: str) -> str:
    """The ``edgestream...: error: ...`` line (argparse prints the usage above it; a budget nothing fits its
    smallest configuration's table below it)."""
    lines = [line for line in err.splitlines() if line.startswith("edgestream") and ": error: " in line]
    assert len(lines) == 1, err
    return lines[0]


def test_the_table_covers_every_command_and_has_no_duplicates():
    commands = {case.command.split()[0] for case in bad_inputs.CASES if case.command and
                not case.command.startswith("-")}
    parser_commands = set(cli.build_parser()._subparsers._group_actions[0].choices)
    assert parser_commands <= commands, parser_commands - commands
    assert len(bad_inputs.CASES) >= 100
    assert len({case.command for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.command or "(nothing)" for case in CASES])
def test_bad_input(case, folder, capsys, monkeypatch):
    monkeypatch.chdir(folder)
    for name, value in case.env:
        monkeypatch.setenv(name, value)
    code, out, err = run_cli(shlex.split(case.command), capsys)
    assert "Traceback" not in err and "Traceback" not in out
    if case.code == 0:
        assert code == 0 and case.fragment in out, (out, err)
        return
    line = error_line(err)
    assert code == case.code and case.fragment in line, line


@pytest.mark.parametrize("call, fragment", bad_inputs.API, ids=[call for call, _ in bad_inputs.API])
def test_bad_input_to_the_python_api(call, fragment, folder, monkeypatch):
    monkeypatch.chdir(folder)
    names: dict = {}
    exec(bad_inputs.API_NAMES, names)
    with pytest.raises(ValueError) as error:
        eval(call, names)
    assert fragment in str(error.value)


def test_through_the_console_script_without_traceback(folder):
    """Two rows as a user runs them (in parallel: each process imports scikit-learn): one line on stderr, the exit
    status, no traceback."""
    script = os.path.join(os.path.dirname(sys.executable), "edgestream")
    commands = ("simulate b_keyword_name good.csv --label label",
                "budget --learner tree --board stm32f411 --features 300 --classes 2")
    running = [(next(case for case in bad_inputs.CASES if case.command == command),
                subprocess.Popen([script, *shlex.split(command)], cwd=folder, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)) for command in commands]
    for case, process in running:
        out, err = process.communicate(timeout=120)
        assert process.returncode == case.code and "Traceback" not in err, err
        assert case.fragment in error_line(err) and out == ""


def test_an_unexpected_error_is_one_line_and_the_traceback_comes_with_debug(folder, capsys, monkeypatch):
    """The last-resort guard: an exception no input check expected (here a planted bug) prints one line naming
    it and exits 1; --debug and EDGESTREAM_DEBUG=1 add the traceback."""
    monkeypatch.chdir(folder)

    def planted(args):
        raise KeyError("planted")

    monkeypatch.setattr(cli, "run_boards", planted)
    code, _, err = run_cli(["boards"], capsys)
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("edgestream: error: unexpected KeyError: 'planted' (an edgestream bug; run with --debug")
    code, _, err = run_cli(["--debug", "boards"], capsys)
    assert code == 1 and "Traceback (most recent call last)" in err and err.splitlines()[-1].startswith("edgestream")
    monkeypatch.setenv("EDGESTREAM_DEBUG", "1")
    code, _, err = run_cli(["boards"], capsys)
    assert code == 1 and "Traceback (most recent call last)" in err


def test_the_docs_page_is_the_table():
    """docs/bad-input.md is what tests/bad_inputs.py writes (python tests/bad_inputs.py regenerates it)."""
    assert bad_inputs.DOC.read_text() == bad_inputs.markdown()
