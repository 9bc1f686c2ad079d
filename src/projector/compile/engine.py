"""The compiler: one computation, shown by ``diff`` and ``status`` and carried out by ``sync``.

    projector.yaml ─load─▶ Model ─plan─▶ servers, hook events ─render per client─▶ desired entries
    targets: each client's global file, its hook file (and the trust entries that follow its
    groups), and the project files of every bound workspace
    target file ─read─▶ Document ─reconcile (global) / prune (project)─▶ edits ─▶ new text

``compute`` reads and decides; nothing is written until ``write`` carries out its result. Both
go through a System (compile.system): the real one for ``sync``, a dry run for ``diff`` and
``status``, so the three are one code path. A target that cannot be read or parsed gets a
problem and is left untouched; the others go on. Pruning is not a second mechanism: a project
file is a target whose desired entries are none (and it is never deleted: projector did not
create it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from projector.compile import documents, quirks
from projector.compile.clients import Client, Reading
from projector.compile.documents.base import Verbatim, neighbours, return_order
from projector.compile.documents.hookgroups import HookGroups, index_of, placed_by
from projector.compile.ledger import FileRecord, Ledger, entry_hash
from projector.compile.plan import dispatch_command, hook_events, plan
from projector.compile.reconcile import Decision, given_back, prune, recognisable, reconcile, took_over
from projector.compile.system import System
from projector.compile.targets import Survey, TargetFile, targets
from projector.core import files
from projector.core.errors import DocumentError, Problem
from projector.core.invocation import bridge_options, runs_dispatch
from projector.core.locations import on_path
from projector.core.modeltypes import Model, Project, Provider
from projector.core.record import Record, replace

RETRIES = 20  # times a file may change under us before we give up on it for this sync


class FileResult(Record):
    """One client file: its text before and after, and what the ledger records of it."""

    target: TargetFile
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is (to be) removed
    bom: bool
    record: FileRecord | None  # the ledger's record after the sync
    intent: FileRecord | None  # what the ledger says while the file is being written
    notes: tuple[str, ...]
    states: tuple[tuple[str, str], ...]  # entry name -> state, for status
    folders: tuple[str, ...] = ()  # folders projector made for the file it removes: removed too when left empty
    found: tuple[str, ...] = ()  # the entries the file held under its key before the sync (status counts the user's)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def client(self) -> Client:
        return self.target.client

    @property
    def path(self) -> Path:
        return self.target.path

    @property
    def shown(self) -> str:
        return self.target.shown

    def named(self, state: str) -> list[str]:
        """The entries in ``state`` (drift, remove, restyle, ...), in the file's order."""
        return [name for name, said in self.states if said == state]


class Outcome(Record):
    """Everything a sync computed, before anything is written."""

    results: tuple[FileResult, ...]
    problems: tuple[Problem, ...]  # files left untouched
    warnings: tuple[str, ...]
    providers: Mapping[str, Provider]
    force: bool
    system: System  # what the files were read through
    model: Model
    projects: tuple[Project, ...]
    survey: Survey  # the folders around the workspaces, as this computation found them

    @property
    def changed(self) -> tuple[FileResult, ...]:
        return tuple(r for r in self.results if r.changed)


def projector_on_path(environ: Mapping[str, str]) -> str | None:
    """projector as PATH finds it (the path the bridge entries name)."""
    return on_path("projector", environ)


# --------------------------------------------------------------------------- evaluating


