"""How results are shown: unified diffs (coloured on a terminal) and one line per change."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from projector.compile.engine import FileResult, Outcome, entry_named, kept_by
from projector.core.errors import shown_name
from projector.core.record import replace

STATUS_SCHEMA = 1

_COLOURS = {"+": "\033[32m", "-": "\033[31m", "@": "\033[36m"}
_RESET = "\033[0m"
STAT_BAR = 40  # widest +/- bar of diff --stat
QUIET = ("in-sync", "foreign", "adopted", "drift")  # an entry's states that are no change a sync makes


def by_file(results: Iterable[FileResult]) -> list[FileResult]:
    """One result per file, where it first comes. A file may hold several targets (Codex's
    config.toml: its servers, then the trust of projector's hook groups; Gemini's settings.json:
    its servers and its hook groups), each evaluated from the text the one before leaves: the
    file is shown once, from its text now to what the last of them leaves, with the entries of
    all (a trust entry as ``hook trust KEY``, which says what it is)."""
    return [whole(parts) for parts in parts_by_file(results)]


def parts_by_file(results: Iterable[FileResult]) -> list[list[FileResult]]:
    """Each file's results, in the order the sync evaluates them, the files where they first come."""
    parts: dict[Path, list[FileResult]] = {}
    for result in results:
        parts.setdefault(result.path, []).append(result)
    return list(parts.values())


def whole(parts: list[FileResult]) -> FileResult:
    """One file's results (in the order the sync evaluates them) as one."""
    first = parts[0]
    if len(parts) == 1 and first.target.kind != "trust":
        return first
    states = tuple((entry_named(part.target.kind, name), state) for part in parts for name, state in part.states)
    return replace(first, after=parts[-1].after, states=states)


def change_words(states: Iterable[tuple[str, str]], pending: bool) -> list[str]:
    """What a sync changes in a file, an entry at a time (``add docs``); a file it changes with
    no entry to name is one projector made and now removes."""
    changes = [f"{state} {name}" for name, state in states if state not in QUIET]
    return changes or (["removes what projector created"] if pending else [])


def diff_heading(result: FileResult) -> str:
    """The line above a file's diff (a patch reader skips it): every entry the sync changes
    there, and those it keeps as they were changed by hand."""
    drift = result.named("drift")
    said = [", ".join(change_words(result.states, result.changed))] + ([f"drift {', '.join(drift)} (changed by hand, kept by sync)"] if drift else [])
    return f"# {result.shown}: {'; '.join(said)}\n"


def unified_diff(result: FileResult, colour: bool) -> str:
    return text_diff(result.before, result.after, result.shown, colour=colour)


def text_diff(before: str | None, after: str | None, shown: str, shown_after: str | None = None, colour: bool = False) -> str:
    """``before`` -> ``after`` as a unified diff (None: no file, /dev/null), as git prints one: a
    last line without its newline is marked so. ``shown_after``: the new side's name when it is
    not ``shown``'s. The one printer of diff, import --dry-run and trust."""
    import difflib  # here: only a diff shown imports it

    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        (after or "").splitlines(keepends=True),
        fromfile=shown if before is not None else "/dev/null",
        tofile=(shown_after or shown) if after is not None else "/dev/null",
    )
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        if colour and line[:1] in _COLOURS and not line.startswith(("+++", "---")):
            line = _COLOURS[line[0]] + line.rstrip("\n") + _RESET + "\n"
        elif colour and line.startswith(("+++", "---")):
            line = "\033[1m" + line.rstrip("\n") + _RESET + "\n"
        out.append(line)
    return "".join(out)


