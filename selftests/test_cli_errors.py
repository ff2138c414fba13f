"""The helpers' errors as a user meets them: one line per problem naming what and where, with the fix, exit 2, and a
traceback only with the hidden --debug. The cluster file is read before the gate is asked; an unreachable node (a
closed port on a loopback address: nothing answers, as for a node that is off) stops deploy before anything starts, and
`down` still takes down every node it reaches. Diffs keep their lines whole when the output is not a terminal."""

import argparse
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from gb10check import cli
from gb10check.deploy import converge

from .local_sshd import refusing_pair

REPO = Path(__file__).resolve().parent.parent


def gb10check(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real command line, as a user runs it (not a terminal)."""
    return subprocess.run([sys.executable, "-m", "gb10check", *argv], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def cluster_file(tmp_path: Path, head: dict | None = None, **change) -> Path:
    """The example pair, its nodes at loopback addresses where nothing listens on the SSH port."""
    data = refusing_pair(tmp_path, command_timeout_s=5)
    data["nodes"][0].update(head or {})
    data["deploy"]["workdir"] = str(tmp_path / "nothing-here")
    for key, value in change.items():
        data[key] = value
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def unreachable_line(said: str, prefix: str, node: str, address: str, port: int) -> bool:
    """`PREFIX node NODE unreachable at ADDRESS: Connection refused; fix: ...`, the fix of a refused port (remote.py's
    kind) naming the node, the address and the port."""
    head, _, fix = said.partition("; fix: ")
    return (head == f"{prefix}node {node} unreachable at {address}: Connection refused" and "\n" not in said
            and fix.startswith(f"{address} answers but nothing accepts SSH on port {port}: on {node} start sshd"))


# ---- --debug -----------------------------------------------------------------------------------------------------

def subcommands(parser: argparse.ArgumentParser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from subcommands(sub, (*path, name))


def test_every_subcommand_has_a_hidden_debug_option():
    parser = cli.build_parser()
    cli.debug_options(parser)
    leaves = [(path, sub) for path, sub in subcommands(parser) if not any(
        isinstance(a, argparse._SubParsersAction) for a in sub._actions)]
    assert len(leaves) > 15
    passing = [path for path, sub in leaves if any(a.nargs == argparse.REMAINDER for a in sub._actions)]
    assert passing == [("check",)]  # `check STAGE PYTEST-OPTIONS...`: --debug is pytest's there
    for path, sub in leaves:
        if path in passing:
            assert "--debug" not in sub._option_string_actions, path
        else:
            assert "--debug" in sub._option_string_actions and "--debug" not in sub.format_help(), path
    assert parser.parse_args(["down", "--debug"]).debug and not parser.parse_args(["down"]).debug


def test_a_subcommand_handing_its_arguments_to_pytest_keeps_debug_for_pytest():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    passing = sub.add_parser("check")
    passing.add_argument("stage")
    passing.add_argument("pytest_args", nargs=argparse.REMAINDER)
    sub.add_parser("down")
    known = sub.add_parser("check-known")  # the rest read with parse_known_args, marked as passed on
    known.set_defaults(passthrough=True)
    cli.debug_options(parser)
    assert "--debug" not in passing._option_string_actions and "--debug" in sub.choices["down"]._option_string_actions
    assert "--debug" not in known._option_string_actions
    assert parser.parse_known_args(["check-known", "--debug"])[1] == ["--debug"]
    assert parser.parse_args(["check", "preflight", "--debug", "-x"]).pytest_args == ["--debug", "-x"]


def test_an_internal_error_is_one_line_unless_debug(monkeypatch, capsys):
    def broken(args):
        raise KeyError("x")

    args = argparse.Namespace(command="sync", func=broken, debug=False)
    assert cli.run(args) == 2
    err = capsys.readouterr().err
    assert err == ("gb10check sync: internal error: KeyError: 'x' (a bug of gb10check: run the command again with --debug "
                   "for the traceback and report it)\n")
    with pytest.raises(KeyError):
        cli.run(argparse.Namespace(command="sync", func=broken, debug=True))


# ---- the cluster file comes first -------------------------------------------------------------------------------

@pytest.mark.parametrize("step", ["deploy", "sync", "compose-render", "netplan", "down"])
def test_a_cluster_file_typo_is_one_line_exit_2_before_the_gate(tmp_path, step):
    path = cluster_file(tmp_path)
    path.write_text(path.read_text().replace("  address: 127.0.0.2", "  adress: 127.0.0.2"))
    run = gb10check(step, f"--cluster={path}", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (2, ""), run.stderr
    assert run.stderr == (f"gb10check {step}: invalid cluster file: {path}: nodes[0](thinkstationpgx-30).adress: unknown field; "
                          "did you mean address? (address is required and missing)\n")


def test_a_missing_cluster_file_says_how_to_name_one(tmp_path):
    run = gb10check("down", cwd=tmp_path)
    assert (run.returncode, run.stderr) == (2, "gb10check down: no cluster file at cluster.yaml: give --cluster PATH, or set "
                                               "GB10CHECK_CLUSTER to it\n")


# ---- an unreachable node ------------------------------------------------------------------------------------------

def test_deploy_against_unreachable_nodes_is_a_line_per_node_with_the_fix(tmp_path):
    path = cluster_file(tmp_path)
    port = yaml.safe_load(path.read_text())["ssh"]["port"]
    run = gb10check("deploy", f"--cluster={path}", "--override", "self-test", cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == "", run.stderr
    lines = run.stderr.splitlines()
    assert lines[0].startswith("gate: OVERRIDDEN (self-test)")  # the gate first
    assert len(lines) == 3, run.stderr
    for said, (name, address) in zip(lines[1:], (("thinkstationpgx-30", "127.0.0.2"), ("thinkstationpgx-32", "127.0.0.3"))):
        assert unreachable_line(said, "gb10check deploy: ", name, address, port), said
    assert not list(tmp_path.glob("*deployment*"))  # nothing started, no record of a deployment
    debug = gb10check("deploy", f"--cluster={path}", "--override", "self-test", "--debug", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr


def test_down_takes_down_what_it_reaches_and_names_the_node_it_cannot(tmp_path):
    # Rank 0 is this machine (`connection: local`; its workdir does not exist, so its down fails, said), rank 1 is off.
    path = cluster_file(tmp_path, head={"connection": "local", "address": "127.0.0.1"})
    port = yaml.safe_load(path.read_text())["ssh"]["port"]
    run = gb10check("down", f"--cluster={path}", cwd=tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stdout + run.stderr, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 2 and lines[1].startswith("thinkstationpgx-30: down failed"), run.stdout  # tried, followers first
    assert unreachable_line(lines[0], "thinkstationpgx-32: not taken down: ", "thinkstationpgx-32", "127.0.0.3", port), lines[0]
    assert run.stderr == ""  # never the gate


def test_downs_help_says_it_never_asks_the_gate():
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    said = next(c.help for c in sub._choices_actions if c.dest == "down")
    assert "never asks the gate: stopping is always allowed" in said


# ---- diffs off a terminal ------------------------------------------------------------------------------------------

def test_a_diff_is_never_folded_off_a_terminal():
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False)
    long = "x" * 150
    assert converge.show_change(console, "n1:/etc/netplan/40-cx7.yaml", f"a\n{long}\n", f"a\n{long}y\n", check_only=True)
    lines = out.getvalue().splitlines()
    assert f"-{long}" in lines and f"+{long}y" in lines, lines
    assert all(l[:1] in "-+@ " or l.startswith("would change") for l in lines), lines
    assert converge.console().soft_wrap