def compute(
    model: Model,
    clients: list[Client],
    environ: Mapping[str, str],
    ledger: Ledger,
    system: System,
    force: bool = False,
    projects: tuple[Project, ...] = (),
) -> Outcome:
    """``projects``: the project files the trust store records (their providers get entries)."""
    projector = projector_on_path(environ)
    options = bridge_options(model.source, environ)
    compiled = plan(model, projector, options, projects)
    results: list[FileResult] = []
    problems, warnings = [], list(compiled.warnings)
    desired, hooks = {}, {}
    events = hook_events(model, projects)
    if events and not projector:
        warnings.append(f"hooks run through projector, which is not on PATH: no hook entries were written ({', '.join(sorted(events))})")
        events = set()
    for client in clients:
        desired[client.id], cannot = client.entries(compiled)
        hooks[client.id], unheard = client.hook_entries(events, lambda event, block: dispatch_command(projector, event, options, block))
        warnings += cannot + unheard
    providers = {p.name: p for project in reversed(projects) for p in project.providers} | {p.name: p for p in model.providers}
    texts: dict[Path, files.Read] = {}  # each file as the targets before this one leave it
    lineups: dict[Path, Mapping[str, tuple[str | None, ...]]] = {}  # each hook file's lineup as the sync leaves it
    failed: set[Path] = set()  # files with a problem: their other targets are left alone too
    survey = Survey()
    made = {key.partition("#")[0]: r.folders for key, r in ledger.files.items() if r.created == "file"}  # files projector created
    for target in targets(model, clients, environ, desired, projects, hooks, survey):
        if target.path in failed or target.follows in failed:
            continue
        if not target.is_project and str(target.path) in made:
            target = replace(target, made=made[str(target.path)])
        if target.kind == "trust":
            target = replace(target, desired=_trust_entries(target, texts.get(target.follows), hooks[target.client.id],
                                                            lineups.get(target.follows, {})))
        if target.kind != "servers" and not target.desired and ledger.record(target.ledger_key) is None:
            continue  # no hooks for this client, and none of projector's there: the file is not even read
        outcome = evaluate(target, ledger.record(target.ledger_key), providers, force, system, texts.get(target.path))
        if isinstance(outcome, Problem):
            problems.append(outcome)
            failed.add(target.path)
        else:
            results.append(outcome)
            warnings += outcome.notes
            texts[target.path] = files.Read(outcome.after, outcome.bom)
            lineups[target.path] = _lineup_of(outcome)
            if outcome.record is not None and outcome.record.created == "file":
                made.setdefault(str(target.path), outcome.record.folders)
    return Outcome(tuple(results), tuple(problems), tuple(warnings), providers, force, system, model, projects, survey)


def _trust_entries(target: TargetFile, hook_file: files.Read | None, wanted: Mapping[str, Any],
                   lineup: Mapping[str, tuple[str | None, ...]]) -> dict[str, Any]:
    """The entries the client needs for the groups projector writes (``wanted``), where its hook
    file as the sync leaves it holds them (None: the sync did not look at it, having no hooks
    there; ``lineup``: its groups as the sync leaves them, so a group of projector's whose
    dispatcher a hand edit took out is still in projector's place). They trust what projector
    wants, not what stands there: a group kept as drift is left for the client to ask about."""
    spec = target.client.hooks
    assert spec is not None and spec.trust_function and target.follows is not None
    if hook_file is None or hook_file.text is None:
        return {}
    lists = documents.parse(spec.format, hook_file.text, str(target.follows)).servers(spec.key) or {}

    def place(event: str, groups: list[Any]) -> int | None:
        at = lineup.get(event) or ()
        return index_of(groups, _ours, at.index(None) if None in at else None)

    return quirks.TRUST[spec.trust_function](str(target.follows), lists, place, wanted)


def _lineup_of(result: FileResult) -> Mapping[str, tuple[str | None, ...]]:
    """A hook file's groups as a sync leaves it (its record's lineup; none for other targets)."""
    return result.record.lineup if result.target.kind == "hooks" and result.record is not None else {}


def _ours(group: Any) -> bool:
    """A hook group projector writes: its handlers run ``projector dispatch``."""
    handlers = group.get("hooks") if isinstance(group, Mapping) else None
    return isinstance(handlers, list) and bool(handlers) and all(isinstance(h, Mapping) and runs_dispatch(h.get("command")) for h in handlers)


def _partly_ours(group: Any) -> bool:
    """A group one of whose handlers runs ``projector dispatch`` (projector's, with a handler of
    the user's put beside it)."""
    handlers = group.get("hooks") if isinstance(group, Mapping) else None
    return isinstance(handlers, list) and any(isinstance(h, Mapping) and runs_dispatch(h.get("command")) for h in handlers)


