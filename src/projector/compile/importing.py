"""`projector import`: the MCP entries the clients already have, as providers of the model (pure
but for reading the clients' files).

Each client's global file and its per-folder scopes are read the way the descriptor reads an
entry back (``Reading``: its URL keys, its command shape, where it lists variables). The same
server in several clients (the same URL without its query, or the same command, args and cwd)
becomes one provider. A secret written in an entry (a bearer token in a header, an env value that
looks like one) never enters the model: the provider names a variable instead, and the report
tells the user to set it. What the model cannot say (a setting projector's entry has no place
for, a turned-off entry, another header) is listed in the report, never dropped silently; the
entry itself stays as it is in its file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult

from projector.compile import documents
from projector.compile.clients import SECRET_LOOKING, AuthTable, Client, without_query
from projector.compile.plan import HttpServer, StdioServer
from projector.core import files
from projector.core.checking import HEX_OR_UUID, PROVIDER_NAME, VARIABLE_NAME, looks_like_token
from projector.core.errors import display_path, shown_name
from projector.core.keys import scope_keys
from projector.core.record import Factory, Record, replace

# How clients spell a reference to a variable: ${VAR}, ${env:VAR}, {env:VAR}, $VAR.
REFERENCE = re.compile(r"^\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}$|^\{env:([A-Za-z_][A-Za-z0-9_]*)\}$|^\$([A-Za-z_][A-Za-z0-9_]*)$")
# Keys that say how to reach a server, what it is, or what projector writes itself: read, not lost.
UNDERSTOOD = {"type", "transport", "headers", "http_headers", "enabled", "name", "description", "cwd", "env"}
TURNED_OFF = (("disabled", True), ("enabled", False))
# A name that says its value is a digest or a revision: plainly no secret (the corpus's Codex
# entry passes NODE_REPL_TRUSTED_BROWSER_CLIENT_SHA256S, a SHA-256).
DIGEST_NAME = re.compile(r"SHA\d*|HASH|DIGEST|CHECKSUM|REVISION|COMMIT", re.IGNORECASE)


class Found(Record):
    """One entry in one client's file."""

    client: Client
    path: Path
    shown: str
    name: str
    value: Any
    folder: str | None = None  # the folder of a per-folder scope (a descriptor's local_scopes)


class Server(Record):
    """What an entry reaches, client-neutral: the provider it becomes, in the model's words."""

    identity: tuple[Any, ...]  # ("url", without query) or ("command", command, args, cwd)
    spec: dict[str, Any]  # the provider's keys in the model
    secrets: tuple[str, ...] = ()  # variables the user must set: the entry held their value
    unsaid: tuple[str, ...] = ()  # what of the entry the model cannot say
    notes: tuple[str, ...] = ()  # what the user should know of how the entry was read (it is still imported)


class Claim(Record):
    """An entry the import makes projector's (the user said so): its file, client and name."""

    path: Path
    client: Client
    name: str
    value: Any
    text: str | None
    replaced_by: str | None = None  # another name's entry, the provider's, stands in for it there


class Imported(Record):
    """What an import adds to the model, the entries it claims, and what it tells the user."""

    providers: dict[str, dict[str, Any]] = Factory(dict)  # new providers, by name
    bindings: dict[str, dict[str, Any]] = Factory(dict)  # folder -> provider -> settings
    claims: tuple[Claim, ...] = ()
    report: tuple[str, ...] = ()


def found_entries(clients: list[Client], environ: Mapping[str, str]) -> tuple[list[Found], list[str]]:
    """Every entry of every client's global file and per-folder scopes; and the files that could
    not be read (each with why)."""
    found: list[Found] = []
    problems: list[str] = []
    home = Path(environ.get("HOME") or Path.home())
    for client in clients:
        path = client.global_file(environ)
        if path is None or not path.is_file():
            continue
        shown = display_path(path, home)
        try:
            document = documents.parse(client.format, files.read_text(path).text or "", shown)  # a byte-order mark set aside, as sync does
            entries = document.servers(client.servers_key) or {}
            found += [Found(client, path, shown, str(name), value) for name, value in entries.items()
                      if not client.reading.runs_bridge(value)]  # projector's own, from an earlier import and sync
            for scope in scope_keys(client.local_scopes, document.servers):
                local = document.servers(scope.key) or {}
                found += [Found(client, path, shown, str(name), value, scope.folder) for name, value in local.items()]
        except Exception as error:  # one file's failure is reported; the other clients are still read
            problems.append(f"{shown}: {getattr(error, 'problems', [error])[0]}; its entries were not read")
    return found, problems


