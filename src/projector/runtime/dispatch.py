"""``projector dispatch EVENT``: the one hook entry projector writes per event in each client.

The client runs it with its JSON payload on stdin. It takes the session's folder from the
payload's ``cwd`` (else its own), finds the places around it (bindings, trusted project files)
as the bridge does, and runs the hooks that apply there for ``EVENT`` in order: each through
``/bin/sh -c`` in the workspace root, in the workspace's environment overlay when the hook asks
for one, the payload on its stdin, killed with its process group at its timeout. It reads each
result in the hook protocol the event names come from (the vocabulary's) and answers in the
client's (its descriptor's ``hooks.block``):

- a block (exit 2 with the reason on stderr; or JSON ``decision: block``,
  ``permissionDecision: deny``, ``continue: false``) stops the hooks after it. ``--block exit-2``
  answers exit 2 with the reason on stderr; ``--block json`` answers a PreToolUse deny as JSON
  with exit 0 (for a client that drops stderr on exit 2);
- otherwise the contexts the hooks gave (``hookSpecificOutput.additionalContext``, or plain
  stdout where it is context) go out as one JSON object of the fields every client accepts (one
  refuses any other field, and ``allow``), and exit 0. A hook that fails or times out is reported
  on stderr and does not block; nor does projector's own failure (exit 0: one client denies the
  tool call on exit 1).

Clients run it on every tool call, so the path where no hook applies imports ``os``, ``sys`` and
``json`` only: it reads a table of the model's hooks kept as JSON beside projector's state (valid
while the model file and the trust store are unchanged), never the model's YAML.
"""

from __future__ import annotations

import json
import os
import sys

from projector.core import hooks, locations
from projector.core.folders import contains

USAGE = "usage: projector dispatch [--config FILE] [--state DIR] [--block exit-2|json] EVENT"
BLOCKS = ("exit-2", "json")
OUTPUT_LIMIT = 1 << 20  # bytes kept of a hook's stdout and of its stderr
TABLE_SCHEMA = 3  # 2: the files the model includes, with their stats; 3: a clone not trusted keeps only the hooks it turns off
PROJECT_FILE_LIMIT = 256 * 1024  # core.projects.MAX_BYTES

TYPE_CHECKING = False  # typing costs more than the whole no-hook path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def main(argv: list[str]) -> None:
    try:
        code = dispatch(argv, sys.stdin.buffer.read(), os.environ)
    except SystemExit as usage:
        _say(str(usage))
        code = 0
    except BaseException as error:  # noqa: BLE001 - a hook entry never fails the client's action over projector's own error
        _say(f"projector dispatch: {type(error).__name__}: {error}")
        code = 0
    try:
        sys.stdout.flush()
    except OSError:
        pass
    os._exit(code)


def _say(text: str) -> None:
    try:
        sys.stderr.write(text.rstrip("\n") + "\n")
        sys.stderr.flush()
    except OSError:
        pass


def parse(argv: list[str]) -> tuple[str, str | None, str | None, str]:
    """(event, --config, --state, --block), read by hand as the bridge reads its flags."""
    given: dict[str, str] = {"--block": "exit-2"}
    rest, event = list(argv), None
    while rest:
        word = rest.pop(0)
        name, _, inline = word.partition("=")
        if name in ("--config", "--state", "--block") and (inline or rest):
            given[name] = inline or rest.pop(0)
        elif not word.startswith("-") and event is None:
            event = word
        else:
            raise SystemExit(f"projector dispatch: unexpected {word!r}\n{USAGE}")
    block = given["--block"]
    if event is None or block not in BLOCKS:
        raise SystemExit(f"projector dispatch: {'an EVENT' if event is None else '--block exit-2 or json'} is needed\n{USAGE}")
    return event, given.get("--config"), given.get("--state"), block


# --------------------------------------------------------------------------- which hooks run


