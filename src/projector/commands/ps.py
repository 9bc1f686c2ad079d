"""`projector ps`: the shared servers running for this user, one line per server (a host runs
one per protocol version its sessions asked for that another of its servers could not serve)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

from projector.core.errors import display_path
from projector.runtime.host import attach

SCHEMA = 1


def run(as_json: bool) -> int:
    rows = sorted((row(status, server) for status in attach.hosts(os.environ) for server in servers(status)),
                  key=lambda r: (r["workspace"], r["provider"], r["uptime"], r["pid"]))
    if as_json:
        print(json.dumps({"schema": SCHEMA, "hosts": rows}, indent=2))
        return 0
    if not rows:
        print("no shared server is running")
        return 0
    table = [("WORKSPACE", "PROVIDER", "PID", "PROTOCOL", "SESSIONS", "UPTIME", "RSS")]
    table += [(display_path(r["workspace"]), r["provider"], str(r["pid"]), r["protocol"] or "-", str(r["sessions"]),
               uptime(r["uptime"]), megabytes(r["rss"])) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    return 0


def servers(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A host's servers (a host of an earlier version reports one, as ``server_pid``)."""
    return status.get("servers") or [{"pid": status["server_pid"], "protocol": None, "sessions": status["sessions"]}]


def row(status: Mapping[str, Any], server: Mapping[str, Any]) -> dict[str, Any]:
    """One server of a host as `ps` shows it: its pid, the protocol version agreed with it, its
    sessions, its process group's resident memory."""
    return {
        "workspace": status["workspace"],
        "provider": status["provider"],
        "pid": server["pid"],
        "protocol": server["protocol"],
        "sessions": server["sessions"],
        "uptime": round(time.time() - status["started"], 1),
        "rss": group_rss(server["pid"]),
        "host_pid": status["pid"],
        "linger": status["linger"],
        "log": status["log"],
        "socket": status["socket"],
    }


def group_rss(pgid: int | None) -> int | None:
    """Bytes resident in the server's process group (the server and what it started); None
    where /proc cannot tell."""
    if pgid is None or not os.path.isdir("/proc/self"):
        return None
    page, total = os.sysconf("SC_PAGE_SIZE"), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # after the name: state, ppid, pgrp
                continue
            with open(f"/proc/{entry}/statm", encoding="ascii") as handle:
                total += int(handle.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return total


def uptime(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def megabytes(size: int | None) -> str:
    return "-" if size is None else f"{size / 1e6:.1f} MB"
