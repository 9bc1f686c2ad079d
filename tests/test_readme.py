"""The README's commands, run as written, in a sandbox HOME with real client files: set-up,
everyday use, the shell hook and completion lines in their shells, and the uninstall. The model
is the README's own, written through `projector edit`; the project file is the README's too.
(`pipx install .` and `uv tool install .` build a wheel from the network: not run here.)"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from paths import TESTS

README = (TESTS.parent / "README.md").read_text(encoding="utf-8")
CLAUDE = '{\n  "numStartups": 4,\n  "mcpServers": {\n    "mine": {"type": "stdio", "command": "my-server"}\n  }\n}\n'


def blocks(heading: str, language: str = "sh") -> list[str]:
    """The ```language blocks under ``heading`` (up to the next heading of any level)."""
    section = README.split(f"\n{heading}\n", 1)[1]
    section = re.split(r"\n#{2,3} ", section, maxsplit=1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


def commands(heading: str) -> list[str]:
    """Each command line of the section's sh blocks, without its trailing comment."""
    lines = [line for block in blocks(heading) for line in block.splitlines()]
    return [re.split(r"\s{2,}#", line)[0].strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_documented_commands_work_as_written(sandbox):
    sandbox.install_projector()
    model_text = blocks("## The model", "yaml")[0]
    project_text = blocks("### Project files: `.projector.yaml`, trusted", "yaml")[0]
    editor = sandbox.bin / "readme-editor"
    (sandbox.root / "readme-model.yaml").write_text(model_text)
    editor.write_text(f'#!/bin/sh\ncat {sandbox.root}/readme-model.yaml > "$1"\n')
    editor.chmod(0o755)
    sandbox.env.update(EDITOR=str(editor), PAGER="cat", DOCS_TOKEN="t", GITHUB_TOKEN="t")
    for folder in ("work/project-a/vendor", "work/project-b", ".codex", ".config/opencode"):
        (sandbox.home / folder).mkdir(parents=True)
    sandbox.file("work/project-a/.projector.yaml", project_text)
    claude = sandbox.file(".claude.json", CLAUDE)

    def run(line: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["bash", "--norc", "-c", line], env=sandbox.env, capture_output=True, text=True, timeout=120, cwd=sandbox.root)
        assert done.returncode in (0, 1), f"{line}: exit {done.returncode}\n{done.stderr}"
        assert "Traceback" not in done.stderr and "error:" not in done.stderr, f"{line}\n{done.stderr}"
        return done

    install = commands("## Install")
    assert install[:2] == ["pipx install .", "projector --version"]
    assert run("projector --version").stdout.startswith("projector ")
    setup = commands("## Set up")
    assert setup == ["projector init", "projector edit", "projector diff", "projector sync"]
    for line in setup:
        run(line)
    assert (sandbox.home / ".config" / "projector" / "projector.yaml").read_text() == model_text
    assert "mine" in claude.read_text() and '"docs"' in claude.read_text()

    everyday = commands("## Everyday use")
    assert len(everyday) >= 10
    for line in everyday:
        run(line)
    assert run("projector status").returncode == 0, "every documented step leaves the clients in sync"

    for line in commands("### Shell hook and completion"):
        shell = re.search(r"(bash|zsh|fish)", line).group(1)
        if shutil.which(shell) is None:
            pytest.skip(f"{shell} is not installed (.ci/run installs it)")
        prefix = "autoload -Uz compinit && compinit -u; " if shell == "zsh" and "completion" in line else ""
        argv = {"bash": ["bash", "--norc", "-c"], "zsh": ["zsh", "-f", "-c"], "fish": ["fish", "--no-config", "-c"]}[shell]
        done = subprocess.run([*argv, prefix + line], env=sandbox.env, capture_output=True, text=True, timeout=120, cwd=sandbox.root)
        assert (done.returncode, done.stderr) == (0, ""), f"{line}: {done.stderr}"

    assert commands("### Uninstall") == ["projector remove"]
    run("projector remove")
    assert claude.read_text() == CLAUDE, "the user's file is as it was before projector"
    assert not (sandbox.home / ".codex" / "config.toml").exists() and not (sandbox.home / ".config" / "opencode" / "opencode.json").exists()


def test_the_team_example_is_one_model_in_two_layers(tmp_path):
    """The "For teams" layers as written: the team's file included by a relative path, its
    repository binding bound at a clone under the person's root, their changes merged over it,
    its local server and hook waiting for trust."""
    from projector.core import model

    team_text, personal_text = blocks("## For teams: one model in layers", "yaml")
    home = tmp_path / "home"
    (home / ".config" / "projector" / "team").mkdir(parents=True)
    (home / ".config" / "projector" / "team" / "projector.yaml").write_text(team_text)
    (home / ".config" / "projector" / "projector.yaml").write_text(personal_text)
    clone = home / "src" / "acme-api"
    (clone / ".git").mkdir(parents=True)
    (clone / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/api.git\n')
    environ = {"HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state")}
    loaded = model.load(home / ".config" / "projector" / "projector.yaml", environ, ("claude-code", "codex"))
    assert loaded.provider("docs") is None and "the providers it sends a token to are left out (docs: $DOCS_TOKEN" in loaded.left_out("docs")
    assert loaded.provider("mine") is not None
    bound = {b.path: b for b in loaded.bindings}
    assert bound[str(clone)].settings("docs").kbs == ("api", "runbooks") and bound[str(clone)].settings("lint").enabled
    assert "acme-api (under root ~/src) says it is a clone of github.com/acme/api" in bound[str(clone)].distrust
    team = loaded.layers[0]
    assert (team.local, team.hooks) == (("lint",), ("guard",))
    assert loaded.blocked("lint") and loaded.hook_blocked("guard"), "the team's commands wait for `projector trust`"
    from projector.core import projects

    projects.trust_layer(str(home / ".config" / "projector" / "team" / "projector.yaml"), team_text.encode(), environ)
    trusted = model.load(home / ".config" / "projector" / "projector.yaml", environ, ("claude-code", "codex"))
    assert trusted.provider("docs").default == () and trusted.blocked("lint") is None, "trusted: its provider and server count"