def dispatch(argv: list[str], payload: bytes, environ: Mapping[str, str]) -> int:
    event, config, state, block = parse(argv)
    if state:  # for a client that clears the environment: the trust store and the hooks' table are there
        environ = {**environ, "PROJECTOR_STATE": state}
    if event not in hooks.EVENTS:
        _say(f"projector dispatch: unknown event {event!r}; nothing ran (run `projector sync` after an upgrade)")
        return 0
    data = _payload(payload)
    folder = _folder(data)
    table = _table(locations.model_file(config, environ), environ)
    bindings = [(os.path.realpath(path), worktrees, f"binding {path}", hooks.hooks_of(said)) for path, worktrees, said in table["bindings"]]
    hooked = _projects(table, folder, hooked=True)
    here = hooks.applying(hooks.hooks_of(table["hooks"]), "the model", hooks.places(bindings, hooked, folder))
    chosen = [a for a in hooks.running(here, event) if hooks.matches(a.hook.matcher, event, data)]
    if not chosen:
        return 0
    # A project file without hooks changes no hook, but may be the deepest workspace: where they run.
    root = hooks.workspace_root(hooks.places(bindings, hooked + _projects(table, folder, hooked=False), folder), folder)
    return _answer(event, block, _run_all(chosen, event, root, payload, environ))


