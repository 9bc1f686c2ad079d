"""Clients as data: ``clients/<id>.yaml`` descriptors, validated by ``schemas/client.schema.json``.

A descriptor says everything projector knows of a client, both ways:
- where its file is (per platform), which variables move it, in which format, under which key;
- how an entry is spelled (two small jinja2 templates that render JSON, compiled into programs
  a sync runs without jinja2: compile/template.py) and how one is read back (``entry``: its
  URL keys, command shape, how it passes variables, keys the client adds);
- what the client can take (``remote``), how a stdio server gets its environment (``stdio_env``),
  and what a person should know of it (``notes``).
- where it reads user-level hooks, which events it has and how it blocks (``hooks``), and how
  projector's one group per event is spelled (the ``hook`` template).
Nothing here knows a client by name. A quirk that data cannot say is one named function in
compile/quirks.py that a descriptor refers to by name.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import sys
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from projector.compile import template
from projector.compile.plan import HttpServer, Plan, Server, StdioServer, for_client
from projector.core.record import Factory, Record, replace
from projector.core.tools import ToolRule
from projector.core.variables import folder_or_none

_VARIABLE = re.compile(r"\$\{?(\w+)\}?")
SECRET_LOOKING = re.compile(r"TOKEN|SECRET|KEY|AUTH|PASSWORD|CREDENTIAL", re.IGNORECASE)  # what a sanitizing client drops


def platform() -> str:
    """The platform whose paths a descriptor gives: ``macos`` or ``linux`` (every other Unix
    keeps its files where Linux does)."""
    return "macos" if sys.platform == "darwin" else "linux"


class AuthTable(Record):
    """A table an HTTP entry says how it authenticates in (a named list's ``[mcp_servers.auth]``),
    told apart by its form (``when``: keys and the values they hold): the OAuth the client signs
    in with, or the entry's own keys (headers, the token's variable) written inside it."""

    key: str
    oauth_when: tuple[tuple[str, Any], ...] | None  # None: the client has no OAuth form
    oauth_settings: tuple[tuple[str, str], ...] = ()  # (the model's oauth setting, the table's key holding it)
    pre_registered: tuple[tuple[str, Any], ...] = ()  # what the client uses for a pre-registered client_id when unsaid
    inline_when: tuple[tuple[str, Any], ...] | None = None  # None: the table never holds the entry's own keys

    def form(self, table: Any) -> str | None:
        """``oauth``, ``inline``, or None: a table of neither form (or no table)."""
        if not isinstance(table, Mapping):
            return None
        matches = lambda when: when is not None and all(table.get(k) == v for k, v in when)  # noqa: E731
        return "oauth" if matches(self.oauth_when) else "inline" if matches(self.inline_when) else None


def _auth_table(data: Mapping[str, Any] | None) -> AuthTable | None:
    if not data:
        return None
    oauth, inline = data.get("oauth"), data.get("inline")
    return AuthTable(
        key=data["key"],
        oauth_when=tuple(oauth["when"].items()) if oauth else None,
        oauth_settings=tuple(oauth["settings"].items()) if oauth else (),
        pre_registered=tuple((oauth.get("pre_registered") or {}).items()) if oauth else (),
        inline_when=tuple(inline["when"].items()) if inline else None,
    )


class Reading(Record):
    """How a client's entry is read back: what it connects to, and what it passes on."""

    url_keys: tuple[str, ...]  # the keys that hold a remote entry's URL, the first present wins
    command_key: str
    args_key: str
    command_form: str  # split: program + args | array: one array | nested: {path, args} under command_key
    env_key: str | None  # where a stdio entry lists variables for the server: {NAME: value} or [NAME]
    added_keys: tuple[str, ...]  # keys the client writes into entries by itself, whatever their value
    default_values: tuple[tuple[str, Any], ...]  # keys the client fills in with the value their absence means
    # The only keys where a client that expands no variable reads one (by name); empty: none known.
    # Set, a ``${X}`` in any other value (a header) is sent as that text.
    variable_keys: tuple[str, ...] = ()
    auth: AuthTable | None = None  # an HTTP entry's table of how it authenticates; None: the client has none
    # Set: the only keys of an entry that are projector's (a trust entry's); the others are the
    # client's record of its user's choices (Codex's enabled): they neither drift nor are overwritten.
    own_keys: tuple[str, ...] = ()

    def command_of(self, value: Any) -> tuple[str, list[Any]] | None:
        """A stdio entry's program and arguments; None for anything else."""
        if not isinstance(value, Mapping):
            return None
        command, args = value.get(self.command_key), value.get(self.args_key) or []
        if self.command_form == "array":
            if not isinstance(command, list) or not command:
                return None
            command, args = command[0], command[1:]
        elif self.command_form == "nested":
            if isinstance(command, Mapping):  # an older spelling: {"command": {"path", "args"}}
                command, args = command.get("path"), command.get("args") or []
        if not isinstance(command, str) or not isinstance(args, list):
            return None
        return command, args

    def url_of(self, value: Any) -> str | None:
        """An entry's URL as written (its query kept), under the first of the URL keys it has."""
        if not isinstance(value, Mapping):
            return None
        return next((value[k] for k in self.url_keys if isinstance(value.get(k), str)), None)

    def endpoint(self, value: Any) -> tuple[str, ...]:
        """What an entry connects to: ("url", u) without query, or ("command", name, *args)."""
        if not isinstance(value, Mapping):
            return ()
        url = self.url_of(value)
        if url is not None:
            return ("url", without_query(url))
        found = self.command_of(value)
        if found is None:
            return ()
        return ("command", posixpath.basename(found[0]), *map(str, found[1]))

    def runs_bridge(self, value: Any) -> bool:
        """Whether an entry is projector's bridge (`projector mcp`, any path, any provider): an
        entry only projector writes."""
        from projector.core.invocation import BRIDGE

        return self.endpoint(value)[:3] == ("command", "projector", BRIDGE)

    def only_projectors(self, value: Any) -> bool:
        """Whether an entry has a shape only projector (or its predecessor) writes: its bridge,
        or a URL narrowed to knowledge bases (``?kbs=``). Found where no ledger says so (a lost
        state folder, a 0.3.0 ledger), it is projector's own: no original of the user's to keep."""
        from projector.core.scope import kbs_in_url

        url = self.url_of(value)
        return self.runs_bridge(value) or (url is not None and kbs_in_url(url) is not None)

    def passed(self, value: Any) -> tuple[str, ...]:
        """The variables a stdio entry hands its server by name."""
        listed = value.get(self.env_key) if isinstance(value, Mapping) and self.env_key else None
        if isinstance(listed, Mapping):
            return tuple(str(name) for name in listed)
        if isinstance(listed, list):
            return tuple(i if isinstance(i, str) else str(i.get("name")) for i in listed if isinstance(i, (str, Mapping)))
        return ()

    def normal(self, value: Any) -> Any:
        """The entry without what the client adds by itself: what decides drift and adoption."""
        if not isinstance(value, Mapping):
            return value
        if self.own_keys:
            return {k: value[k] for k in self.own_keys if k in value}
        defaults = dict(self.default_values)
        return {k: v for k, v in value.items() if k not in self.added_keys and not (k in defaults and defaults[k] == v)}

    def beside_theirs(self, present: Any, value: Any) -> Any:
        """What projector writes for an entry (``value``; None: takes it out) where ``present``
        stands: with ``own_keys``, the keys of ``present`` that are not projector's stay, in their
        place (None when none are left)."""
        if not self.own_keys or not isinstance(present, Mapping) or not (isinstance(value, Mapping) or value is None):
            return value
        ours = value or {}
        kept = {k: ours[k] if k in ours else v for k, v in present.items() if k in ours or k not in self.own_keys}
        merged = kept | {k: v for k, v in ours.items() if k not in kept}
        return merged or None