def server_of(entry: Found) -> Server | str:
    """The provider an entry becomes, or why it cannot become one."""
    value, client = entry.value, entry.client
    if not isinstance(value, Mapping):
        return "not an entry projector can read (not a mapping)"
    if any(value.get(key) == off for key, off in TURNED_OFF):
        return "turned off in the client; left as it is"
    reading = client.reading
    value, oauth, unread = _authentication(reading.auth, value)
    if isinstance(oauth, str):
        return oauth
    entry = replace(entry, value=value)
    url = reading.url_of(value)
    known = UNDERSTOOD | set(reading.url_keys) | {reading.command_key, reading.args_key} | set(reading.added_keys)
    known |= {key for key in (reading.env_key, client.token_key()) if key}
    usual = dict(reading.default_values) | _written(client, remote=url is not None) | {"disabled": False}
    unsaid = [f"{key}" for key in value if key not in known and not (key in usual and usual[key] == value[key])] + unread
    if url is None and oauth is not None and reading.auth is not None:
        unsaid.append(f"{reading.auth.key} (OAuth on an entry without a URL)")
    if url is not None and _transport(value):  # projector's entries speak streamable HTTP: written so, it would stop working
        unsaid.append("transport SSE (projector's entry would speak streamable HTTP)")
    if url is not None:
        return _remote(entry, url, unsaid, oauth)
    command = reading.command_of(value)
    if command is None:
        return "neither a URL nor a command projector can read; left as it is"
    args = [str(a) for a in command[1]]
    secret = next((i for i, arg in enumerate(args) if secret_argument(args, i)), None)
    if secret is not None:
        return (f"argument {secret + 1} looks like a secret{_why_secret(args[secret])}, and the model's args name no variables; "
                "left as it is (put the secret in a variable the server reads, then import again)")
    return _local(entry, command[0], args, unsaid)


def same_server(client: Client, name: str, before: Any, after: Any) -> bool:
    """Whether entry ``after`` is ``before`` in another spelling: the client reads the same server
    from both (what ``server_of`` gives back is equal: the same URL or command, args, cwd, env and
    token variable, with nothing the model cannot say), over the same transport: an SSE entry
    written as streamable HTTP is a real change, and so is a URL under another of the client's
    URL keys (some clients tell the transport by the key: "url" is SSE, "httpUrl" streamable
    HTTP); and not one its client may skip for lack of a ``type`` the other spells out (one
    client skips an untyped HTTP entry). Anything else, and anything read from a secret written
    out, is a real change."""
    read = [server_of(Found(client, Path(), "", name, value)) for value in (before, after)]
    if not isinstance(read[0], Server) or read[0] != read[1]:
        return False
    keys = [next((key for key in client.reading.url_keys if key in value), None) for value in (before, after)]
    return keys[0] == keys[1] and _transport(before) == _transport(after) and ("type" in before or "type" not in after)


def _transport(value: Mapping[str, Any]) -> bool:
    """Whether the entry speaks SSE, the older HTTP transport (``type`` or ``transport``)."""
    return any("sse" in str(value.get(key, "")).lower() for key in ("type", "transport"))


def secret_argument(args: list[str], index: int) -> bool:
    """Whether ``args[index]`` is a secret written out: one that looks like a token, the value of
    a secret-looking header (``X-Api-Key: ...``) or option (``--token=...``, ``--api-key ...``)."""
    arg = args[index]
    header = re.match(r"^([A-Za-z0-9_-]+):\s*(\S.*)$", arg)
    option = re.match(r"^(?:--?)?([A-Za-z0-9_-]+)=(.+)$", arg)  # --token=..., API_KEY=...
    after_flag = index > 0 and re.match(r"^--?[A-Za-z0-9_-]+$", args[index - 1]) and SECRET_LOOKING.search(args[index - 1])
    for name, value in ((header.group(1), header.group(2)) if header else (None, None), (option.group(1), option.group(2)) if option else (None, None)):
        if name and SECRET_LOOKING.search(name) and _reference(value.removeprefix("Bearer ")) is None:
            return True
        if name and possibly_secret(name, value):
            return True
    flag = args[index - 1] if index > 0 and args[index - 1].startswith("-") else ""
    return (bool(looks_like_token(arg) and "/" not in arg and "." not in arg) or possibly_secret(flag, arg)
            or bool(after_flag and arg and _reference(arg) is None))