def _payload(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _folder(payload: Mapping[str, Any]) -> str:
    cwd = payload.get("cwd")
    folder = cwd if isinstance(cwd, str) and cwd.startswith("/") else os.getcwd()
    return os.path.realpath(folder)


def _projects(table: Mapping[str, Any], folder: str, hooked: bool) -> list[tuple[str, str, tuple[hooks.Hook, ...]]]:
    """The trusted project files at ``folder`` and above, those with hooks or those without:
    each counts only while its bytes are the trusted ones (read only when it could matter)."""
    found = []
    for file, digest, said in table["projects"]:
        root = os.path.dirname(file)
        if bool(said) == hooked and contains(root, folder) and _trusted(file, digest):
            found.append((root, f"project file {file}", hooks.hooks_of(said)))
    return found


def _trusted(file: str, digest: str) -> bool:
    """Whether a project file still holds its trusted bytes (as core.projects decides; that module
    brings the model's types with it)."""
    from projector.core.reading import Unreadable, read_regular

    try:
        raw = read_regular(file, PROJECT_FILE_LIMIT)
    except Unreadable:
        return False
    if raw is None:
        return False
    from projector.core.digest import sha256

    return sha256(raw) == digest


# --------------------------------------------------------------------------- the table of hooks


def _table(model_file: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The model's hooks, its bindings and the trusted project files, as JSON kept beside
    projector's state while the model file and the trust store are unchanged (their stat, taken
    before they are read), and every file the model includes (and what else its check depended
    on: core.modeltypes.Model.watched); rebuilt from the checked model otherwise."""
    from projector import __version__

    trust = os.path.join(locations.state_folder(environ), "trust.json")
    key = [TABLE_SCHEMA, __version__, _stat(model_file), _stat(trust)]
    cache = os.path.join(locations.state_folder(environ), "dispatch-cache.json")
    try:
        with open(cache, encoding="utf-8") as handle:
            kept = json.load(handle)
        if kept.get("key") == key and all(_stat(path) == stat for path, stat in kept["table"]["files"]):
            return kept["table"]
    except (OSError, ValueError, AttributeError):
        pass
    table = build_table(model_file, environ)
    _store(cache, {"key": key, "table": table})
    return table


def _stat(path: str) -> list[Any] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [path, info.st_ino, info.st_ctime_ns, info.st_mtime_ns, info.st_size]


def _store(cache: str, entry: dict[str, Any]) -> None:
    temporary = f"{cache}.{os.getpid()}"
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(entry, handle)
        os.replace(temporary, cache)
    except OSError:
        pass  # a table that cannot be kept costs time, not correctness


def build_table(model_file: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The table from the checked model (the slow path: after the model, one of its layers or the
    trust store changed). A hook that an included layer not trusted with its bytes says
    something of is left out, in every folder: it does not run (core.modeltypes.Model.hook_blocked)."""
    from pathlib import Path

    from projector.core import model, projects
    from projector.core.resources import client_ids

    loaded = model.cached(Path(model_file), environ, client_ids, Path(locations.state_folder(environ)) / "model-cache.json")
    digests = projects.recorded_digests(environ)
    runs = lambda said: tuple(h for h in said if not loaded.hook_blocked(h.name))  # noqa: E731
    files: dict[str, Any] = {}
    if len(loaded.layers) > 1:
        from projector.core.layers import as_seen

        files = {**{path: _stat(path) for path in loaded.watched}, **as_seen(loaded, _stat, ["changed while it was read"])}
    return {
        "hooks": hooks.specs(runs(loaded.hooks)),
        "bindings": [[b.path, b.worktrees, hooks.specs(runs(b.hooks))] for b in loaded.bindings],
        "projects": [[p.file, digests[p.file], hooks.specs(p.hooks)] for p in projects.recorded(environ) if p.file in digests],
        "files": sorted(files.items()),
    }


# --------------------------------------------------------------------------- running the hooks


def _run_all(chosen: list[hooks.Applied], event: str, root: str, payload: bytes, environ: Mapping[str, str]) -> tuple[str | None, list[str], list[str]]:
    """(the block's reason or None, contexts, notes): hooks run in order until one blocks."""
    contexts: list[str] = []
    notes: list[str] = []
    for applied in chosen:
        hook = applied.hook
        timeout = hook.timeout or hooks.DEFAULT_TIMEOUT
        env = _environment(hook, root, environ, notes)
        code, out, err = run(hook.command, root, env, payload, timeout)
        kind, text = outcome(event, hook.name, code, out, err, timeout)
        if kind == "block":
            return text, contexts, notes
        (contexts if kind == "context" else notes).append(text) if text else None
    return None, contexts, notes


def _environment(hook: hooks.Hook, root: str, environ: Mapping[str, str], notes: list[str]) -> dict[str, str]:
    """The client's environment, with the hook's workspace overlay when it asks for one."""
    if not (hook.env or hook.env_files or hook.direnv):
        return dict(environ)
    from types import SimpleNamespace

    from projector.runtime import overlay

    settings = SimpleNamespace(env=hook.env or (), env_files=tuple(hooks.absolute(root, f) for f in hook.env_files or ()),
                               direnv=bool(hook.direnv), root=root)
    built = overlay.build(settings, environ)
    notes += [f'hook "{hook.name}": {notice}' for notice in built.notices]
    return built.environ


def run(command: str, cwd: str, env: Mapping[str, str], payload: bytes, timeout: float) -> tuple[int | None, bytes, bytes]:
    """(exit status, or None when it ran out of time and was killed; stdout; stderr) of
    ``/bin/sh -c command`` in ``cwd``, in a session (and process group) of its own that is
    killed at ``timeout``. The standard library's subprocess costs more to import than the time
    this whole path may take; posix_spawn starts it without copying this process (fork does)."""
    import signal
    import time

    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        os.chdir(cwd)  # the dispatcher's own folder: posix_spawn has no cwd of its own
        pid = os.posix_spawn("/bin/sh", ["/bin/sh", "-c", command], dict(env), setsid=True,
                             file_actions=[(os.POSIX_SPAWN_DUP2, stdin_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)],
                             setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))  # Python ignores these; a hook must not inherit that
    except OSError as error:
        for descriptor in (stdin_r, stdin_w, out_r, out_w, err_r, err_w):
            os.close(descriptor)
        return 127, b"", f"cannot run it in {cwd}: {error.strerror or error}".encode()
    for descriptor in (stdin_r, out_w, err_w):
        os.close(descriptor)

    def kill() -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

    stops = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT")]
    for stop in stops:  # the client gave up on us: the hook goes too
        signal.signal(stop, lambda _signum, _frame: (kill(), os._exit(0)))
    pipes = _Pipes(stdin_w, payload, (out_r, err_r), pid)
    deadline = time.monotonic() + timeout
    status: int | None = None
    while status is None or pipes.reading:
        if status is None:
            done, raw = os.waitpid(pid, os.WNOHANG)
            status = raw if done else None
        left = deadline - time.monotonic()
        if status is None and left <= 0:
            kill()
            os.waitpid(pid, 0)
            break
        # Once it has ended, only what is already there is read: something it left running may
        # hold the pipes open, and is not waited for.
        if not pipes.step(0 if status is not None else min(left, 60.0 if pipes.watching_exit else 0.05)) and status is not None:
            break
    pipes.close()
    for stop in stops:  # its pid may be another process's soon
        signal.signal(stop, signal.SIG_DFL)
    code = None if status is None else os.waitstatus_to_exitcode(status)
    return code, bytes(pipes.output[out_r]), bytes(pipes.output[err_r])


