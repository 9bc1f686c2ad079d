"""`sync`, `status` and `diff` parsed by hand (direct.py) must mean exactly what typer reads:
the same options, the same call for every spelling, and every other command line (help, errors,
completion) left to typer, with the same output and exit status."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import typer.main

from projector import direct
from projector.cli import app

TYPER_COMMANDS = typer.main.get_command(app).commands


def _typer_call(monkeypatch, argv: list[str]) -> tuple | None:
    """What typer passes the command's ``run`` for ``argv`` (None: it did not call it)."""
    import importlib

    from typer.testing import CliRunner

    calls: list[tuple] = []
    module = importlib.import_module(direct.COMMANDS[argv[0]].module)
    monkeypatch.setattr(module, "run", lambda *values: calls.append(values) or 0)
    result = CliRunner().invoke(app, argv)
    return calls[0] if calls and result.exit_code == 0 else None


@pytest.mark.parametrize("name", sorted(direct.COMMANDS))
def test_the_hand_parser_knows_exactly_the_options_of_the_typer_command(name):
    params = [p for p in TYPER_COMMANDS[name].params if p.name != "help"]
    assert [p.name for p in params] == [o.dest for o in direct.COMMANDS[name].options], "the order run() takes them in"
    for param, option in zip(params, direct.COMMANDS[name].options):
        assert tuple(param.opts + param.secondary_opts) == option.names
        assert param.multiple == (option.kind == direct.TEXTS)
        assert param.is_flag == (option.kind in (direct.FLAG, direct.SWITCH))
        assert bool(param.secondary_opts) == (option.kind == direct.SWITCH)
        assert param.default == option.default


def _spellings(option: direct.Option) -> list[list[str]]:
    """Every way typer takes this option, with a value it reads like the hand parser."""
    value = {direct.TEXT: "some/file.yaml", direct.TEXTS: "codex", direct.NUMBER: "2.5"}.get(option.kind)
    if value is None:
        return [[name] for name in option.names] + [[name, name] for name in option.names]
    found = []
    for name in option.names:
        found += [[name, value], [f"{name}={value}"] if name.startswith("--") else [f"{name}{value}"]]
    if option.kind == direct.TEXTS:
        found.append([option.names[0], "codex", option.names[0], "kiro"])
    if option.kind == direct.NUMBER:
        found += [[option.names[0], "3"], [option.names[0], ".5"], [option.names[0], "7."]]
    return found


CASES = [(name, words) for name, command in sorted(direct.COMMANDS.items()) for option in command.options for words in _spellings(option)]


@pytest.mark.parametrize(("name", "words"), CASES, ids=[" ".join([n, *w]) for n, w in CASES])
def test_every_spelling_of_every_option_makes_the_same_call(monkeypatch, name, words):
    call = direct.parse([name, *words], {})
    assert call is not None, "a plain spelling runs without typer"
    assert call.values == _typer_call(monkeypatch, [name, *words])


def test_options_together_make_the_same_call(monkeypatch):
    argv = ["sync", "-q", "--client", "codex", "--force", "--wait=0.25", "-cmodel.yaml", "--hook", "--client=kiro"]
    assert direct.parse(argv, {}).values == _typer_call(monkeypatch, argv) == ("model.yaml", ["codex", "kiro"], True, True, 0.25, True, False, False)
    assert direct.parse(["diff", "--color", "--no-color"], {}).values == _typer_call(monkeypatch, ["diff", "--color", "--no-color"])


@pytest.mark.parametrize(
    "argv",
    [
        ["sync", "--help"],
        ["status", "-h"],
        ["sync", "--bogus"],
        ["sync", "extra"],
        ["sync", "--"],
        ["sync", "-qc", "model.yaml"],  # grouped short options
        ["sync", "--quiet=yes"],
        ["sync", "--config"],
        ["sync", "--config", "--force"],  # typer reads "--force" as the file
        ["sync", "--config", "a", "--config", "b"],
        ["sync", "--wait", "1_0"],
        ["sync", "--wait", "nan"],
        ["sync", "--wait", "soon"],
        ["sync", "--client", "nosuchclient"],
        ["status", "--client="],
        ["diff", "--color=yes"],
    ],
)
def test_what_the_hand_parser_is_not_sure_of_goes_to_typer(argv):
    assert direct.parse(argv, {}) is None


def test_shell_completion_goes_to_typer():
    assert direct.parse(["sync"], {"_PROJECTOR_COMPLETE": "bash_complete"}) is None
    assert direct.parse(["sync"], {"PATH": "/bin"}) is not None


# --------------------------------------------------------------------------- the whole program

TYPER_ONLY = (
    "import runpy, projector.direct as d; d.parse = lambda argv, environ: None; "
    "runpy.run_module('projector', run_name='__main__', alter_sys=True)"
)