def diff_stat(results: list[FileResult]) -> str:
    """One line per file with the lines added and removed, and a total (``git diff --stat``)."""
    if not results:
        return ""
    import difflib  # here: only diff shows one

    counts = []
    for result in results:
        before = (result.before or "").splitlines()
        after = (result.after or "").splitlines()
        lines = list(difflib.unified_diff(before, after, lineterm="", n=0))[2:]
        counts.append((result.shown, sum(1 for line in lines if line[:1] == "+"), sum(1 for line in lines if line[:1] == "-")))
    width = max(len(shown) for shown, _, _ in counts)
    most = max(added + removed for _, added, removed in counts)
    scale = min(1.0, STAT_BAR / most) if most else 1.0
    bar = lambda n: max(1, round(n * scale)) if n else 0  # noqa: E731 - as git: a change never shows as none
    out = [f" {shown:<{width}} | {added + removed:>{len(str(most))}} {'+' * bar(added)}{'-' * bar(removed)}\n" for shown, added, removed in counts]
    added, removed = sum(c[1] for c in counts), sum(c[2] for c in counts)
    files = f"{len(counts)} file{'s' if len(counts) != 1 else ''} changed"
    out.append(f" {files}, {added} insertion{'s' if added != 1 else ''}(+), {removed} deletion{'s' if removed != 1 else ''}(-)\n")
    return "".join(out)


def action(result: FileResult) -> str:
    """What sync does to the file: created, removed or updated."""
    if result.before is None:
        return "created"
    return "removed" if result.after is None else "updated"


WOULD = {"created": "would create", "removed": "would remove", "updated": "would update"}


RESTYLED = "the same server, in projector's spelling; `projector remove` gives back your text"


def restyled(result: FileResult) -> list[str]:
    """The entries whose change only respells what the user had (the client reads the same server)."""
    return result.named("restyle")


def restyle_lines(results: list[FileResult]) -> list[str]:
    """One line per entry a sync would only restyle (for diff, before each file's diff)."""
    return [f"restyles {name} in {result.shown} ({RESTYLED})" for result in results for name in restyled(result)]


def change_line(result: FileResult, dry_run: bool = False) -> str:
    verb = action(result)
    line = f"{WOULD[verb] if dry_run else verb} {result.shown} ({result.target.shadows})"
    if restyled(result):
        line += f": {'restyles' if dry_run else 'restyled'} {', '.join(map(shown_name, restyled(result)))} ({RESTYLED})"
    pruned = [shown_name(name) for name in result.named("remove")]  # a newline or an empty name said as import says it
    back = [shown_name(name) for name in result.named("give-back")]
    if result.target.is_project and pruned:
        took = "would remove" if dry_run else "removed"
        line += (f": {took} {', '.join(pruned)}, which shadowed projector's global {'entry' if len(pruned) == 1 else 'entries'}; "
                 "the file stays (`projector remove` puts it back)")
    if back:
        line += f": {'would give' if dry_run else 'gave'} back {', '.join(back)}, as it was before projector"
    return line


def sync_report(results: tuple[FileResult, ...], warnings: tuple[str, ...], problems: tuple, dry_run: bool) -> dict[str, Any]:
    """`sync --json`: each file written (or, dry, to be written) and what was done to it, the
    drift kept, every warning (said once on a terminal, here each time) and the errors; a file
    of several targets is one record."""
    results = tuple(by_file(results))
    return {
        "schema": STATUS_SCHEMA,
        "dry_run": dry_run,
        "files": [{"path": r.shown, "client": r.client.id, "kind": "project" if r.target.is_project else "global",
                   "action": action(r), "entries": dict(r.states)} for r in results if r.changed],
        "kept": [{"path": r.shown, "client": r.client.id, "drift": r.named("drift")}
                 for r in results if r.named("drift")],
        "warnings": list(warnings),
        "errors": [str(p) for p in problems],
    }


def kept_lines(results: tuple[FileResult, ...] | list[FileResult]) -> list[str]:
    """One line per file where sync kept an entry changed by hand (drift): what it kept, and the
    ways out of each kind there (a server entry is adopted; a hook group is changed in the model;
    a hook trust is the client's own, see `kept_by`)."""
    lines = []
    for parts in parts_by_file(results):
        drift = whole(parts).named("drift")
        if drift:
            were = "was" if len(drift) == 1 else "were"
            ways = ", ".join(_ways_out(parts, len(drift)))
            lines.append(f"kept {parts[0].shown}: {', '.join(drift)} {were} changed by hand (drift); {ways}, `projector sync --force` puts projector's back")
    return lines