def possibly_secret(name: str, text: str) -> bool:
    """Whether ``text``, the value of ``name`` (a variable, an option, a URL's query parameter),
    may be a secret though ``looks_like_token`` says not: all hex digits (32 or more) or a UUID
    (``HEX_OR_UUID``), under a name that does not say it is a digest or a revision. Such an entry
    stays the user's: a false alarm costs an entry, a secret copied into a model that teams share
    in layers leaks."""
    return HEX_OR_UUID.fullmatch(text) is not None and DIGEST_NAME.search(name) is None


def _why_secret(text: str) -> str:
    """Why an argument or a value was taken for a secret, when only its shape says so."""
    shape = text.partition("=")[2] or text.partition(":")[2].strip() or text
    return " (a UUID or 32 or more hex digits, as many tokens are)" if HEX_OR_UUID.fullmatch(shape) else ""


def _written(client: Client, remote: bool) -> dict[str, Any]:
    """The keys projector's own entries of that kind (``remote``: HTTP, else a command) for
    ``client`` hold whatever the server (``tools: ["*"]``), with their values: an entry that has
    them says nothing the model does not. Of that kind only: Copilot CLI's bridge entry turns its
    tool cache off, which an HTTP entry projector writes does not say."""
    return _rendered(client, HttpServer("https://x.invalid/", None) if remote else StdioServer("x", (), ()))


def _rendered(client: Client, server: HttpServer | StdioServer) -> dict[str, Any]:
    """``client``'s entry for ``server`` as projector writes it; empty where it takes no entry
    of that kind."""
    try:
        return client.render(server, "x")
    except RuntimeError:  # it takes no entry of that kind
        return {}


def _authentication(table: AuthTable | None, value: Mapping[str, Any]) -> tuple[Mapping[str, Any], dict[str, Any] | None | str, list[str]]:
    """An entry read with its table of how it authenticates (``reading.auth``): an inline table's
    keys as the entry's own; an OAuth one as the model's ``oauth`` settings, taken out (what of
    it the model has no setting for goes to the third item, unsaid). A table of neither form
    stays, and is unsaid as any unknown key is. The settings are a reason (str) when the model
    refuses them: the provider would sign in otherwise than the client did."""
    if table is None or table.key not in value:
        return value, None, []
    form = table.form(value[table.key])
    if form is None:
        return value, None, []
    when = dict(table.inline_when if form == "inline" else table.oauth_when or ())
    rest = {key: item for key, item in value.items() if key != table.key}
    written = {str(key): item for key, item in value[table.key].items() if key not in when}
    if form == "inline":
        return rest | written, None, []
    settings = dict(table.oauth_settings)
    said = {model: written[key] for model, key in settings.items() if key in written and written[key] not in ([], None)}
    if "client_id" in said:  # a pre-registered client: its redirect is registered where the client sends it
        said = {key: item for key, item in table.pre_registered if key in settings} | said
    unread = [f"{table.key}.{key}" for key in written if key not in settings.values()]
    problems = _refused_by_model({"url": "https://x.invalid/mcp", "oauth": said})
    if problems is not None:
        return value, (f"its {table.key} table's OAuth settings are not ones the model takes ({problems}); left as it is "
                       "(write the provider's oauth: settings by hand)"), []
    return rest, said, unread


def _refused_by_model(spec: Mapping[str, Any]) -> str | None:
    """What the model's schema says against a provider ``spec`` (its problems, joined); None: it
    takes it. Asked per entry, so one entry the model cannot take never stops the others."""
    from projector.core.checking import conforms, schema_problems

    model = {"version": 1, "providers": {"x": spec}}
    if conforms(model, "", "model"):
        return None
    return "; ".join(p.message.removeprefix("providers.x.") for p in schema_problems(model, ""))


