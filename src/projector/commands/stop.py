"""`projector stop [DIR] [--provider P]`: end the shared servers of DIR's workspace now."""

from __future__ import annotations

import os
import time

from projector.commands.common import err, load_model
from projector.commands.ps import servers
from projector.core import projects, scope
from projector.core.errors import ProjectorError, display_path
from projector.runtime import launch
from projector.runtime.host import attach
from projector.runtime.host.address import workspace
from projector.runtime.host.daemon import KILL_AFTER


def run(folder: str | None, provider: str | None, config: str | None) -> int:
    try:
        loaded = load_model(config)
    except ProjectorError as error:
        err(f"error: {error}")
        return 2
    here = scope.canonical(folder or os.getcwd())
    trusted = projects.around(here, os.environ).trusted
    chosen = [
        status for status in attach.hosts(os.environ)
        if (provider is None or status["provider"] == provider)
        and status["workspace"] == workspace(launch.resolve(loaded, trusted, status["provider"], here), here)
    ]
    if not chosen:
        which = f"{provider} " if provider else ""
        err(f"no shared {which}server runs for {display_path(here)} (`projector ps` lists them)")
        return 1
    for status in chosen:
        said = attach.stop(status["socket"])
        if said is None:
            continue  # it ended by itself meanwhile
        _wait_gone(said["pid"])
        sessions = said["sessions"]
        pids = [str(server["pid"]) for server in servers(said)]
        print(f"stopped {said['provider']} in {display_path(said['workspace'])} (pid{'s' if len(pids) > 1 else ''} "
              f"{', '.join(pids)}, {sessions} session{'s' if sessions != 1 else ''} closed)")
    return 0


def _wait_gone(pid: int) -> None:
    """Until the host has stopped its server (SIGTERM, then SIGKILL after KILL_AFTER seconds)."""
    deadline = time.monotonic() + KILL_AFTER + 2.0
    while time.monotonic() < deadline and _running(pid):
        time.sleep(0.05)


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie no init has reaped yet has ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the process table
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