def _ways_out(parts: list[FileResult], drifted: int) -> list[str]:
    """What keeps the drift of one file, a phrase per kind of entry in it (``drifted``: how many
    entries drifted there, all kinds together: one of a kind alone is ``it``)."""
    ways = []
    for part in parts:
        names = part.named("drift")
        if not names:
            continue
        them = "it" if len(names) == drifted else ", ".join(entry_named(part.target.kind, name) for name in names)
        if part.target.kind == "servers":
            ways.append(f"`projector adopt {part.client.id} {names[0] if len(names) == 1 else 'NAME'}` keeps {them}")
        elif part.target.kind == "hooks":
            ways.append(f"change the model to keep {them}")
        else:
            ways.append(kept_by(part.target) or "")
    return list(dict.fromkeys(ways))


def unmanaged(outcome: Outcome) -> dict[str, list[str]]:
    """Per client (by name), the entries of its global file that projector does not manage: the
    user's own, which `projector import` can bring into the model."""
    found: dict[str, list[str]] = {}
    for result in outcome.results:
        if result.target.is_project or result.target.kind != "servers":
            continue
        states = dict(result.states)
        names = [name for name in result.found if states.get(name, "foreign") == "foreign"]
        if names:
            found.setdefault(result.client.name, []).extend(names)
    return found


def unmanaged_line(found: dict[str, list[str]]) -> str | None:
    if not found:
        return None
    counts = ", ".join(f"{client} {len(names)}" for client, names in found.items())
    return f"entries projector does not manage: {counts} (`projector import` brings them into the model)"


def status_report(outcome: Outcome) -> dict[str, Any]:
    """The facts diff uses, as data: per file, whether it is pending and each entry's state."""
    files = []
    for result in by_file(outcome.results):  # a file of several targets is one record
        entries = dict(result.states)
        files.append(
            {
                "path": result.shown,
                "client": result.client.id,
                "kind": "project" if result.target.is_project else "global",
                "pending": result.changed,
                "drift": sorted(n for n, s in entries.items() if s == "drift"),
                "entries": entries,
            }
        )
    in_sync = not outcome.problems and not any(f["pending"] or f["drift"] for f in files)
    return {
        "schema": STATUS_SCHEMA,
        "in_sync": in_sync,
        "files": files,
        "warnings": list(outcome.warnings),
        "errors": [str(p) for p in outcome.problems],
        "unmanaged": unmanaged(outcome),
    }


def status_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for file in report["files"]:
        changes = change_words(file["entries"].items(), file["pending"])
        said = (["pending: " + ", ".join(changes)] if file["pending"] else []) + (
            [f"drift {', '.join(file['drift'])} (kept by sync)"] if file["drift"] else [])
        lines.append(f"{file['path']}: {'; '.join(said) or 'in sync'}")
    for file in report.get("withdrawn", ()):  # a trusted project file that changed or went: its workspace ignores it
        folder = file["file"].rpartition("/")[0] or "/"
        if file["why"] == "missing":
            lines.append(f"{file['file']}: trust withdrawn (it is gone): `projector untrust {folder}` forgets it")
        else:
            lines.append(f"{file['file']}: trust withdrawn (it changed since it was trusted; its workspace ignores it): "
                         f"review it and run `projector trust {folder}`")
    line = unmanaged_line(report.get("unmanaged") or {})
    return lines + ([line] if line else [])


STATE_WORDS = {
    "in-sync": "as sync writes it",
    "adopted": "your edit, adopted",
    "drift": "changed by hand (drift): sync keeps it",
    "foreign": "your own (projector did not write it): sync leaves it",
    "add": "not written yet: sync writes it",
    "update": "differs: sync rewrites it",
    "restyle": "yours as you wrote it: sync writes the same server in projector's spelling",
    "remove": "removed from the model: sync takes it out",
    "give-back": "yours, taken over before: sync gives it back as it was",
}


