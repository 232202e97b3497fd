"""The command line's conventions: `--version`, one name per flag across commands, `-o` always the output
format and `-n` always a namespace, and a description of its own in each command's --help."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from relay.cli import build_parser, main
from relay.commands.conventions import command_parsers as commands

REPO = Path(__file__).resolve().parents[2]


def visible_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [action for action in parser._actions if action.option_strings and action.help is not argparse.SUPPRESS]


def test_version_is_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0
    assert capsys.readouterr().out == f"failover-relay {declared}\n"


def test_a_setting_has_one_flag_name_in_every_command() -> None:
    names: dict[str, set[tuple[str, ...]]] = {}
    for parser in commands(build_parser()).values():
        for action in visible_options(parser):
            if action.dest.startswith("setting:"):
                names.setdefault(action.dest, set()).add(tuple(action.option_strings))
    assert names and {dest: spellings for dest, spellings in names.items() if len(spellings) > 1} == {}


def test_o_is_always_the_output_format_and_n_always_a_namespace() -> None:
    for words, parser in commands(build_parser()).items():
        for action in visible_options(parser):
            if "-o" in action.option_strings:
                assert action.choices and "json" in action.choices, f"{words}: -o is not the output format"
            if "-n" in action.option_strings:
                assert action.dest == "namespace", f"{words}: -n is not a namespace"
            if "--namespace" in action.option_strings:
                assert "-n" in action.option_strings or words == "serve", f"{words}: --namespace without -n"


def test_each_command_describes_itself() -> None:
    for words, parser in commands(build_parser()).items():
        if words == "manifests" or not any(visible_options(parser)):
            continue
        assert parser.description, f"failover-relay {words} --help has no description"


@pytest.mark.parametrize("words", ["inject", "status"])
def test_the_read_only_commands_do_not_describe_their_flags_as_the_servers(words: str) -> None:
    text = commands(build_parser())[words].format_help()
    for served in ("reconcile loop", "enables savepoint injection", "in-cluster config", "admit unchanged"):
        assert served not in " ".join(text.split()), f"{words} --help: {served!r} is what serve does"


@pytest.mark.parametrize(
    ("argv", "usage", "error", "suggested"),
    [
        (["servee"], "usage: failover-relay [-h]", "invalid choice: 'servee' (choose from ", "serve"),
        (["serve", "--prot", "1"], "usage: failover-relay serve ", "unrecognized arguments: --prot 1", "--port"),
        (
            ["check", "--rules-onlyy", "x.yaml"],
            "usage: failover-relay check ",
            "arguments: --rules-onlyy",
            "--rules-only",
        ),
    ],
)
def test_a_mistyped_command_or_flag_gets_its_command_s_usage_and_a_suggestion(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, error: str, suggested: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage) and error in err
    assert err.rstrip().endswith(f"(did you mean {suggested}?)")


def test_no_suggestion_when_nothing_is_close(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--xyz"])
    assert capsys.readouterr().err.rstrip().endswith("unrecognized arguments: --xyz")


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    """`failover-relay check ... | head -1`: no BrokenPipeError traceback, Python's own exit code for EPIPE."""
    manifest = tmp_path / "many.yaml"
    manifest.write_text("---\n".join([(REPO / "docs" / "examples" / "policies.yaml").read_text()] * 200))
    process = subprocess.Popen(
        [sys.executable, "-m", "relay.cli", "check", str(manifest)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()  # as `head -1` does once it has its line
    error = process.stderr.read().decode()
    assert process.wait(timeout=60) == 1
    assert "Traceback" not in error and "BrokenPipeError" not in error, error