def _remote(entry: Found, url: str, unsaid: list[str], oauth: dict[str, Any] | None = None) -> Server | str:
    from projector.core.modeltypes import clear_text_host
    from projector.core.scope import kbs_in_url, with_kbs

    if not re.match(r"^https?://\S+$", url):
        return f"its URL is not one the model takes (http or https): {url}"
    refused = _url_refused(url)
    if refused is not None:
        return refused
    spec: dict[str, Any] = {"url": url}
    secrets: list[str] = []
    notes: list[str] = []
    narrowed = kbs_in_url(url)
    if narrowed is not None:  # projector's own query (a lost ledger, or written by hand): the KBs this entry shows everywhere
        spec["url"] = with_kbs(url, None)
        kbs = _kb_set(narrowed)
        if kbs:
            spec["default"] = kbs
            problems = _refused_by_model(spec)
            if problems is not None:
                return (f"its URL's {narrowed} names KBs the model cannot ({problems}); left as it is (write the provider with "
                        "the URL without kbs= and default: [KB, ...] by hand)")
        else:
            notes.append(f"its URL's {narrowed} names no KB, which the server reads as every KB: imported without a default "
                         "(every KB), and projector's entry sends no kbs=")
    value = entry.value
    token_key = entry.client.token_key()
    variable = value.get(token_key) if token_key else None
    headers = value.get("headers") or value.get("http_headers") or {}
    if not isinstance(headers, Mapping):
        headers = {}
    for header, text in headers.items():
        bearer = str(text)[len("Bearer ") :] if str(header).lower() == "authorization" and str(text).startswith("Bearer ") else None
        if bearer is None:
            unsaid.append(f"header {header}")
            continue
        reference = _reference(bearer)
        variable = reference or _variable(entry.name, "TOKEN")
        if reference is None:
            secrets.append(variable)
        elif entry.client.reading.variable_keys:  # the client sends the text itself: the user meant the variable
            notes.append(_literal_reference(entry.client, bearer.strip(), reference))
    if isinstance(variable, str):
        spec["token_env"] = variable
    if oauth is not None and "token_env" in spec:  # the model takes one way to authenticate: which was meant is the user's to say
        sent = token_key if token_key and isinstance(value.get(token_key), str) else "its Authorization header"
        table = entry.client.reading.auth.key if entry.client.reading.auth else "auth"
        return (f"it sends a token ({sent}) and signs in with OAuth (its {table} table) too, and a "
                "provider does one of them; left as it is (write the provider with token_env or oauth: by hand)")
    if oauth is not None:  # the client signs itself in: in the model, projector signs in once for every client
        spec["oauth"] = oauth or True
    host = clear_text_host(spec)
    if host is not None:
        return (f"it sends its token over plain http:// to {host}, which the model takes only with `insecure: true`; left as it "
                "is (import it by hand if you accept that)")
    return Server(("url", without_query(url)), spec, tuple(secrets), tuple(unsaid), tuple(notes))


def _url_refused(url: str) -> str | None:
    """Why a URL cannot enter the model as it is: a variable in it (the model refuses one in a
    ``url``), or a secret written in it (a password before the host, in its query or its path: no
    variable can stand in for it there)."""
    from urllib.parse import parse_qsl, urlsplit

    from projector.core.semantic import URL_VARIABLE

    if URL_VARIABLE.search(url):
        return ("its URL refers to a variable, which the model refuses in a url (clients copy it as written or expand it "
                "on their own terms); left as it is (write the URL out, and give a token in a header, then import again)")
    parts = urlsplit(url)
    if parts.password:
        return (f"its URL carries a password before its host ({_shown_url(parts, parts.path)}, user:...@), and the model can put no variable in a url; "
                "left as it is (if the server takes it in a header, write it there as a variable reference, e.g. "
                "Authorization: Basic ${NAME}, then import again)")
    secret = next((name for name, text in parse_qsl(parts.query, keep_blank_values=True)
                   if looks_secret(name, text) or possibly_secret(name, text)), None)
    if secret is not None:
        return (f"its URL's query carries a secret ({secret}=...), and the model can put no variable in a url; left as it is "
                "(if the server takes it in a header, write it there as a variable reference, e.g. Authorization: Bearer "
                "${NAME}, then import again)")
    masked = _path_secret_masked(parts)
    if masked is None:
        return None
    return (f"its URL's path carries what may be a secret ({masked}: a token's shape, a UUID or 32 or more hex digits), "
            "and the model can put no variable in a url; left as it is (if the server also takes the key in a header, "
            "write the URL without it and the header as a variable reference, e.g. Authorization: Bearer ${NAME}, "
            "then import again)")