def explain_lines(report: dict[str, Any], verbose: bool = False) -> list[str]:
    """`explain`: a line per provider and per client; ``verbose``: everything the report holds."""
    if not verbose:
        return _explain_summary(report)
    lines = [f"folder: {report['folder']}" + (f"  ({report['canonical']})" if report["canonical"] != report["folder"] else "")]
    layers = report.get("layers") or []
    layered = len(layers) > 1  # where each thing came from is worth a line once there is more than one file
    if layered:
        lines.append("layers: " + ", then ".join(_layer_words(layer) for layer in layers))
    bindings = report["bindings"]
    lines.append("binding: " + (_binding_words(bindings[0], layered) if bindings else "none"))
    lines += [f"  inside: {_binding_words(b, layered)}" for b in bindings[1:]]
    lines += [f"project file: {file} (trusted)" for file in report.get("project_files", [])]
    lines += [f"notice: {notice}" for notice in report.get("notices", [])]
    lines += [f"notice: {b['repo']['distrust']}" for b in bindings if (b.get("repo") or {}).get("distrust")]
    for provider in report["providers"]:
        lines += _local_lines(provider, layered) if provider.get("kind") == "local" else _remote_lines(provider, layered)
    for left in report.get("left_out", []):
        lines += [_left_out_line(left), f"  why: {left['why']}"]
    lines += _hook_lines(report, layered)
    files = report.get("files") or {}
    for client, entries in report["clients"].items():
        if client not in files:
            lines.append(f"{client}:")
            lines += [f"  {name}: {json.dumps(value)}" for name, value in entries.items()]
            continue
        lines.append(f"{client}: {files[client]['file']}")
        for name, entry in files[client]["entries"].items():
            shown = entry["in_file"] if entry["in_file"] is not None else entry["sync_writes"]
            lines.append(f"  {name}: {json.dumps(shown)}" if entry["state"] == "in-sync" else f"  {name}: {STATE_WORDS.get(entry['state'], entry['state'])}")
            if entry["state"] != "in-sync":
                lines += [f"    in the file: {json.dumps(entry['in_file'])}"] if entry["in_file"] is not None else []
                lines += [f"    sync writes: {json.dumps(entry['sync_writes'])}"] if entry["sync_writes"] is not None else []
    return lines


def _explain_summary(report: dict[str, Any]) -> list[str]:
    """One line for the folder and its binding, one per provider, one per hook, one per client."""
    bindings = report["bindings"]
    binding = bindings[0]["path"] if bindings else "none"
    if bindings and bindings[0].get("repo"):
        binding += f" (a clone of {bindings[0]['repo']['repo']})"
    lines = [f"folder: {report['folder']}", f"binding: {binding}"]
    lines += [f"notice: {notice}" for notice in report.get("notices", [])]
    for provider in report["providers"]:
        if provider.get("kind") == "local":
            runs = f": runs {' '.join([provider['command'], *provider['args']])} in {provider['cwd']}" if provider["runs"] else ""
            lines.append(f"provider {provider['name']} (local): {provider['why']}{runs}" + _tools_words(provider))
        else:
            signs_in = f"; authenticates with {provider['auth']}" if str(provider.get("auth", "")).startswith("OAuth") else ""
            # (no entry anywhere: its why already says no tools here)
            gets = f"; entry: {words}" if (words := entries_words(provider)) and provider["entry"] != "none" else ""
            lines.append(_remote_head(provider) + _tools_words(provider) + signs_in + gets)
    lines += [_left_out_line(left) for left in report.get("left_out", [])]
    for hook in report["hooks"]:
        state = f"runs {hook['command']}" if hook["runs"] else ("does not run" if hook.get("blocked") else "turned off here")
        lines.append(f"hook {hook['name']}: on {hook['event']} {state}")
    files = report.get("files") or {}
    for client, entries in report["clients"].items():
        found = files.get(client)
        if found is None:
            lines.append(f"{client}: {', '.join(entries) or 'no entry'}")
            continue
        by_state: dict[str, list[str]] = {}
        for name, entry in found["entries"].items():
            by_state.setdefault(entry["state"], []).append(name)
        said = [f"{', '.join(names)} {STATE_WORDS.get(state, state).replace(' it', ' them') if len(names) > 1 else STATE_WORDS.get(state, state)}"
                for state, names in by_state.items()]
        lines.append(f"{client} ({found['file']}): {'; '.join(said) or 'no entry'}")
    lines.append("(projector explain --verbose: where each setting came from, and each entry as it is)")
    return lines