class _Pipes:
    """A hook's stdin (fed the payload), its stdout and stderr (kept up to OUTPUT_LIMIT), and, on
    Linux, a descriptor that wakes the loop when it ends."""

    def __init__(self, stdin: int, payload: bytes, outputs: tuple[int, int], pid: int):
        import select

        self.poller = select.poll()
        self.open: set[int] = set()
        self.output = {descriptor: bytearray() for descriptor in outputs}
        for descriptor in outputs:
            self._watch(descriptor, select.POLLIN)
        self.stdin, self.pending = stdin, memoryview(payload)
        if payload:
            os.set_blocking(stdin, False)
            self._watch(stdin, select.POLLOUT)
        else:
            os.close(stdin)
        try:
            self.exit: int | None = os.pidfd_open(pid)
            self._watch(self.exit, select.POLLIN)
        except (AttributeError, OSError):  # not Linux: the loop looks every 50 ms
            self.exit = None

    @property
    def reading(self) -> bool:
        return bool(self.open & self.output.keys())

    @property
    def watching_exit(self) -> bool:
        return self.exit in self.open

    def _watch(self, descriptor: int, mask: int) -> None:
        self.poller.register(descriptor, mask)
        self.open.add(descriptor)

    def _done(self, descriptor: int) -> None:
        self.poller.unregister(descriptor)
        self.open.discard(descriptor)
        os.close(descriptor)

    def step(self, seconds: float) -> bool:
        """Wait up to ``seconds`` and move what is ready; False when nothing was."""
        ready = self.poller.poll(seconds * 1000)
        for descriptor, _ in ready:
            if descriptor == self.exit:
                self._done(descriptor)
            elif descriptor == self.stdin:
                self._feed()
            else:
                chunk = os.read(descriptor, 65536)
                if not chunk:
                    self._done(descriptor)
                kept = self.output[descriptor]
                kept += chunk[: max(0, OUTPUT_LIMIT - len(kept))]
        return bool(ready)

    def _feed(self) -> None:
        try:
            self.pending = self.pending[os.write(self.stdin, self.pending[:65536]):]
        except BlockingIOError:
            return
        except OSError:  # the hook does not read its stdin: fine
            self.pending = self.pending[:0]
        if not self.pending:
            self._done(self.stdin)

    def close(self) -> None:
        for descriptor in list(self.open):
            self._done(descriptor)


def outcome(event: str, name: str, code: int | None, out: bytes, err: bytes, timeout: float) -> tuple[str, str]:
    """One hook's result as the vocabulary's protocol reads it: ("block", reason), ("context",
    text), ("note", what to report) or ("", "")."""
    stdout, stderr = out.decode("utf-8", "replace").strip(), err.decode("utf-8", "replace").strip()
    if code is None:
        return "note", f'projector: hook "{name}" ran longer than {timeout:g} s and was stopped'
    if code == 2:
        return "block", stderr or stdout or f'hook "{name}" blocked this (exit 2)'
    if code != 0:
        how = f"was killed by signal {-code}" if code < 0 else f"failed (exit {code})"
        return "note", f'projector: hook "{name}" {how}' + (f": {stderr[-2000:]}" if stderr else "")
    answer = _json_object(stdout)
    if answer is None:
        return ("context", stdout) if stdout and event in hooks.PLAIN_CONTEXT_EVENTS else ("", "")
    specific = answer.get("hookSpecificOutput") if isinstance(answer.get("hookSpecificOutput"), dict) else {}
    if answer.get("decision") == "block" or specific.get("permissionDecision") == "deny" or answer.get("continue") is False:
        reason = specific.get("permissionDecisionReason") or answer.get("reason") or answer.get("stopReason")
        return "block", reason if isinstance(reason, str) and reason.strip() else f'hook "{name}" blocked this'
    context = specific.get("additionalContext")
    return ("context", context) if isinstance(context, str) and context else ("", "")


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _answer(event: str, block: str, result: tuple[str | None, list[str], list[str]]) -> int:
    """The combined result in the client's protocol; the exit status."""
    reason, contexts, notes = result
    for note in notes:
        _say(note)
    if reason is not None:
        if block == "exit-2":
            _say(reason)
            return 2
        if event == "PreToolUse":
            specific = {"hookEventName": event, "permissionDecision": "deny", "permissionDecisionReason": reason}
            sys.stdout.write(json.dumps({"hookSpecificOutput": specific}) + "\n")
        else:
            _say(f"projector: a hook blocked {event}, which this client lets no hook block: {reason}")
        return 0
    if contexts and event in hooks.CONTEXT_EVENTS:
        sys.stdout.write(json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": "\n\n".join(contexts)}}) + "\n")
    return 0