def without_query(url: str) -> str:
    return url.partition("#")[0].partition("?")[0].rstrip("/")


class ProjectFile(Record):
    """A file in a workspace that the client reads servers from (a project-level config)."""

    path: str  # relative to a workspace root
    format: str
    servers_key: tuple[str, ...]


class HookFile(Record):
    """Where a client reads user-level command hooks, and how projector's group is spelled."""

    dirs: tuple[str, ...]  # this platform's; empty: the client's own folders
    file: str
    format: str
    key: tuple[str, ...]  # event -> list of groups
    events: tuple[tuple[str, str], ...]  # projector's event -> the client's name for it
    block: str  # how the dispatcher blocks in this client: exit-2 | json
    trust_function: str | None = None  # compile/quirks.py: entries the client needs before it runs them
    trust_key: tuple[str, ...] = ()  # where those go in its global file
    trust_fields: tuple[str, ...] = ()  # the keys of such an entry that are projector's (the others: the client's)

    def native(self, event: str) -> str | None:
        return dict(self.events).get(event)


class FolderTrust(Record):
    """Where a client records the folders it trusts (see schemas/client.schema.json)."""

    file: str  # beside its settings file
    untrusted: str  # what it does in a folder it does not trust
    variable: str | None = None  # names the file instead


class ToolFilter(Record):
    """How a client narrows a server's tools in its own entry (descriptor's ``tool_filter``):
    the entry's keys for lists of exact tool names."""

    allow: str | None  # the key of the only tools offered; None: the client has no allow list
    deny: str | None  # the key of the tools hidden (it wins over allow); None: no deny list

    def keys(self, rule: ToolRule) -> dict[str, list[str]] | None:
        """What the entry says for ``rule``; None when these lists cannot say it (a glob needs
        the server's tool names, which a sync does not know; an allow rule needs an allow list,
        a deny rule a deny list)."""
        if not rule.exact:
            return None
        if rule.allow is not None:
            return None if self.allow is None else {self.allow: [n for n in rule.allow if n not in rule.deny]}
        if not rule.deny:
            return {}
        return None if self.deny is None else {self.deny: list(rule.deny)}