def _layer_words(layer: dict[str, Any]) -> str:
    words = layer["file"] + (f" (included at {layer['included_by']})" if layer["included_by"] else "")
    if layer["trusted"] is not False:
        return words
    stopped = [what for what, names in (("its local servers and hooks do not run", layer["local"] or layer["hooks"]),
                                        (f"its providers that carry a token are left out ({', '.join(layer['remote'])})",
                                         layer.get("remote"))) if names]
    return words + f" [{'; '.join(stopped)}: not trusted with these bytes]"


def _binding_words(binding: dict[str, Any], layered: bool) -> str:
    words = binding["path"] + (f"  (from {binding['from']})" if layered and binding.get("from") else "")
    repo = binding.get("repo")
    if repo:
        words += f"\n  clone of {repo['repo']} (binding {repo['name']}): its remote {repo['remote']} matched; found {repo['found']}"
    return words


def _from_lines(provider: dict[str, Any]) -> list[str]:
    """Where each key came from, by file: ``from: ~/team.yaml: definition 4, url 5; ~/me.yaml: default 9``."""
    by_file: dict[str, list[str]] = {}
    for key, place in (provider.get("from") or {}).items():
        file, _, line = place.rpartition(":")
        by_file.setdefault(file, []).append(f"{key} {line}")
    return [f"  from: {'; '.join(f'{file}: ' + ', '.join(keys) for file, keys in by_file.items())}"] if by_file else []


def _hook_lines(report: dict[str, Any], layered: bool = False) -> list[str]:
    lines = []
    for hook in report["hooks"]:
        on = f"{hook['event']}" + (f" ({hook['matcher']})" if hook["matcher"] else "")
        state = f"runs {hook['command']}" if hook["runs"] else ("does not run" if hook.get("blocked") else "turned off here")
        lines.append(f"hook {hook['name']}: on {on} {state} — from {hook.get('at') or hook['defined']}")
        lines += [f"  blocked: {hook['blocked']}"] if hook.get("blocked") else []
        lines += [f"  turned {'on' if s['enabled'] else 'off'} by {s['by']}" for s in hook["switched"]]
    if any(hook["runs"] for hook in report["hooks"]):
        lines.append(f"hooks run in: {report['hooks_run_in']}")
    return lines


def _remote_head(provider: dict[str, Any]) -> str:
    """A remote provider's first line: the KBs this folder gets and why, or that it gets no entry."""
    kbs = "every KB" if provider["kbs"] is None else (", ".join(provider["kbs"]) or "no KB")
    source = provider["binding"] or provider.get("project_file")
    gets = "no entry" if provider.get("no_entry") and source else kbs
    return f"provider {provider['name']}: {gets} — {provider['why']}" + (f" ({source})" if source else "")


def _left_out_line(left: dict[str, Any]) -> str:
    return (f"provider {left['name']}: left out — {left['layer']} decides where {left['token']} goes ({left['url']}) "
            f"and is not trusted: review it, then run `{left['run']}`")


def _remote_lines(provider: dict[str, Any], layered: bool = False) -> list[str]:
    lines = [_remote_head(provider)]
    lines += _from_lines(provider) if layered else []
    if provider["dropped"]:
        lines.append(f"  left out (not mounted): {', '.join(provider['dropped'])}")
    lines += _tool_lines(provider)
    if provider["entry"] == "mixed":
        lines.append(f"  entry: {entries_words(provider)}")
        lines += [f"    in {', '.join(clients)}: {ENTRY_WORDS[kind](provider)}" for kind, clients in provider["entries"].items()]
    else:
        lines.append(f"  entry: {ENTRY_WORDS[provider['entry']](provider)}")
    if provider.get("auth") and provider["auth"] != "none":
        lines.append(f"  authenticates with {provider['auth']}")
    if provider.get("follows_roots"):
        lines.append("  a client declaring roots gets their bindings' KBs, and a tool any of their rules offers"
                     " (projector tools --root)")
    return lines