def evaluate(
    target: TargetFile, record: FileRecord | None, providers: Mapping[str, Provider], force: bool, system: System,
    read: files.Read | None = None,
) -> FileResult | Problem:
    """Read one target (``read``: its file as an earlier target of it leaves it) and decide its
    new text; a Problem when it cannot be read or parsed."""
    return _guarded(target, lambda: _decide(target, record, providers, force, system, read))


def forced(outcome: Outcome, ledger: Ledger, paths: set[Path]) -> tuple[FileResult, ...]:
    """The targets of ``paths`` as `sync --force` would leave them, evaluated again from
    ``outcome`` (a sync's, without force) rather than recomputed whole: what `diff` shows of a
    file with drift. Each target reads its file as the forced targets before it leave it, a
    trust file its hook file as forced, as ``compute`` does; a target with a problem drops the
    rest of its file."""
    wanted = paths | {r.target.follows for r in outcome.results if r.path in paths and r.target.follows is not None}
    groups = {r.path: r.target.desired or {} for r in outcome.results if r.target.kind == "hooks"}
    texts: dict[Path, files.Read] = {}
    lineups: dict[Path, Mapping[str, tuple[str | None, ...]]] = {}
    failed: set[Path] = set()
    results: list[FileResult] = []
    for earlier in outcome.results:
        target = earlier.target
        if target.path not in wanted or target.path in failed or target.follows in failed:
            continue
        if target.kind == "trust":
            target = replace(target, desired=_trust_entries(target, texts.get(target.follows), groups.get(target.follows, {}),
                                                            lineups.get(target.follows, {})))
            if not target.desired and ledger.record(target.ledger_key) is None:
                continue
        again = evaluate_again(target, outcome, ledger, True, texts.get(target.path))
        if isinstance(again, Problem):
            failed.add(target.path)
            continue
        texts[target.path] = files.Read(again.after, again.bom)
        lineups[target.path] = _lineup_of(again)
        if target.path in paths:
            results.append(again)
    return tuple(results)


def evaluate_again(target: TargetFile, outcome: Outcome, ledger: Ledger, force: bool, read: files.Read | None = None) -> FileResult | Problem:
    """One target of ``outcome`` evaluated anew (its file changed, or with another ``force``)."""
    return evaluate(target, ledger.record(target.ledger_key), outcome.providers, force, outcome.system, read)


def _guarded(target: TargetFile, work: Callable[[], FileResult]) -> FileResult | Problem:
    """``work``'s result for one target, or the Problem that leaves its file untouched."""
    try:
        return work()
    except DocumentError as error:
        return error.problems[0]
    except UnicodeDecodeError:
        return Problem(target.shown, None, None, "not UTF-8 text; left untouched")
    except OSError as error:
        return Problem(target.shown, None, None, f"{error.strerror or error}; left untouched")
    except (RecursionError, MemoryError):
        return Problem(target.shown, None, None, "too large or nested too deeply for projector to edit; left untouched")
    except Exception as error:  # one file's failure is that file's error: the other clients still sync
        return Problem(target.shown, None, None, f"projector failed on this file ({type(error).__name__}: {error}); "
                       "left untouched (please report it)")


