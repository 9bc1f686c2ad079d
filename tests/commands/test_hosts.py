"""`projector ps`, `projector stop` and what `explain` says about shared servers, against real
hosts started by sessions (the sandbox of tests/hosts.py)."""

from __future__ import annotations

import json

from hosts import CANARY, RawSession, alive, shared  # noqa: F401 - shared is a fixture


def test_ps_lists_each_running_host_with_its_sessions_and_memory_and_never_a_value(shared):
    (shared.a / ".env").write_text(f"TOKEN={CANARY}\n")
    shared.model(f"  srv:\n    {shared.server()}\n    shared: true\n", f"  {shared.a}:\n    srv: {{env_files: [.env]}}\n")
    assert json.loads(shared.projector("ps", "--json").stdout) == {"schema": 1, "hosts": []}
    assert shared.projector("ps").stdout == "no shared server is running\n"
    with RawSession(shared, shared.a), RawSession(shared, shared.a), RawSession(shared, shared.b):
        listed = json.loads(shared.projector("ps", "--json").stdout)["hosts"]
        text = shared.projector("ps").stdout
    rows = sorted(listed, key=lambda h: h["workspace"])
    assert [(h["workspace"], h["provider"], h["sessions"]) for h in rows] == [(str(shared.a), "srv", 2), (str(shared.b), "srv", 1)]
    assert all(h["rss"] > 10_000_000 for h in rows)  # an SDK server's size, not the host's
    header, first, second = text.splitlines()
    assert header.split() == ["WORKSPACE", "PROVIDER", "PID", "PROTOCOL", "SESSIONS", "UPTIME", "RSS"]
    assert first.split()[:5] == ["~/work/a", "srv", str(rows[0]["pid"]), "2025-11-25", "2"] and second.split()[0] == "~/work/b"
    assert CANARY not in text + json.dumps(listed)


def test_stop_ends_the_hosts_of_a_workspace_only_and_can_pick_a_provider(shared):
    shared.model(f"  srv:\n    {shared.server()}\n    shared: true\n  other:\n    {shared.server()}\n    shared: true\n")
    with RawSession(shared, shared.a) as in_a, RawSession(shared, shared.b), RawSession(shared, shared.a, "other") as other:
        before = {(h["workspace"], h["provider"]): h["pid"] for h in json.loads(shared.projector("ps", "--json").stdout)["hosts"]}
        stopped = shared.projector("stop", "--provider", "srv", "--config", str(shared.config), folder=shared.a)
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout == f"stopped srv in ~/work/a (pid {before[(str(shared.a), 'srv')]}, 1 session closed)\n"
        assert in_a.process.wait(timeout=10) == 0  # its session was closed: the client sees its process end
        after = {(h["workspace"], h["provider"]) for h in json.loads(shared.projector("ps", "--json").stdout)["hosts"]}
        assert after == {(str(shared.b), "srv"), (str(shared.a), "other")}
        assert not alive(before[(str(shared.a), "srv")])
        assert other.process.poll() is None
        everything = shared.projector("stop", str(shared.a), "--config", str(shared.config))
        assert everything.stdout.startswith("stopped other in ~/work/a")
    nothing = shared.projector("stop", "--config", str(shared.config), folder=shared.a)
    assert nothing.returncode == 1 and "no shared server runs for ~/work/a" in nothing.stderr


def test_explain_says_whether_a_provider_is_shared_in_a_folder_and_whether_its_host_runs(shared):
    shared.model(f"  srv:\n    {shared.server()}\n", f"  {shared.a}:\n    srv: {{shared: true, env: {{V: one}}}}\n")
    explain = lambda folder: shared.projector("explain", "--verbose", str(folder), "--config", str(shared.config))  # noqa: E731
    assert "server: one per session (not shared)" in explain(shared.b).stdout
    assert "server: shared by the sessions in ~/work/a, kept 30 s after the last; not running (the next session starts it)" in explain(shared.a).stdout
    with RawSession(shared, shared.a), RawSession(shared, shared.a):
        pid = json.loads(shared.projector("ps", "--json").stdout)["hosts"][0]["pid"]
        assert f"running: pid {pid}, 2 session(s)" in explain(shared.a).stdout
        shared.model(f"  srv:\n    {shared.server()}\n", f"  {shared.a}:\n    srv: {{shared: true, env: {{V: two}}}}\n")
        changed = explain(shared.a).stdout
        report = json.loads(shared.projector("explain", str(shared.a), "--json", "--config", str(shared.config)).stdout)
    assert "not running (the next session starts it)" in changed
    assert f"also running with an earlier launch: pid {pid}, 2 session(s) (it ends with them)" in changed
    srv = next(p for p in report["providers"] if p["name"] == "srv")
    assert srv["shared"]["hosts"] == [{"pid": pid, "sessions": 2, "current": False}]