ENTRY_WORDS = {  # a remote provider's entry, by kind, as the verbose report says it
    "http": lambda provider: f"plain HTTP {provider['url']} (the same in every folder)",
    "none": lambda provider: f"none ({provider.get('no_entry') or 'its default shows no KB'})",
    "bridge": lambda provider: "the projector bridge, which narrows to the set above in this folder",
}
SHORT_ENTRY_WORDS = {"http": "HTTP", "bridge": "the bridge", "none": "no entry"}


def entries_words(provider: dict[str, Any]) -> str:
    """What the clients get for a remote provider, grouped: "the bridge in every client", or
    "HTTP in 12 clients, the bridge in 3: <their ids>" (the larger group counted, the others
    named); empty: no client."""
    groups = list((provider.get("entries") or {}).items())
    if not groups:
        return ""
    if len(groups) == 1:
        kind = groups[0][0]
        return f"{SHORT_ENTRY_WORDS[kind]} in {'any' if kind == 'none' else 'every'} client"
    (kind, clients), rest = groups[0], groups[1:]
    first = f"{SHORT_ENTRY_WORDS[kind]} in {len(clients)} client{'s' if len(clients) > 1 else ''}"
    return ", ".join([first] + [f"{SHORT_ENTRY_WORDS[k]} in {len(named)}: {', '.join(named)}" for k, named in rest])


def _tools_words(provider: dict[str, Any]) -> str:
    """The provider's tool rule here, on its summary line (none: every tool, nothing said; a
    bridge that follows a client's roots says so)."""
    tools = provider.get("tools")
    roots = "; a client's roots: their KBs and tools" if provider.get("follows_roots") else ""
    return (f"; tools: {tools['shown']}" if tools else "") + roots


def _tool_lines(provider: dict[str, Any]) -> list[str]:
    """The provider's tool rule here and where it came from (none: every tool, no line)."""
    tools = provider.get("tools")
    return [f"  tools: {tools['shown']} — from {tools['from']}"] if tools else []


DEFAULT_WORDS = {  # runtime.launch.DEFAULTS, as a person reads them
    "args": "no args",
    "cwd": "cwd the workspace root",
    "direnv": "no direnv",
    "env": "no env of its own",
    "env_files": "no env_files",
    "linger": "linger 30 s",
    "shared": "not shared (a server per session)",
    "enabled": "enabled",
}


def _local_lines(provider: dict[str, Any], layered: bool = False) -> list[str]:
    lines = [f"provider {provider['name']} (local): {provider['why']}"] + (_from_lines(provider) if layered else []) + _tool_lines(provider)
    if provider["workspace"]:
        lines.append(f"  workspace: {provider['workspace']}")
    if provider["runs"]:
        lines.append(f"  runs: {' '.join([provider['command'], *provider['args']])}  in {provider['cwd']}")
    lines += [f"  {key}: from {source}" for key, source in provider["sources"].items() if source != "default"]
    defaults = [DEFAULT_WORDS.get(key, key) for key, source in provider["sources"].items() if source == "default"]
    if defaults:
        lines.append(f"  set nowhere, so the defaults: {', '.join(defaults)}")
    lines += [f"  env from {source}: {', '.join(names)}" for source, names in provider["env"].items()]
    if provider["runs"]:
        lines += _shared_lines(provider.get("shared"))
    lines += [f"  notice: {notice}" for notice in provider["notices"]]
    lines.append("  entry: the projector bridge" if provider["entry"] == "bridge" else "  entry: none (projector is not on PATH)")
    return lines


def _shared_lines(shared: dict[str, Any] | None) -> list[str]:
    if shared is None:
        return ["  server: one per session (not shared)"]
    hosts = shared["hosts"]
    running = next((h for h in hosts if h["current"]), None)
    state = (f"running: pid {running['pid']}, {running['sessions']} session(s)" if running
             else "not running (the next session starts it)")
    lines = [f"  server: shared by the sessions in {shared['workspace']}, kept {shared['linger']:g} s after the last; {state}"]
    lines += [f"  also running with an earlier launch: pid {h['pid']}, {h['sessions']} session(s) (it ends with them)"
              for h in hosts if not h["current"]]
    return lines