def _decide(
    target: TargetFile, record: FileRecord | None, providers: Mapping[str, Provider], force: bool, system: System, read: files.Read | None
) -> FileResult:
    read = read or system.read(target.path)
    parsed = documents.parse(target.format, read.text or "", target.shown)
    parsed, replaced = _stood_in(target, parsed, record)
    placed = _placed(parsed, target, record) if target.kind == "hooks" else {}
    lists = _users_lists(parsed, target, record, placed) if target.kind == "hooks" else ()
    document = HookGroups(parsed.document, _ours, frozenset(lists), placed) if target.kind == "hooks" else parsed
    current = document.servers(target.key)
    providers = {target.client.entry_name(name): provider for name, provider in providers.items()}
    reading = target.client.trust_reading if target.kind == "trust" else target.client.reading
    if target.is_project:
        decision = _with_original_text(prune(target.shown, current, providers, target.shadows, target.readings), document, target.key)
    else:
        owned = record.owned_in(current) if record else {}
        adopted = dict(record.adopted) if record else {}
        recognise = {"servers": lambda name, value: recognisable(value, providers[name], (reading,)),
                     "hooks": lambda name, value: True,  # the view shows only groups that run projector dispatch
                     # a trust entry that holds only the client's keys (a hook the person turned off): ours go beside them
                     "trust": lambda name, value: not reading.normal(value)}[target.kind]
        taken = dict(record.taken) if record else {}
        unsure = _unsure(record, current, reading) if target.kind == "servers" else {}
        decision = reconcile(target.shown, current, target.desired, owned, recognise, reading, force, adopted, target.client.id,
                             taken | unsure, keeps_originals=target.kind == "servers",
                             same_server=_reads_the_same(target.client), kept_by=kept_by(target),
                             named=lambda name: entry_named(target.kind, name, quoted=True),
                             of=("a removed provider" if target.kind == "servers" else "a hook no longer in the model"))
        if target.kind == "trust":  # the client's keys beside projector's stay as they are
            decision = replace(decision, edits=_beside_theirs(decision.edits, current or {}, reading, document, target.key))
        decision = _with_original_text(decision, document, target.key)
        decision = replace(decision, notes=decision.notes + tuple(took_over(name, target.shown)
                                                                  for name in sorted(unsure) if name in decision.taken))
    why = target.client.not_writable(target.path) if read.text is None and target.kind == "servers" and decision.edits else None
    if why is not None:
        raise DocumentError(Problem(target.shown, None, None, f"{why}; nothing written"))
    if target.kind == "servers":
        edited = document.edit(target.key, decision.edits)  # the new text as its check parsed it: the scopes are read there
        text = edited.text
    else:
        edited, text = None, document.edited(target.key, decision.edits) if decision.edits else document.text
    text, local_notes, local_states, pruned = _prune_local_scopes(target, text, providers, record, edited)
    notes, states = decision.notes + local_notes, decision.states + replaced + local_states
    after: str | None = text
    lineup = _lineup(target, parsed if text == (read.text or "") else None, text, decision.owned, placed) if target.kind == "hooks" else {}
    new_record = intent = None
    folders: tuple[str, ...] = ()
    if target.is_project and decision.taken:  # on record before the file is written: `remove` puts them back
        new_record = intent = _pruned_record(target, record, decision, read.text or "", text)
    elif target.is_project:
        new_record = record
    else:  # a project file is never deleted: projector did not create it
        created = _created(record, decision, read.text, current)
        if created == "key" and target.made is not None:
            created = "file"  # another of its targets created it
        folders = (record.folders if record and record.folders else target.made or _missing_folders(target.path)) if created == "file" else ()
        if not decision.owned and created:
            after = _undo_creation(target, text, created)
        if after is None and read.text is not None and kept_whole(target.path):
            after = text  # created by projector, but someone's since: emptied, kept
        new_record = FileRecord(target.client.id, decision.owned, created, adopted=decision.adopted, taken=decision.taken,
                                lists=tuple(e for e in lists if e in decision.owned), lineup=lineup, folders=folders,
                                pruned=pruned) if decision.owned or pruned else None
        intent = replace(_intent(target, record, decision, created, current), lists=lists, lineup=lineup, folders=folders,
                         pruned={**(record.pruned if record else {}), **pruned}, unsure=record.unsure if record else ())
    if read.text is None and after == "":
        after = None
    gone = folders if after is None and not target.is_project else ()
    return FileResult(target, read.text, after, read.bom, new_record, intent, tuple(notes), tuple(states), gone, tuple(current or ()))


def _beside_theirs(edits: Mapping[str, Any], current: Mapping[str, Any], reading: Reading, document: documents.Document,
                   key: tuple[str, ...]) -> dict[str, Any]:
    """``edits`` of entries only some keys of which are projector's (``reading.own_keys``: a trust
    entry): an entry that holds the client's keys too keeps them, byte for byte where the format
    can splice projector's keys alone (TOML), else written anew in their place."""
    spliced = getattr(document, "with_keys", None)
    out: dict[str, Any] = {}
    for name, value in edits.items():
        merged = reading.beside_theirs(current.get(name), value)
        if merged is None or merged == value:
            out[name] = merged
            continue
        ours = {k: (value or {}).get(k) for k in reading.own_keys}
        text = spliced(key, name, ours) if spliced is not None else None
        out[name] = Verbatim(merged, text) if text is not None else merged
    return out