class Client(Record):
    """One client as its descriptor (clients/<id>.yaml) describes it, for this platform."""

    id: str
    name: str
    format: str  # json | json-comments | jsonc | toml | yaml
    dirs: tuple[str, ...]  # this platform's
    env_files: tuple[str, ...]  # dotenv files the client reads the variables of dirs from, when unset
    files: tuple[str, ...]
    create: str | None  # None: never created by projector (the client writes it first, with settings of its own)
    legacy: tuple[str, ...]  # older files the client reads when none of files exists
    file_variables: tuple[str, ...]  # variables that name the file itself (the first set wins over dirs)
    servers_key: tuple[str, ...]
    env_reference: str | None
    stdio_env: str  # inherit | listed | sanitized
    stdio_env_kept: tuple[str, ...] | None  # a client that clears the environment: what it keeps (None: not known to clear it)
    remote: str  # token | no-token | none
    lowercase_names: bool
    templates: tuple[tuple[str, str], ...]  # (transport, jinja2 source)
    reading: Reading
    file_keys: tuple[str, ...]  # top-level keys the client writes into a file by itself, carrying no setting
    project_files: tuple[ProjectFile, ...]
    local_scopes: tuple[tuple[str, ...], ...]  # key paths with "{workspace}" in the global file
    detect_paths: tuple[str, ...]
    detect_binaries: tuple[str, ...]
    notes: tuple[str, ...]  # what doctor says of this client
    hooks: HookFile | None = None  # None: projector writes no hooks for it
    tool_filter: ToolFilter | None = None  # None: it cannot narrow a server's tools (a provider with a rule gets the bridge)
    programs: Mapping[str, template.Program | None] = Factory(dict, compare=False)  # by template
    folder_trust: FolderTrust | None = None  # a client that turns MCP servers off in folders it does not trust
    tokens_by_name: bool = False  # it sends the OAuth tokens it keeps by server name to whatever URL that name has now
    passes_unset: str | None = None  # what a server gets for a passed variable that is unset: skipped | empty | as-text (None: not known)

    @property
    def trust_reading(self) -> Reading:
        """How its hook trust entries are read back: only their keys that are projector's count."""
        return replace(self.reading, own_keys=self.hooks.trust_fields if self.hooks else ())

    def trusts(self, folder: str, environ: Mapping[str, str]) -> bool | None:
        """Whether the client trusts ``folder`` (canonical), as its trust file says (the longest
        matching rule wins; TRUST_PARENT trusts the rule's parent); None: no trust file to ask."""
        if self.folder_trust is None:
            return None
        environ = self._environ(environ)
        named = environ.get(self.folder_trust.variable or "")
        settings = self.global_file(environ)
        path = Path(named) if named else (settings.parent / self.folder_trust.file if settings else None)
        try:
            rules = json.loads(path.read_text(encoding="utf-8")) if path is not None else {}
        except (OSError, ValueError):
            rules = {}
        longest, level = -1, None
        for rule, said in (rules.items() if isinstance(rules, dict) else ()):
            place = os.path.realpath(os.path.dirname(rule) if said == "TRUST_PARENT" else rule)
            if (folder == place or folder.startswith(place.rstrip("/") + "/")) and len(rule) > longest:
                longest, level = len(rule), said
        return level in ("TRUST_FOLDER", "TRUST_PARENT")

    def folder(self, environ: Mapping[str, str]) -> Path | None:
        environ = self._environ(environ)
        return next((p for p in (expand(d, environ) for d in self.dirs) if p is not None), None)

    def _environ(self, environ: Mapping[str, str]) -> Mapping[str, str]:
        """``environ``, plus what the client's own dotenv files say of the variables it lacks."""
        missing = {name for name in self.variables() if not environ.get(name)}
        files = [p for p in (expand(f, environ) for f in self.env_files) if p is not None and p.is_file()] if missing else []
        if not files:
            return environ
        from dotenv import dotenv_values

        found: dict[str, str] = {}
        for path in files:
            found.update({k: v for k, v in dotenv_values(path).items() if k in missing and v and k not in found})
        return {**found, **environ}

    def hook_file(self, environ: Mapping[str, str]) -> Path | None:
        """The file this client reads its user-level hooks from (None: it has none projector writes)."""
        if self.hooks is None:
            return None
        if not self.hooks.dirs:
            folder = self.folder(environ)
        else:
            environ = self._environ(environ)
            folder = next((p for p in (expand(d, environ) for d in self.hooks.dirs) if p is not None), None)
        return folder / self.hooks.file if folder is not None else None

    def hook_entries(self, events: set[str], command_for: Callable[[str, str], str]) -> tuple[dict[str, Any], tuple[str, ...]]:
        """This client's hook groups (by its name of each event) for projector's ``events``; and
        why an event has none here. ``command_for(event, block)``: the dispatcher's command line."""
        if self.hooks is None:
            return {}, ((f"{self.name} gets no hooks from projector: its hook files are not known here ({', '.join(sorted(events))} "
                         "hooks do not run there)"),) if events else ()
        entries, warnings = {}, []
        for event in sorted(events):
            native = self.hooks.native(event)
            if native is None:
                warnings.append(f"{self.name} has no {event} hooks: the {event} hooks of the model do not run there")
            else:
                entries[native] = self._rendered("hook", {"command": command_for(event, self.hooks.block)})
        return entries, tuple(warnings)

    def global_file(self, environ: Mapping[str, str]) -> Path | None:
        """The file this client reads its user-level servers from: the one a variable names, else
        the first of its files that exists in its folder."""
        named = self._named_file(environ)
        if named is not None:
            return named
        folder = self.folder(environ)
        if folder is None:
            return None
        return next((folder / f for f in self.files if (folder / f).exists()), folder / (self.create or self.files[0]))

    def not_writable(self, path: Path) -> str | None:
        """Why projector leaves this client's absent global file ``path`` uncreated (None: it may
        create it)."""
        legacy = next((path.parent / name for name in self.legacy if (path.parent / name).exists()), None)
        if legacy is not None:
            return (f"{self.name} reads {legacy.name} here, an older format projector does not write, while {path.name} is absent: "
                    f"convert it to {path.name} (the client offers to), then sync again")
        if self.create is None:
            return f"{self.name} writes {path.name} itself when it first starts (with settings of its own): start it once, then sync again"
        return None

    def candidate_files(self, environ: Mapping[str, str]) -> tuple[Path, ...]:
        """Every file ``global_file`` may choose, for the fast path to watch."""
        named = self._named_file(environ)
        if named is not None:
            return (named,)
        folder = self.folder(environ)
        return tuple(folder / name for name in self.files + self.legacy) if folder is not None else ()

    def _named_file(self, environ: Mapping[str, str]) -> Path | None:
        environ = self._environ(environ)
        return next((p for p in (expand(f"${name}", environ) for name in self.file_variables) if p is not None), None)

    def variables(self) -> tuple[str, ...]:
        """The environment variables that move this client's files or tell it is installed."""
        named = tuple(f"${name}" for name in self.file_variables)
        return tuple(dict.fromkeys(name for text in named + self.dirs + self.detect_paths for name in _VARIABLE.findall(text)))

    def detected(self, environ: Mapping[str, str], which: Callable[[str], str | None]) -> bool:
        paths = (expand(p, environ) for p in self.detect_paths)
        return any(p is not None and p.exists() for p in paths) or any(which(b) for b in self.detect_binaries)

    def entry_name(self, provider: str) -> str:
        return provider.lower() if self.lowercase_names else provider

    def entries(self, compiled: Plan) -> tuple[dict[str, Any], tuple[str, ...]]:
        """This client's entries for a plan (by entry name), and why a provider has none here."""
        servers, warnings = self.servers(compiled)
        return {self.entry_name(name): self.render(server, name) for name, server in servers}, warnings

    def servers(self, compiled: Plan) -> tuple[tuple[tuple[str, Server], ...], tuple[str, ...]]:
        """The server this client gets for each provider of a plan (the bridge where it cannot
        take the HTTP entry), and why a provider has none here."""
        return for_client(compiled, self.remote, self.name, self.tool_keys, self.tokens_by_name)

    def tool_keys(self, rule: ToolRule) -> dict[str, list[str]] | None:
        """What this client's entry says for tool rule ``rule``; None: its filter cannot say it."""
        return self.tool_filter.keys(rule) if self.tool_filter is not None else None

    def render(self, server: Server, name: str = "") -> dict[str, Any]:
        """The entry for ``server`` in this client's dialect, as a plain (ordered) value."""
        entry = self._entry(server, name)
        if isinstance(server, HttpServer) and server.tools is not None:
            said = self.tool_keys(server.tools)
            if said is None:
                raise RuntimeError(f"clients/{self.id}.yaml: {self.name} cannot say the tool rule {server.tools.shown()}")
            entry.update(said)
        return entry

    def _entry(self, server: Server, name: str) -> dict[str, Any]:
        """The entry its template renders for ``server``."""
        transport = "stdio" if isinstance(server, StdioServer) else "http"
        context: dict[str, Any]
        if isinstance(server, StdioServer):
            context = {"command": server.command, "args": list(server.args), "pass_env": self.passed_names(server), "name": name}
        else:
            assert isinstance(server, HttpServer)
            context = {"url": server.url, "token_env": server.token_env, "name": name}
        if transport not in dict(self.templates):
            raise RuntimeError(f"clients/{self.id}.yaml: {self.name} takes no {transport} entries")
        return self._rendered(transport, context)

    def _rendered(self, transport: str, context: Mapping[str, Any]) -> dict[str, Any]:
        """The template of ``transport`` rendered with ``context``, as a plain (ordered) value: by
        its compiled program where it has one, else by jinja2."""
        program = self.programs.get(transport)
        if program is not None:
            text = template.run(program, context, {"env_ref": self.env_ref, "env_refs": self.env_refs})
        else:
            text = self.jinja2_text(transport, context)
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise RuntimeError(f"clients/{self.id}.yaml: the {transport} template renders invalid JSON: {exc}\n{text}") from None

    def jinja2_text(self, transport: str, context: Mapping[str, Any]) -> str:
        """The template rendered by jinja2 (what a program stands for)."""
        source = dict(self.templates)[transport]
        return _template(self.id, transport, source).render(env_ref=self.env_ref, env_refs=self.env_refs, **context)

    def compiled(self) -> dict[str, template.Program | None]:
        """Each template's program (jinja2's parser reads it)."""
        return {transport: template.compile(source, transport) for transport, source in self.templates}

    def passed_names(self, server: StdioServer) -> list[str]:
        """The variables the entry of ``server`` passes: those it needs, and those a sign-in the
        bridge starts reads (a display, $BROWSER, the session bus) where this client would drop
        them and leaves an unset one unset. Set to "" or to the text ``${DISPLAY}`` instead, one
        would mislead: an empty XAUTHORITY hides ~/.Xauthority from the browser, a made-up
        DISPLAY tells the bridge a browser can open."""
        quiet = self.passes_unset == "skipped"
        extra = [name for name in server.sign_in_env if quiet and self.drops(name)]
        return list(dict.fromkeys([*server.pass_env, *extra]))

    def drops(self, variable: str) -> bool:
        """Whether ``variable`` fails to reach a stdio server whose entry does not pass it (a
        client that clears the environment and keeps others, or sanitizes it by name)."""
        return variable not in self.server_environment({}, {variable: "set"})

    def can_pass(self, variable: str) -> bool:
        """Whether a stdio entry of this client can hand ``variable`` to its server: what its
        template writes for it, read back."""
        try:
            return variable in self.reading.passed(self.render(StdioServer("projector", (), (variable,))))
        except RuntimeError:  # its template needs a reference the client has no syntax for
            return False

    def token_key(self) -> str | None:
        """The key where this client's HTTP entry names its token's variable (Codex's
        bearer_token_env_var): what its template writes for one, read back; None when the token
        goes elsewhere (a header referring to it) or the client takes no HTTP entry."""
        marker = "PROJECTOR_TOKEN_KEY"
        try:
            written = self.render(HttpServer("https://x.invalid/", marker))
        except RuntimeError:
            return None
        return next((key for key, value in written.items() if value == marker), None)

    def server_environment(self, entry: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
        """The environment this client gives the stdio server of ``entry`` when it starts from
        ``environ``: what it keeps of its own (all of it; what a clearing client keeps; all but
        the secret-looking names), then what the entry passes (by name, or by value with the
        client's references expanded)."""
        if self.stdio_env_kept is not None:
            result = {name: environ[name] for name in self.stdio_env_kept if name in environ}
        elif self.stdio_env == "sanitized":
            result = {name: value for name, value in environ.items() if not SECRET_LOOKING.search(name)}
        else:
            result = dict(environ)
        listed = entry.get(self.reading.env_key) if self.reading.env_key else None
        if isinstance(listed, Mapping):
            result.update((str(name), self._expanded(str(value), environ)) for name, value in listed.items())
        else:
            result.update((name, environ[name]) for name in self.reading.passed(entry) if name in environ)
        return result

    def _expanded(self, value: str, environ: Mapping[str, str]) -> str:
        if self.env_reference is None:
            return value  # no expansion in this client: the value is literal
        pattern = re.escape(self.env_reference).replace("NAME", r"(\w+)")
        return re.sub(pattern, lambda match: environ.get(match.group(1), ""), value)

    def env_ref(self, name: str) -> str:
        if self.env_reference is None:
            raise RuntimeError(f"clients/{self.id}.yaml: {self.name} has no way to reference a variable")
        return self.env_reference.replace("NAME", name)

    def env_refs(self, names: list[str]) -> dict[str, str]:
        return {name: self.env_ref(name) for name in names}


def expand(template: str, environ: Mapping[str, str]) -> Path | None:
    """A descriptor's folder (``~/x`` or ``$VAR/x``); None when a variable it names is unset or
    empty, or when it is not absolute (clients ignore a relative value, or read it against a
    folder projector does not know)."""
    folder = folder_or_none(template, environ)
    return Path(folder) if folder is not None and os.path.isabs(folder) else None


@cache
def _template(client_id: str, transport: str, source: str) -> Any:
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    # jinja2's own tojson escapes <>&' for HTML; a config file wants plain JSON.
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env.from_string(source)


@cache
def registry() -> dict[str, Client]:
    """Every descriptor (projector's clients/ and the user's own), by id, validated and its
    templates compiled (once per content of the files)."""
    from projector.core.resources import descriptor_files

    return {item["data"]["id"]: client(item["data"], item["programs"]) for item in _compiled_descriptors(descriptor_files())}


def _compiled_descriptors(files: list[Path]) -> list[dict[str, Any]]:
    """The descriptors' data and programs, kept while the files' bytes are the same (core.cache):
    every `projector sync` needs them, and YAML, JSON Schema and jinja2 cost more than the sync.
    Keyed by content, not stat: a checkout that rewrites the files unchanged keeps them."""
    from projector import __version__
    from projector.core.cache import kept
    from projector.core.locations import state_folder

    texts = [[str(path), path.read_text(encoding="utf-8")] for path in files]  # as JSON gives them back

    def compute() -> list[dict[str, Any]]:
        found = []
        for path, text in texts:
            data = validated(Path(path), text)
            found.append({"data": data, "programs": client(data).compiled()})
        return found

    cache = Path(state_folder(os.environ)) / "clients-cache.json"
    return kept(cache, [__version__, _CACHED_FORM, texts], compute)


_CACHED_FORM = "data+programs"  # what each cached descriptor holds: a cache of another form is not read


def validated(path: Path, text: str | None = None) -> dict[str, Any]:
    """A descriptor's data (``text``: the file's, when already read), checked against the schema;
    RuntimeError names the file and key."""
    from ruamel.yaml import YAML

    from projector.core.resources import validator

    data = YAML(typ="safe").load(path.read_text(encoding="utf-8") if text is None else text)
    errors = sorted(validator("client").iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        where = ".".join(str(p) for p in errors[0].absolute_path)
        raise RuntimeError(f"{path}: {where}: {errors[0].message}")
    if path.stem != data["id"]:
        raise RuntimeError(f"{path}: id: {data['id']!r} must be the file's name ({path.stem!r})")
    return data


def _per_platform(value: Any) -> tuple[str, ...]:
    """A list for every platform, or ``{linux: [...], macos: [...]}``."""
    return tuple(value.get(platform()) or () if isinstance(value, Mapping) else value or ())


def _hook_file(data: Mapping[str, Any] | None) -> HookFile | None:
    if data is None:
        return None
    trust = data.get("trust") or {}
    return HookFile(
        dirs=_per_platform(data.get("dirs")),
        file=data["file"],
        format=data.get("format", "json"),
        key=tuple(data.get("key") or ("hooks",)),
        events=tuple(data["events"].items()),
        block=data.get("block", "exit-2"),
        trust_function=trust.get("function"),
        trust_key=tuple(trust.get("key") or ()),
        trust_fields=tuple(trust.get("fields") or ()),
    )


def client(data: Mapping[str, Any], programs: Mapping[str, template.Program | None] | None = None) -> Client:
    """A Client from a descriptor's (validated) data, and its templates' programs when compiled."""
    detect = data.get("detect") or {}
    entry = data.get("entry") or {}
    command = entry.get("command") or {}
    files = tuple(data["global"]["files"])
    return Client(
        id=data["id"],
        name=data["name"],
        format=data["format"],
        dirs=_per_platform(data["global"]["dirs"]),
        env_files=tuple(data["global"].get("env_files") or ()),
        files=files,
        create=data["global"].get("create", files[0]),
        legacy=tuple(data["global"].get("legacy") or ()),
        file_variables=tuple(data["global"].get("file_variables") or ()),
        servers_key=tuple(data["servers_key"]),
        env_reference=data["env_reference"],
        stdio_env=data["stdio_env"],
        remote=data.get("remote", "token"),
        lowercase_names=data.get("entry_names") == "lowercase",
        stdio_env_kept=tuple(data["stdio_env_kept"]) if "stdio_env_kept" in data else None,
        templates=tuple(sorted(data["templates"].items())),
        reading=Reading(
            url_keys=tuple(entry.get("url_keys") or ("url",)),
            command_key=command.get("key", "command"),
            args_key=command.get("args", "args"),
            command_form=command.get("form", "split"),
            env_key=entry.get("env_key"),
            added_keys=tuple(entry.get("added_keys") or ()),
            default_values=tuple((entry.get("default_values") or {}).items()),
            variable_keys=tuple(entry.get("variable_keys") or ()),
            auth=_auth_table(entry.get("auth")),
        ),
        file_keys=tuple(data.get("file_keys") or ()),
        project_files=tuple(
            ProjectFile(p["path"], p["format"], tuple(p["servers_key"])) for p in data.get("project_files") or ()
        ),
        local_scopes=tuple(tuple(scope) for scope in data.get("local_scopes") or ()),
        detect_paths=_per_platform(detect.get("paths")),
        detect_binaries=tuple(detect.get("binaries") or ()),
        notes=tuple(data.get("notes") or ()),
        hooks=_hook_file(data.get("hooks")),
        tool_filter=ToolFilter(data["tool_filter"].get("allow"), data["tool_filter"].get("deny")) if "tool_filter" in data else None,
        programs=programs or {},
        folder_trust=FolderTrust(**data["folder_trust"]) if data.get("folder_trust") else None,
        tokens_by_name=data.get("oauth_tokens") == "by-name",
        passes_unset=data.get("passes_unset"),
    )


def selected(
    ids: tuple[str, ...] | None, environ: Mapping[str, str], which: Callable[[str], str | None] | None = None
) -> list[Client]:
    """The clients named (in registry order), or those found on this machine."""
    from projector.core.locations import on_path

    clients = registry()
    if ids is not None:
        return [c for i, c in clients.items() if i in ids]
    finder = which or (lambda binary: on_path(binary, environ))
    return [c for c in clients.values() if c.detected(environ, finder)]