def _path_secret_masked(parts: SplitResult) -> str | None:
    """The URL without its query, each path segment that may be a secret (Zapier's
    /mcp/sk-ak-.../sse, others' /mcp/<uuid>/...) shown as "..."; None when no segment may be.
    The segment before one is its name (``possibly_secret``): a commit id under /commit/ is none."""
    from urllib.parse import unquote

    segments = parts.path.split("/")
    doubtful = [looks_like_token(unquote(text)) or possibly_secret(segments[i - 1] if i else "", unquote(text))
                for i, text in enumerate(segments)]
    if not any(doubtful):
        return None
    return _shown_url(parts, "/".join("..." if secret else text for text, secret in zip(segments, doubtful)))


def _shown_url(parts: SplitResult, path: str) -> str:
    """The URL as a message shows it: ``path`` on its host, without its query or what a
    user:password@ before the host says."""
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{path}"


def _kb_set(part: str) -> list[str]:
    """The KB names a URL's ``kbs=a,b`` part sets, as the server decodes them (percent-encoding
    undone, commas between names), each once; empty: no KB named."""
    from urllib.parse import unquote_plus

    written = unquote_plus(part.partition("=")[2])
    return list(dict.fromkeys(written.split(","))) if written else []


def _literal_reference(client: Client, written: str, variable: str) -> str:
    """What to say of a reference in a client that expands none (``reading.variable_keys``): the
    entry sends the text itself, and the provider takes the variable the user plainly meant."""
    return (f"this entry sends the text {written} literally; {client.name} reads variables only through {_variable_keys(client)}; "
            f"imported as token_env {variable}, which is what it plainly meant (the next sync's entry reads the variable: "
            f"set ${variable})")


def _variable_keys(client: Client) -> str:
    """The keys where a client that expands no variable reads one by name: "a, b or c"."""
    *first, last = client.reading.variable_keys
    return f"{', '.join(first)} or {last}" if first else last


def _local(entry: Found, command: str, args: list[str], unsaid: list[str]) -> Server | str:
    spec: dict[str, Any] = {"command": command}
    if args:
        spec["args"] = args
    cwd = entry.value.get("cwd")
    if isinstance(cwd, str) and cwd:
        spec["cwd"] = cwd
    env, secrets = _environment(entry, unsaid)
    doubtful = next((name for name, text in env.items() if possibly_secret(name, text)), None)
    if doubtful is not None:
        return (f"env {doubtful} may hold a secret (a UUID or 32 or more hex digits, as many tokens are), which would be "
                f"copied into the model; left as it is (if it is one, export it in your shell's profile and write "
                f"\"${{{doubtful}}}\" in the entry, then import again)")
    if env:
        spec["env"] = env
    identity = ("command", command, tuple(args), cwd if isinstance(cwd, str) else None)
    return Server(identity, spec, tuple(secrets), tuple(unsaid))


def _environment(entry: Found, unsaid: list[str]) -> tuple[dict[str, str], list[str]]:
    """The entry's variables in the model's words (``${NAME}`` for a reference and for a secret
    written out, which the user is told to set); the names of those secrets. A value the model
    would read otherwise (``${`` in literal text) goes to ``unsaid``. Both of a client's places
    count: Codex passes the variables ``env_vars`` names and then sets its ``env`` table."""
    client = entry.client
    places = {key: entry.value.get(key) for key in (client.reading.env_key, "env") if key}
    env: dict[str, str] = {}
    secrets: list[str] = []
    for key, names in ((k, p) for k, p in places.items() if isinstance(p, list)):  # passed on by name: the server reads them
        items = [n if isinstance(n, str) else n.get("name") for n in names if isinstance(n, (str, Mapping))]
        env |= {n: "${" + n + "}" for n in items if isinstance(n, str) and VARIABLE_NAME.fullmatch(n)}
        unsaid += [f"{key} {n!r} (not a variable name the model takes)" for n in items if not (isinstance(n, str) and VARIABLE_NAME.fullmatch(n))]
    listed = next((p for p in places.values() if isinstance(p, Mapping)), None)
    if listed is None:
        return env, secrets
    literal = bool(client.reading.variable_keys)  # a client that expands no variable: a value is its text
    for name, text in listed.items():
        name, text = str(name), "" if text is None else str(text)
        if not VARIABLE_NAME.fullmatch(name):  # the model's env takes variable names only
            unsaid.append(f"env {name!r} (not a variable name the model takes)")
            continue
        reference = None if literal else _reference(text)
        if reference is not None:
            env[name] = "${" + reference + "}"
        elif literal and "${" in text:
            unsaid.append(f"env {name} ({client.name} hands the server the text {text} as it is: it expands no variable, and "
                          f"reads one only through {_variable_keys(client)}; the model would read it as a variable)")
        elif looks_secret(name, text):
            env[name] = "${" + name + "}"
            secrets.append(name)
        elif "${" in text:
            unsaid.append(f"env {name} (its value has ${{ in it, which the model reads as a variable)")
        else:
            env[name] = text
    return env, secrets