def entry_named(kind: str, name: str, quoted: bool = False) -> str:
    """One of projector's entries as it is named to a person (diff, sync, status and their
    warnings alike): a trust entry as ``hook trust KEY``, which says what its key (a hook file,
    an event, a group and a handler) is; any other by its name (``quoted``: in a sentence,
    ``entry "docs"``, a hook group's ``hook group "PreToolUse"``)."""
    if kind == "trust":
        return f"hook trust {name}"
    if not quoted:
        return name
    return f'hook group "{name}"' if kind == "hooks" else f'entry "{name}"'


def kept_by(target: TargetFile) -> str | None:
    """What keeps a hand edit of one of the target's entries where `projector adopt` cannot (None:
    it can, a server entry). A hook group is the model's to change. A trust hash is the client's
    record that its user trusted a hook group, which it runs only while the hash is that group's:
    the model has no say in it, and the client writes it anew when its user reviews the hook."""
    if target.kind == "servers":
        return None
    if target.kind == "hooks":
        return "change it in the model to keep it"
    client = target.client.name
    return f"{client} runs a hook group only while its hook trust is that group's hash ({client}'s hook review writes it anew)"


def _unsure(record: FileRecord | None, current: Mapping[str, Any] | None, reading: Reading) -> dict[str, Any]:
    """The entries an older ledger records as projector's that may be the user's (``FileRecord.
    unsure``), each taken over now with its original: what the file holds (given back, so kept,
    when projector lets go of it). One of a shape only projector writes (its bridge, a ``?kbs=``
    URL) is its own, as ``reconcile`` finds it with no ledger at all: it keeps no original."""
    if record is None or not record.unsure or not current:
        return {}
    return {name: {"value": current[name]} for name in record.unsure
            if name in current and name not in record.taken and not reading.only_projectors(current[name])}


def _reads_the_same(client: Client) -> Callable[[str, Any, Any], bool]:
    """Whether ``client`` reads the same server from two entries (compile.importing's read side;
    imported only when an update asks: a sync of projector's own entries never does)."""

    def same(name: str, before: Any, after: Any) -> bool:
        from projector.compile.importing import same_server

        return same_server(client, name, before, after)

    return same


def _missing_folders(path: Path) -> tuple[str, ...]:
    """The folders a file's write will make, deepest first."""
    missing, folder = [], path.parent
    while not folder.exists() and folder.parent != folder:
        missing.append(str(folder))
        folder = folder.parent
    return tuple(missing)


def _users_lists(parsed: documents.Document, target: TargetFile, record: FileRecord | None, placed: Mapping[str, int]) -> tuple[str, ...]:
    """The hook file's event lists that are the user's: those the ledger says were there before
    projector's group, and those without one of projector's groups now (``placed``: one whose
    dispatcher a hand edit took out is projector's still)."""
    events = parsed.servers(target.key) or {}
    theirs = {event for event, groups in events.items()
              if isinstance(groups, list) and event not in placed and not any(_ours(g) for g in groups)}
    return tuple(sorted(theirs | set(record.lists if record else ())))


def _placed(parsed: documents.Document, target: TargetFile, record: FileRecord | None) -> dict[str, int]:
    """The events whose list holds projector's group though none of its groups runs the
    dispatcher (a hand edit took it out): event -> its index, told by the groups the ledger's
    lineup had beside it (hookgroups.placed_by). It is drift, as any owned entry changed by
    hand, not a reason to add a second group."""
    if record is None or not record.lineup:
        return {}
    events = parsed.servers(target.key) or {}
    placed = {}
    for event, lineup in record.lineup.items():
        groups = events.get(event)
        at = placed_by(groups, lineup, _ours, entry_hash, _partly_ours) if event in record.entries and isinstance(groups, list) else None
        if at is not None:
            placed[event] = at
    return placed