def _both(sandbox, *args: str) -> list[subprocess.CompletedProcess]:
    """``python -m projector ARGS`` as installed, and the same with every line left to typer,
    each in an empty HOME."""
    results = []
    for command in ([sys.executable, "-m", "projector"], [sys.executable, "-c", TYPER_ONLY]):
        shutil.rmtree(sandbox.home)
        sandbox.home.mkdir()
        results.append(subprocess.run([*command, *args], env=dict(sandbox.env, COLUMNS="100"), capture_output=True, text=True,
                                      cwd=sandbox.root, timeout=60))
    return results


MODEL = "version: 1\nclients: [claude-code, codex]\nproviders:\n  docs:\n    url: https://kb.example.com/mcp\n    token_env: T\n"


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["sync", "--help"],
        ["status", "--help"],
        ["diff", "--help"],
        ["sync", "--wait", "soon"],
        ["sync", "--bogus"],
        ["status", "extra"],
        ["sync", "--client", "nosuchclient", "--config", "MODEL"],
        ["diff", "--client", "nosuchclient", "--config", "MODEL"],
        ["sync", "--config", "MODEL"],
        ["status", "--config", "MODEL", "--json"],
        ["diff", "--config", "MODEL", "--no-color"],
        ["sync", "--config", "missing.yaml"],
    ],
)
def test_output_and_exit_status_are_typer_s(sandbox, args):
    model = sandbox.model(MODEL)
    args = [str(model) if a == "MODEL" else a for a in args]
    ours, typers = _both(sandbox, *args)
    assert (ours.returncode, ours.stdout, ours.stderr) == (typers.returncode, typers.stdout, typers.stderr)


def test_an_interrupted_sync_exits_130_quietly_as_under_typer(sandbox):
    import fcntl

    model = sandbox.model(MODEL)
    lock = sandbox.home / ".local" / "state" / "projector" / "sync.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the sync waits for it
        results = []
        for command in ([sys.executable, "-m", "projector"], [sys.executable, "-c", TYPER_ONLY]):
            process = subprocess.Popen([*command, "sync", "--wait", "60", "--config", str(model)], env=sandbox.env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            _wait_until_it_opens(process.pid, lock)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)
            results.append((process.returncode, out, err))
    assert results[0] == results[1] == (130, "", "")


def _wait_until_it_opens(pid: int, path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd")):
                time.sleep(0.2)  # from its open to its wait
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("the sync never opened its lock")


def test_a_reader_that_goes_away_ends_the_command_as_under_typer(sandbox):
    """``projector diff | head -1`` with a diff larger than the pipe holds."""
    bindings = "".join(f"  ~/work/w{n}:\n    docs: [a]\n" for n in range(10))
    providers = "".join(f"  p{n}:\n    url: https://kb{n}.example.com/mcp/{'x' * 200}\n    token_env: T\n" for n in range(400))
    model = sandbox.model(f"version: 1\nclients: [claude-code, codex]\nproviders:\n{providers}bindings:\n{bindings}".replace("docs:", "p0:"))
    results = []
    for command in ([sys.executable, "-m", "projector"], [sys.executable, "-c", TYPER_ONLY]):
        read, write = os.pipe()
        os.close(read)  # nobody reads
        done = subprocess.run([*command, "diff", "--config", str(model)], env=sandbox.env, stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
        os.close(write)
        results.append((done.returncode, done.stderr))
    assert results[0] == results[1]
    assert results[0][0] == 1


# --------------------------------------------------------------------------- what each command loads


def _imported(sandbox, *args: str) -> set[str]:
    """The top-level packages ``python -m projector ARGS`` imports."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "projector", *args], env=sandbox.env, cwd=sandbox.root,
                          capture_output=True, text=True, timeout=60)
    return {line.split("|")[2].strip().split(".")[0] for line in done.stderr.splitlines() if line.startswith("import time:") and "|" in line}


HEAVY = {"typer", "pydantic", "rich", "jinja2", "jsonschema", "ruamel", "tomlkit", "filelock"}


def test_a_sync_loads_only_what_its_work_needs(sandbox):
    """The hook's syncs: after a model edit the model's YAML parser and validator (and the
    documents' parsers), nothing for the command line, the templates or the descriptors; with
    nothing to do, nothing but the fast path; status reads without any of them."""
    sandbox.install_projector()
    config = sandbox.model(MODEL)
    assert sandbox.run("sync", "--config", str(config)).returncode == 0  # descriptors compiled, model checked
    config.write_text(MODEL.replace("token_env: T", "token_env: U"))  # every entry changes
    edited = _imported(sandbox, "sync", "--config", str(config))
    assert edited & HEAVY == {"ruamel"} and "tomllib" in edited  # core.quickschema says yes to a valid model
    # records are not dataclasses (which load inspect); tree_sitter_toml's queries load tempfile
    assert edited & {"dataclasses", "inspect", "tempfile", "random"} == set()
    assert _imported(sandbox, "sync", "--config", str(config)) & (HEAVY | {"tree_sitter", "dataclasses", "json"}) == set()
    assert _imported(sandbox, "status", "--config", str(config)) & (HEAVY | {"tree_sitter_toml", "hashlib", "tempfile", "inspect"}) == set()