def looks_secret(name: str, text: str) -> bool:
    """Whether ``text``, the value of ``name`` (a variable, a header, a URL's query parameter), is
    a secret written out: under a secret-looking name (TOKEN, KEY, AUTH, ...) or shaped like a
    token. A reference to a variable, or nothing, is none."""
    return bool(text) and _reference(text) is None and bool(SECRET_LOOKING.search(name) or looks_like_token(text))


def _reference(text: str) -> str | None:
    found = REFERENCE.match(text.strip())
    return next((g for g in found.groups() if g), None) if found else None


def _variable(name: str, suffix: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper() + "_" + suffix


def provider_name(name: str) -> str:
    """An entry's name as a provider's (letters, digits, - and _)."""
    if PROVIDER_NAME.fullmatch(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-_")[:64]
    return cleaned or "server"


def gather(found: list[Found], existing: Mapping[str, tuple[Any, ...]], defaults: Mapping[str, list[str] | None] | None = None,
           ways: Mapping[str, Mapping[str, Any] | None] | None = None) -> Imported:
    """``existing``: the model's providers by name, each with its identity; ``defaults``: their
    default KB sets (None: every KB); ``ways``: their auth settings (``oauth``, ``token_env``). Entries of the
    same server share one provider; a name taken by another server keeps the entries apart. A
    provider has one default KB set: an entry that shows another (its URL's ``kbs=``, or none
    where the provider names some) stays the user's; so does one that signs in with OAuth where
    the provider sends a token, or the other way round, or that authenticates where the model's
    provider does neither, or that reads its token from another variable than the provider. A provider made here takes the way its first entry that has one
    authenticates: claimed, that entry would otherwise lose it."""
    providers: dict[str, dict[str, Any]] = {}
    identities: dict[str, tuple[Any, ...]] = dict(existing)
    sources: dict[str, list[Found]] = {}
    bindings: dict[str, dict[str, Any]] = {}
    claims: list[Claim] = []
    report: list[str] = []
    secrets: dict[str, list[str]] = {}
    signs_in: dict[str, list[str]] = {}  # OAuth providers: the clients whose entries sign in so
    ordered = sorted(found, key=lambda f: (f.folder is not None, f.name, f.client.id))
    servers = {id(entry): server_of(entry) for entry in ordered}
    taken = dict(identities)  # every provider name, the model's and those given here
    named = _provider_names([(e, s) for e in ordered if not isinstance(s := servers[id(e)], str)], taken)
    for entry in ordered:
        where = f"{entry.shown}" + (f" (folder {shown_name(entry.folder)})" if entry.folder else "")
        which = f"{shown_name(entry.name)} in {where}"  # a name with a newline in it shown escaped, an empty one as ""
        server = servers[id(entry)]
        if isinstance(server, str):
            report.append(f"not imported: {which}: {server}")
            continue
        name, wanted = named[server.identity], provider_name(entry.name)
        kbs = server.spec.get("default")
        if entry.folder is None and (name in providers or name in identities):
            said = providers[name].get("default") if name in providers else (defaults or {}).get(name)
            if said != kbs:
                report.append(f"not imported: {which}: {_kb_conflict(name, kbs, said)}")
                continue
        its_auth = providers[name] if name in providers else (ways or {}).get(name) or {}
        way, its_way = way_of(server.spec), way_of(its_auth)
        if way == its_way == "token" and server.spec["token_env"] != its_auth["token_env"]:
            report.append(f"not imported: {which}: {_other_variable(entry.client, server, name, its_auth['token_env'])}")
            continue
        if way and its_way and way != its_way:  # taken, the entry would authenticate otherwise than the client did
            report.append(f"not imported: {which}: it {_WAYS[way]}, and provider {name} {_WAYS[its_way]}: a "
                          "provider does one of them; left as it is, yours")
            continue
        if way and not its_way and name in identities:  # the model's provider, written without it: taken, the entry would lose it
            report.append(f"not imported: {which}: it {_WAYS[way]}, and provider {name} does neither: its "
                          f"entry would not; left as it is, yours (write {_SETTING[way]} in provider {name} if every client "
                          "should, then import again)")
            continue
        if wanted != name and taken.get(wanted, server.identity) == server.identity:  # the server goes by another name
            report.append(f"{which}: the same server as provider {name}, " + (
                "which the folder's entry stays beside" if entry.folder else
                "whose entry stands in for it there (`projector remove` puts it back)"))
        elif name != entry.name:
            report.append(f"{which} becomes provider {name}" + (" (another server has that name)" if wanted != name else ""))
        if name not in identities and name not in providers:  # a folder's KB set is its binding's, not the default
            providers[name] = ({k: v for k, v in server.spec.items() if k != "default"} | {"enabled": False} if entry.folder
                               else dict(server.spec))
        elif name in providers and providers[name].get("enabled") is False and entry.folder is None:
            del providers[name]["enabled"]  # also a global entry: on everywhere
        if name in providers and way and not way_of(providers[name]):  # new here, from entries that say nothing of it: it takes
            setting = "oauth" if way == "oauth" else "token_env"        # this entry's way, so every client keeps working
            providers[name][setting] = server.spec[setting]
            if way == "token":
                report.append(f"provider {name} sends the token from ${server.spec['token_env']}, as {which} "
                              "does: its entries that sent none will send it too")
        if name in providers and "oauth" in server.spec:
            signs_in.setdefault(name, []).append(entry.client.name)
        for variable in server.secrets:
            secrets.setdefault(variable, []).append(where)
        report += [f"{which}: {note}" for note in server.notes]
        for what in server.unsaid:
            report.append(f"not in the model: {which}: {what}; that entry stays as it is, yours (projector's "
                          "entry would not have it)")
        if name in providers and providers[name].get("url") and server.spec.get("url") != providers[name]["url"]:
            report.append(f"{which} uses {server.spec['url']}; provider {name} says {providers[name]['url']}")
        if entry.folder is not None:
            settings = {"enabled": True} if name in providers and providers[name].get("enabled") is False else {}
            if name in providers and kbs is not None and kbs != providers[name].get("default"):
                settings["kbs"] = kbs  # the KBs that folder's entry shows
            if settings:
                bindings.setdefault(entry.folder, {})[name] = settings
            continue  # a folder's own entry stays as it is: it is the user's, in that folder
        sources.setdefault(name, []).append(entry)
        if not server.unsaid:  # the user said so, by importing it: projector's from now on, its original kept
            stands_in = entry.client.entry_name(name)
            claims.append(Claim(entry.path, entry.client, entry.name, entry.value, None, None if stands_in == entry.name else stands_in))
    for name, entries in sorted(sources.items()):
        if name in providers:
            clients = ", ".join(dict.fromkeys(e.client.name for e in entries))
            report.insert(0, f"provider {name}: from {clients}")
    for name, signing in sorted(signs_in.items()):
        report.append(f"provider {name} signs in with OAuth, as its entry in {', '.join(dict.fromkeys(signing))} did: once the "
                      f"next sync has written projector's entries, run `projector login {name}` (once, for every client)")
    for variable, places in sorted(secrets.items()):
        report.append(f"set ${variable}: its value was written in {', '.join(dict.fromkeys(places))}; the model names the variable only")
    return Imported(providers, bindings, tuple(claims), tuple(report))


# How an entry (or a provider) authenticates, as said in a sentence.
_WAYS = {"oauth": "signs in with OAuth", "token": "sends a token from a variable"}
_SETTING = {"oauth": "oauth: true", "token": "token_env: NAME"}  # what a provider says for each way


def _other_variable(client: Client, server: Server, name: str, variable: str) -> str:
    """Why an entry whose token comes from another variable than provider ``name``'s stays the
    user's: claimed, it would read ``variable``, which its client may not be given; and what to
    write in it (as projector writes that client's entry) to unify them."""
    own = server.spec["token_env"]
    written = own in server.secrets  # its variable was made up here: no one's
    sends, has = ("a token written in it", "the token") if written else (f"its token from ${own}", f"${own}")
    return (f"it sends {sends}, and provider {name} sends it from ${variable}: taken, this entry would read ${variable}, "
            f"which {client.name} may not be given; left as it is, yours (to unify them, write {_token_read(client, variable)} "
            f"in it in place of {has}, then import again)")


def _token_read(client: Client, variable: str) -> str:
    """Where and how ``client``'s entry reads its token from ``variable``, as projector writes it
    ("Authorization: Bearer ${env:X}", "bearer_token_env_var: X")."""
    pending = list(_rendered(client, HttpServer("https://x.invalid/", variable)).items())  # none: the header every client reads
    while pending:
        key, value = pending.pop(0)
        if isinstance(value, Mapping):
            pending += list(value.items())
        elif isinstance(value, str) and variable in value:
            return f"{key}: {value}"
    return f"Authorization: Bearer ${{{variable}}}"


def way_of(spec: Mapping[str, Any]) -> str | None:
    """How a provider's settings (or an entry read as them) authenticate: "oauth", "token"
    (token_env), or None (neither said: no token, or a client that discovers a sign-in itself)."""
    return "oauth" if spec.get("oauth") else "token" if spec.get("token_env") else None


def _kb_conflict(name: str, shows: list[str] | None, said: list[str] | None) -> str:
    """Why an entry that shows other KBs than provider ``name``'s default stays the user's, and
    what to write instead."""
    words = lambda kbs: "every KB" if kbs is None else "the KBs " + ", ".join(kbs) if kbs else "no KB"  # noqa: E731
    instead = ("bind each folder that should see them (`projector bind DIR --provider " + name + "".join(f" --kb {kb}" for kb in shows)
               + "`)" if shows else f"drop `default:` from provider {name} if every folder should see every KB")
    return (f"it shows {words(shows)} everywhere, and provider {name} shows {words(said)} where no binding says otherwise: a "
            f"provider has one default set; left as it is, yours ({instead})")


def _provider_names(entries: list[tuple[Found, Server]], identities: dict[str, tuple[Any, ...]]) -> dict[tuple[Any, ...], str]:
    """Each server's provider name: the model's, else the name most of its entries have (the
    first in order on a tie), else, taken by another server, that name with the client's id."""
    votes: dict[tuple[Any, ...], dict[str, int]] = {}
    first_client: dict[tuple[tuple[Any, ...], str], str] = {}
    for entry, server in entries:
        name = provider_name(entry.name)
        tally = votes.setdefault(server.identity, {})
        tally[name] = tally.get(name, 0) + (0 if entry.folder else 1)  # a folder's entry names a server only when nothing else does
        first_client.setdefault((server.identity, name), entry.client.id)
    named = {identity: name for name, identity in identities.items()}
    for identity, tally in votes.items():
        if identity in named:
            continue
        wanted = max(tally, key=lambda n: tally[n])  # dicts keep order: the first on a tie
        name = _name_for(wanted, identity, identities, first_client[(identity, wanted)])
        identities[name] = identity
        named[identity] = name
    return named


def _name_for(name: str, identity: tuple[Any, ...], identities: Mapping[str, tuple[Any, ...]], client: str) -> str:
    """``name``, or, when another server has it, ``name-<client>`` (then -2, -3, ...)."""
    if identities.get(name, identity) == identity:
        return name
    candidates = [f"{name}-{client}"] + [f"{name}-{client}-{n}" for n in range(2, 100)]
    return next(c for c in candidates if identities.get(c, identity) == identity)


def identity_of(provider: Any) -> tuple[Any, ...]:
    """A model provider's identity, as ``Server.identity`` spells an entry's."""
    if provider.url is not None:
        return ("url", without_query(provider.url))
    return ("command", provider.command, tuple(provider.args or ()), provider.cwd)