def _lineup(target: TargetFile, parsed: documents.Document | None, text: str, owned: Mapping[str, str],
            placed: Mapping[str, int]) -> dict[str, tuple[str | None, ...]]:
    """Each owned event's list as the sync leaves it (``FileRecord.lineup``): the hash of every
    group, None in projector's place. ``parsed``: ``text`` already parsed, when it is the file's."""
    if not owned:
        return {}
    events = (parsed or documents.parse(target.format, text, target.shown)).servers(target.key) or {}
    lineup = {}
    for event in owned:
        groups = events.get(event)
        at = index_of(groups, _ours, placed.get(event)) if isinstance(groups, list) else None
        if at is not None:
            lineup[event] = tuple(None if index == at else entry_hash(group) for index, group in enumerate(groups))
    return lineup


def _pruned_record(target: TargetFile, record: FileRecord | None, decision: Decision, before: str, after: str) -> FileRecord:
    """A project file's record after a sync removed entries from it: every entry removed so far,
    the file as it was before the first removal (or before this one, when something else changed
    it since projector last left it), and a hash of the text projector leaves."""
    from projector.core.digest import sha256

    same = record is not None and record.left == sha256(before.encode("utf-8"))
    original = record.original if same and record is not None else before
    pruned = {**(record.pruned if record else {}), **decision.taken}
    return FileRecord(target.client.id, {}, pruned=pruned, original=original, left=sha256(after.encode("utf-8")))


def restored(target: TargetFile, record: FileRecord, system: System) -> FileResult | Problem:
    """A project file with the entries projector removed from it put back: the whole file as it
    was while nothing else changed it since; otherwise each entry the file lacks, as it was."""
    return _guarded(target, lambda: _restore(target, record, system))


def _restore(target: TargetFile, record: FileRecord, system: System) -> FileResult:
    from projector.core.digest import sha256

    read = system.read(target.path)
    if read.text is None:  # gone since: nothing to put back into
        return FileResult(target, None, None, False, None, None, (), ())
    unchanged = record.original is not None and record.left == sha256(read.text.encode("utf-8"))
    text = record.original if unchanged and record.original is not None else read.text
    document = documents.parse(target.format, text, target.shown)
    present = document.servers(target.key) or {}
    missing = {name: given_back(name, None, original)[name] for name, original in record.pruned.items() if name not in present}
    after = document.edited(target.key, missing) if missing else text
    states = tuple((name, "give-back") for name in sorted(record.pruned) if name in missing or unchanged)
    return FileResult(target, read.text, after, read.bom, None, None, (), states)


def _intent(target: TargetFile, record: FileRecord | None, decision: Decision, created: str | None, current: Any) -> FileRecord:
    """What the ledger must say while this file is written, so a sync killed between the file and
    the ledger leaves nothing that is ours unowned: the entries owned before and after, and what
    each edited entry held before (it stays ours until the edit lands)."""
    previous = {name: entry_hash(current[name]) for name in decision.edits if current and name in current}
    entries = {**(record.entries if record else {}), **decision.owned}
    taken = {**(record.taken if record else {}), **decision.taken}
    return FileRecord(target.client.id, entries, created or (record.created if record else None), previous, decision.adopted, taken)


def _with_original_text(decision: Decision, document: documents.Document, key: tuple[str, ...]) -> Decision:
    """The entries taken over at this sync, with their text as the file holds it (before any edit)."""
    fresh = {name: {**original, "text": document.source_of(key, name), **neighbours(document, key, name)}
             for name, original in decision.taken.items() if "text" not in original}
    return replace(decision, taken={**decision.taken, **fresh}) if fresh else decision


def _stood_in(target: TargetFile, document: documents.Document, record: FileRecord | None) -> tuple[documents.Document, tuple]:
    """The file without the entries `import` found under another name than their provider's,
    while the provider's entry stands in for them (kept in ``pruned`` with ``for``): taken out
    before the file's entries are reconciled, so a name one frees is the model's at this sync."""
    if record is None or target.is_project or target.kind != "servers" or not record.pruned:
        return document, ()
    present = document.servers(target.key) or {}
    out: dict[str, None] = {}
    for composite, original in record.pruned.items():
        *key, name = json.loads(composite)
        if "for" in original and original["for"] in (target.desired or {}) and tuple(key) == target.key and present.get(name) == original["value"]:
            out[name] = None
    if not out:
        return document, ()
    return document.edit(target.key, out), tuple((name, "replaced") for name in sorted(out))


def _prune_local_scopes(
    target: TargetFile, text: str, providers: Mapping[str, Provider], record: FileRecord | None,
    parsed: documents.Document | None = None,
) -> tuple[str, tuple, tuple, dict[str, Any]]:
    """Per-folder servers inside a global file (a client's per-folder scope), pruned like project
    files in every folder a binding governs, each kept in the ledger (by its key path and name)
    and put back as it was once no binding of its provider governs that folder (`remove`: none
    does). Likewise an entry `import` found under another name than its provider's: taken out
    while the provider's entry (``for``) stands in for it. ``parsed``: ``text`` already parsed
    (the sync's edit leaves the document its check parsed), else one parse for all of them; an
    edit here gives the next document likewise."""
    notes: list[str] = []
    states: list[tuple[str, str]] = []
    recorded = dict(record.pruned) if record is not None and not target.is_project else {}
    if not target.workspaces and not recorded:
        return text, (), (), {}
    scoped = parsed if parsed is not None else documents.parse(target.format, text, target.shown)
    governed = target.local_scope_keys(scoped.servers) if target.workspaces else ()
    for composite, original in _in_return_order(recorded, scoped):
        *path, name = json.loads(composite)
        key = tuple(path)
        if "for" in original and original["for"] in (target.desired or {}):  # `import`: another name's entry stands in (_stood_in)
            continue
        if "for" not in original and key in governed and name in providers:
            continue  # still shadowing a global entry there: stays out
        present = scoped.servers(key) or {}
        ours = key == target.key and (name in (target.desired or {}) or name in (record.entries if record else {}))
        if name in present and present[name] != original["value"] and ours:
            continue  # projector's own entry holds its name (the model has a provider of that name): it waits for it to go
        del recorded[composite]  # given back; or the user has put another entry in its place since
        back = given_back(name, present.get(name), original) if name not in present else {}
        if back:
            scoped = scoped.edit(key, back)
            text = scoped.text
            states.append((f"{'.'.join(key[:-1])}: {name}" if "for" not in original else name, "give-back"))
    for key in governed:
        where = ".".join(key[:-1])
        local = prune(f"{target.shown} ({where})", scoped.servers(key), providers, target.client.name, target.readings)
        if local.edits:
            local = _with_original_text(local, scoped, key)
            recorded.update((json.dumps([*key, name]), original) for name, original in local.taken.items())
            scoped = scoped.edit(key, local.edits)
            text = scoped.text
        notes += local.notes
        states += [(f"{where}: {name}", state) for name, state in local.states]
    return text, tuple(notes), tuple(states), recorded


def _in_return_order(recorded: Mapping[str, Any], document: documents.Document) -> list[tuple[str, Any]]:
    """The entries taken out (the ledger's ``pruned``), each object's in the order that puts each
    back beside a neighbour (``return_order``)."""
    runs: dict[tuple[str, ...], dict[str, tuple[Any, Any]]] = {}
    composites: dict[tuple[tuple[str, ...], str], str] = {}
    for composite, original in recorded.items():
        *path, name = json.loads(composite)
        runs.setdefault(tuple(path), {})[name] = (original.get("after"), original.get("before"))
        composites[(tuple(path), name)] = composite
    rank = {composites[(key, name)]: at for key, names in runs.items()
            for at, name in enumerate(return_order(names, list(document.servers(key) or {})))}
    return sorted(recorded.items(), key=lambda item: rank[item[0]])


def _created(record: FileRecord | None, decision: Decision, before: str | None, current: Any) -> str | None:
    """What projector brings into being with its first entry in this file."""
    if record is not None and record.entries:
        return record.created
    if not decision.owned:
        return None
    return "file" if before is None else ("key" if current is None else None)


def _settings(target: TargetFile, text: str) -> dict[str, Any]:
    """The file's top level, without the keys its clients write by themselves."""
    value = dict(documents.parse(target.format, text, target.shown).servers(()) or {})
    return {k: v for k, v in value.items() if k not in target.file_keys}


def kept_whole(path: Path) -> bool:
    """Whether a file projector created must be emptied rather than deleted: a link (someone's
    dotfile: nothing is deleted through it) or a file git tracks (asked only before a deletion;
    inside a work tree where git cannot be asked, the answer is yes: kept rather than lost)."""
    import os
    import shutil
    import subprocess

    if path.is_symlink():
        return True
    real = Path(os.path.realpath(path))
    folder = real.parent
    while not (folder / ".git").exists():
        if folder.parent == folder:
            return False
        folder = folder.parent
    git = shutil.which("git")
    if git is None:
        return True
    asked = subprocess.run([git, "-C", str(folder), "ls-files", "--error-unmatch", "--", str(real)], capture_output=True, check=False)
    return asked.returncode == 0


def _undo_creation(target: TargetFile, text: str, created: str) -> str | None:
    """With its last entry gone, take away what projector brought into being."""
    document = documents.parse(target.format, text, target.shown)
    if document.servers(target.key):
        return text  # the user added entries of their own: keep the key
    stripped = document.without_key(target.key)
    if created == "file" and not _settings(target, stripped):
        return None
    return stripped


# --------------------------------------------------------------------------- writing


class Written(Record):
    """What a write left behind: the new ledger and the files as finally written."""

    ledger: Ledger
    results: tuple[FileResult, ...]  # what was finally written (after any redo)
    problems: tuple[Problem, ...]


def write(outcome: Outcome, ledger: Ledger, ledger_file: Path | None = None) -> Written:
    """Carry out the outcome through the system it was computed with. A file its client changed
    since it was read is read again and merged anew (a few times at most): the client's change
    is never overwritten. With ``ledger_file``, the ledger is written there too: first what it
    must say while the files are written (their intents), then the final records."""
    records: dict[str, FileRecord | None] = {}
    results, problems = [], []
    kept = _Kept(outcome.system, ledger_file, ledger)
    kept.intend([r for r in outcome.results if r.changed])
    for result in outcome.results:
        final = _write_one(result, outcome, ledger, kept)
        if isinstance(final, Problem):
            problems.append(final)
            continue
        results.append(final)
        records[final.target.ledger_key] = final.record
    final_ledger = ledger.with_records(records)
    kept.save(final_ledger)
    return Written(final_ledger, tuple(results), tuple(problems))


class _Kept(Record, frozen=False):
    """The ledger as its file holds it during a write."""

    system: System
    file: Path | None
    on_disk: Ledger

    def intend(self, results: list[FileResult]) -> None:
        """Before files are written: their intents on record (one ledger write for all)."""
        self.save(self.on_disk.with_records({r.target.ledger_key: r.intent for r in results if r.intent is not None}))

    def save(self, ledger: Ledger) -> None:
        if self.file is not None and ledger != self.on_disk:
            self.system.write(self.file, ledger.to_json())
            self.on_disk = ledger


def _write_one(result: FileResult, outcome: Outcome, ledger: Ledger, kept: _Kept) -> FileResult | Problem:
    for attempt in range(RETRIES):
        if not result.changed:
            return result
        kept.intend([result])  # a merge redone after a client's write may edit other entries
        try:
            if result.after is None:
                outcome.system.remove(result.path, result.before)
                outcome.system.remove_empty(result.folders)
            else:
                outcome.system.write(result.path, result.after, result.bom, result.before)
            return result
        except files.ChangedMeanwhile:
            import random  # here: its import (seeding included) costs a sync more than its retries ever do
            import time

            time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))  # let the client finish
            again = evaluate_again(result.target, outcome, ledger, outcome.force)
            if isinstance(again, Problem):
                return again
            result = again
        except OSError as error:
            return Problem(result.shown, None, None, f"{error.strerror or error}; left untouched")
    return Problem(result.shown, None, None, "kept changing while projector wrote it; left untouched, sync again")
