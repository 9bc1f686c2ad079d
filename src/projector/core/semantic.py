"""The model's semantic pass: what its JSON Schema cannot say, checked on the merged layers
(core.layers) and on project files (core.projects): binding paths, references to providers and
hooks, KBs a provider does not mount, a token pasted where its variable's name belongs. Each
problem is placed by ``Places`` (core.checking) at the layer and line it came from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from projector.core import hooks as hook_rules
from projector.core.checking import pasted_token
from projector.core.errors import Problem, did_you_mean, quoted
from projector.core.modeltypes import LOCAL_KEYS, REMOTE_KEYS, REMOTE_SETTINGS, RESERVED, clear_text_host, is_folder, plain_http_host, token_words
from projector.core.scope import kbs_in_url
from projector.core.variables import expand_folder

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

    from projector.core.checking import Places


def semantic_problems(
    data: Mapping[str, Any], places: Places, environ: Mapping[str, str], known_clients: tuple[str, ...]
) -> list[Problem]:
    problems: list[Problem] = []
    for index, client in enumerate(data.get("clients") or []):
        if client not in known_clients:
            problems.append(places.problem(("clients", index),
                                           f'unknown client "{client}"{did_you_mean(client, known_clients)} (known: {", ".join(known_clients)})'))
    for index, raw in enumerate(data.get("roots") or []):
        problems += _folder_problems(places, ("roots", index), str(raw), environ, "a root is a folder", key=False)
    providers = data.get("providers") or {}
    problems += _provider_problems(places, providers)
    problems += [
        places.problem(("providers", name, "token_env"), message)
        for name, spec in providers.items()
        if (message := pasted_token(str(spec.get("token_env") or ""), str(name)))
    ]
    seen_paths: dict[str, str] = {}
    seen_repos: dict[str, str] = {}
    bindings = data.get("bindings") or {}
    defined = defined_hooks([data.get("hooks"), *(b.get("hooks") for b in bindings.values())])
    problems += hook_problems(places, ("hooks",), data.get("hooks"), defined, top=True)
    for raw_path, binding in bindings.items():
        if "repo" in binding:
            problems += _repo_problems(places, str(raw_path), binding, seen_repos)
        else:
            problems += _binding_path_problems(places, str(raw_path), environ, seen_paths)
        problems += use_problems(places, ("bindings", raw_path), binding, providers)
        problems += hook_problems(places, ("bindings", raw_path, "hooks"), binding.get("hooks"), defined)
    return problems


def defined_hooks(places: list[Any]) -> set[str]:
    """The names of the hooks defined (with a command) in these places' ``hooks``."""
    return {str(name) for hooks in places for name, spec in (hooks or {}).items() if "command" in spec}


def hook_problems(places: Places, where: tuple[Any, ...], hooks: Mapping[str, Any] | None, defined: set[str],
                  top: bool = False) -> list[Problem]:
    """What the schema cannot say of the hooks at ``where``: events, matchers, and switches that
    name a hook defined somewhere (``defined``). ``top``: the model's own hooks (its layers
    merged), each a definition: a layer may give some keys of a hook another layer defines, but
    together they must say its event and command."""
    problems: list[Problem] = []
    for name, spec in (hooks or {}).items():
        at = where + (name,)
        missing = [key for key in ("event", "command") if key not in spec] if top else []
        if missing:
            problems.append(places.problem(at, f'missing "{missing[0]}": a hook here is a definition (give its event and command), '
                                           "or settings for a hook an earlier layer defines"))
            continue
        if "command" not in spec:
            extra = [key for key in spec if key != "enabled"]
            if extra:
                problems.append(places.problem(at + (extra[0],), f'"{extra[0]}" needs a command here: a hook without one only '
                                               "turns an inherited hook off or on (enabled: false / true)", key=True))
            elif "enabled" not in spec:
                problems.append(places.problem(at, "an empty hook: give it a command (a new definition), or enabled: false / true "
                                               "(turn an inherited hook off or on)"))
            elif name not in defined:
                problems.append(places.problem(at, f'no hook named "{name}" to turn on or off (hooks: {", ".join(sorted(defined)) or "none"})', key=True))
            continue
        event = spec["event"]
        if event not in hook_rules.EVENTS:
            problems.append(places.problem(at + ("event",), f'unknown event "{event}" (events: {", ".join(hook_rules.EVENTS)})'))
            continue
        matcher = spec.get("matcher")
        if matcher is not None and hook_rules.EVENTS[event] is None:
            problems.append(places.problem(at + ("matcher",), f"{event} hooks take no matcher (they run on every {event}); remove it", key=True))
        elif matcher and matcher != "*" and not hook_rules.simple_matcher(matcher):
            try:
                re.compile(matcher)
            except re.error as exc:
                problems.append(places.problem(at + ("matcher",), f"{quoted(matcher)} is not a regular expression ({exc}); "
                                               'give tool names joined by "|", or a valid pattern'))
    return problems


def _provider_problems(places: Places, providers: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    folded: dict[str, str] = {}  # a name in lower case -> the first provider named so
    for name, provider in providers.items():
        at = ("providers", name)
        first = folded.setdefault(str(name).casefold(), str(name))
        if first != name:
            problems.append(places.problem(at, f'"{first}" ({places.at(("providers", first), key=True)}) and "{name}" differ only in '
                                           "case, and a client that folds the case of server names takes them for one: rename one", key=True))
        if name in RESERVED:
            problems.append(places.problem(at, f'"{name}" is a reserved word in bindings; give the provider another name', key=True))
        if ("url" in provider) == ("command" in provider):
            problems.append(places.problem(at, 'give either "url" (a remote provider) or "command" (a local one)', key=True))
            continue
        kind, foreign = ("remote", LOCAL_KEYS) if "url" in provider else ("local", REMOTE_KEYS)
        problems += _url_problems(places, at, provider.get("url"))
        problems += _clear_text_problems(places, at, provider)
        for key in (k for k in provider if k in foreign):
            problems.append(places.problem(at + (key,), f'"{key}" is not a setting of a {kind} provider; remove it', key=True))
        if provider.get("oauth") and "token_env" in provider:
            problems.append(places.problem(at + ("oauth",), 'give either "token_env" (a token variable) or "oauth: true" (the client signs in), not both', key=True))
        if isinstance(provider.get("oauth"), Mapping):
            problems += _oauth_problems(places, at + ("oauth",), provider["oauth"], str(name), bool(provider.get("insecure")))
        mounted = provider.get("kbs")
        for index, kb in enumerate(provider.get("default") or []):
            if mounted is not None and kb not in mounted:
                problems.append(_unmounted(places, at + ("default", index), kb, name, mounted))
    return problems


_SECRET_KEYS = (("client_secret_env", "_CLIENT_SECRET"), ("enterprise", "idp_client_secret_env", "_IDP_SECRET"),
                ("enterprise", "id_token_env", "_ID_TOKEN"))


def _oauth_problems(places: Places, at: tuple[Any, ...], oauth: Mapping[str, Any], provider: str,
                    insecure: bool = False) -> list[Problem]:
    """What the schema cannot say of a provider's OAuth settings: which grant needs which
    setting, a secret pasted where its variable's name belongs, and an enterprise sign-in's
    identity provider or issuer, or a machine's issuer, over plain http:// to another host (as for
    the provider's url)."""
    problems: list[Problem] = []
    enterprise = oauth.get("enterprise") if isinstance(oauth.get("enterprise"), Mapping) else {}
    for path, url, what in ((("enterprise", "idp_token_endpoint"), enterprise.get("idp_token_endpoint"), "the ID token"),
                            (("enterprise", "issuer"), enterprise.get("issuer"), "the identity assertion and the client's secret"),
                            (("issuer",), oauth.get("issuer"), "the client's secret (or signed assertion)")):
        problems += _authorization_url_problems(places, at + path, url, what, insecure)
    credentials, enterprise = oauth.get("client_credentials"), oauth.get("enterprise")
    if "issuer" in oauth and not credentials:
        problems.append(places.problem(at + ("issuer",), "enterprise takes its issuer inside enterprise: {issuer: ...}; remove this one"
                                       if enterprise else "issuer names where a machine's client_credentials sign-in sends its "
                                       "secret; a person's sign-in takes the authorization server the MCP server names: remove it",
                                       key=True))
    for *path, suffix in _SECRET_KEYS:
        value = oauth.get(path[0]) if len(path) == 1 else (oauth.get(path[0]) or {}).get(path[1])
        if isinstance(value, str) and (message := pasted_token(value, provider, path[-1], suffix)):
            problems.append(places.problem(at + tuple(path), message))
    grant = "client_credentials" if credentials else "enterprise" if enterprise else None
    if credentials and enterprise:
        problems.append(places.problem(at + ("enterprise",), 'give either "client_credentials" (the client signs in as itself) or '
                                       '"enterprise" (an identity provider\'s token is exchanged), not both', key=True))
    if grant and "client_id" not in oauth:
        problems.append(places.problem(at + (grant,), f'{grant} needs the client registered with the server beforehand: '
                                       "give client_id (and client_secret_env for its secret)", key=True))
    if credentials is True and "client_secret_env" not in oauth:
        problems.append(places.problem(at + ("client_credentials",), "client_credentials: true signs in with the client's secret: give "
                                       "client_secret_env (the NAME of its variable), or a private key: "
                                       "{private_key_file: ~/key.pem, algorithm: ES256}", key=True))
    if grant and "redirect_port" in oauth:
        problems.append(places.problem(at + ("redirect_port",), f"{grant} opens no browser, so there is no redirect; remove "
                                       "redirect_port", key=True))
    key_file = credentials.get("private_key_file") if isinstance(credentials, Mapping) else None
    if isinstance(key_file, str) and not key_file.startswith(("/", "~")):
        problems.append(places.problem(at + ("client_credentials", "private_key_file"),
                                       "the key file is given as an absolute path or one under ~"))
    return problems


def _authorization_url_problems(places: Places, at: tuple[Any, ...], url: Any, what: str, insecure: bool) -> list[Problem]:
    """An authorization server's URL the model names (the schema checked it is http(s)): never in
    clear to another host unless the provider says ``insecure``; an issuer, as RFC 8414 §2 has
    it, with no query or fragment (no metadata names such an issuer, so it would never match)."""
    if not isinstance(url, str):
        return []
    host = None if insecure else plain_http_host(url)
    if host is not None:
        return [places.problem(at, f"plain http:// would send {what} in clear to {host} (the MCP authorization spec allows "
                               "http:// only to this machine): use https://, or say insecure: true of the provider if you accept that")]
    if at[-1] == "issuer" and ("?" in url or "#" in url):
        return [places.problem(at, f"{quoted(url)} has a query or a fragment, which an issuer never has (RFC 8414): give the "
                               "issuer exactly as the authorization server's metadata says it")]
    return []


URL_VARIABLE = re.compile(r"\$\{?[A-Za-z_]|\{env:|\{file:")  # ${VAR}, $VAR; one client's {env:VAR} and {file:PATH}


def _url_problems(places: Places, at: tuple[Any, ...], url: Any) -> list[Problem]:
    if not isinstance(url, str):
        return []
    reference = URL_VARIABLE.search(url)
    if reference is not None and reference.group(0) == "{file:":  # a client that reads the file into its config's text
        return [places.problem(at + ("url",), f"{quoted(url)} refers to a file ({{file:...), whose text one client puts in its "
                               "place, and so sends to that URL: write the URL out")]
    if reference is not None:
        return [places.problem(at + ("url",), f"{quoted(url)} refers to a variable ({reference.group(0)}...), which clients "
                               "copy as written or expand on their own terms (a variable would decide where the token goes): "
                               "write the URL out, and give a token as token_env")]
    own = kbs_in_url(url)
    if own is None:
        return []
    return [places.problem(at + ("url",), f'the URL sets "{own}" itself, but projector sets kbs for each folder: '
                           "take it out of the URL and say default: [...] (what folders under no binding see)")]


def _clear_text_problems(places: Places, at: tuple[Any, ...], provider: Mapping[str, Any]) -> list[Problem]:
    host = clear_text_host(provider)
    if host is None or provider.get("insecure"):
        return []
    return [places.problem(at + ("url",), f"plain http:// would send {token_words(provider)} in clear to {host} (the MCP authorization spec "
                           "allows http:// only to this machine): use https://, or say insecure: true if you accept that")]


def use_problems(places: Places, where: tuple[Any, ...], binding: Mapping[str, Any], providers: Mapping[str, Any],
                 reserved: tuple[str, ...] = RESERVED) -> list[Problem]:
    """What one binding (or project file) says of each provider, checked against the providers;
    ``reserved``: its keys that are not providers."""
    problems: list[Problem] = []
    for provider_name, value in binding.items():
        at = where + (provider_name,)
        if provider_name in reserved:
            continue
        if provider_name not in providers:
            known = ", ".join(sorted(providers)) or "none"
            guess = did_you_mean(provider_name, providers)
            problems.append(places.problem(at, f'no provider named "{provider_name}"{guess} (providers: {known})', key=True))
            continue
        spec = providers[provider_name]
        local = "command" in spec
        if local and isinstance(value, list):
            problems.append(places.problem(at, f'"{provider_name}" is a local provider: give settings (a mapping such as {{enabled: true}}), not a KB list'))
            continue
        settings = value if isinstance(value, Mapping) else {"kbs": value}
        for key in settings:
            if (local and key == "kbs") or (not local and key not in REMOTE_SETTINGS):
                kind, allowed = ("local", "everything but kbs") if local else ("remote", "kbs, enabled and tools")
                problems.append(places.problem(at + (key,), f'"{key}" is not a setting of {kind} provider "{provider_name}" (it takes {allowed})', key=True))
        mounted = spec.get("kbs")
        for index, kb in enumerate(settings.get("kbs") or []):
            if mounted is not None and kb not in mounted:
                path = at + (index,) if isinstance(value, list) else at + ("kbs", index)
                problems.append(_unmounted(places, path, kb, provider_name, mounted))
    return problems


def _unmounted(places: Places, path: tuple[Any, ...], kb: str, provider: str, mounted: list[str]) -> Problem:
    mounts = ", ".join(sorted(mounted)) or "nothing"
    return places.problem(path, f'"{kb}" is not a KB of provider "{provider}"{did_you_mean(kb, mounted)} (it mounts: {mounts})')


def _folder_problems(places: Places, where: tuple[Any, ...], raw: str, environ: Mapping[str, str], what: str, key: bool) -> list[Problem]:
    try:
        path = expand_folder(raw, environ)
    except KeyError as unset:
        return [places.problem(where, f"${unset.args[0]} is not set in this environment; set it or write the folder out", key=key)]
    if not path.startswith("/"):
        return [places.problem(where, f"{what} given as an absolute path or one under ~", key=key)]
    return []


def _binding_path_problems(places: Places, raw: str, environ: Mapping[str, str], seen: dict[str, str]) -> list[Problem]:
    where = ("bindings", raw)
    if not is_folder(raw):
        return [places.problem(where, "a binding is a folder given as an absolute path or one under ~, or a repository "
                               "binding: a name with repo: <its git remote>", key=True)]
    problems = _folder_problems(places, where, raw, environ, "a binding is a folder", key=True)
    if problems:
        return problems
    path = expand_folder(raw, environ)
    if path in seen:
        return [places.problem(where, f'the same folder as "{seen[path]}"{_elsewhere(places, where, seen[path])}; merge the two bindings', key=True)]
    real = os.path.realpath(path)  # where a session's folder is compared with it
    if real in seen:
        return [places.problem(where, f'the same folder as "{seen[real]}"{_elsewhere(places, where, seen[real])} (through a symlink: '
                               f"both are {real}); merge the two bindings", key=True)]
    seen[path] = seen[real] = raw
    return []


def _elsewhere(places: Places, where: tuple[Any, ...], other: str) -> str:
    """`` (file:line:col)`` of binding ``other`` when it is in another layer than ``where``'s."""
    here, there = places.at(where, key=True), places.at(("bindings", other), key=True)
    return "" if here.rsplit(":", 2)[0] == there.rsplit(":", 2)[0] else f" ({there})"


def _repo_problems(places: Places, raw: str, binding: Mapping[str, Any], seen: dict[str, str]) -> list[Problem]:
    from projector.core.repos import normalise

    where = ("bindings", raw)
    if is_folder(raw):
        return [places.problem(where, "a repository binding is named, not placed: give it a name (its clones are found "
                               "under your roots), or bind the folder without repo:", key=True)]
    repo = normalise(str(binding["repo"]))
    if repo is None:
        return [places.problem(where + ("repo",), f'{quoted(binding["repo"])} is not a git remote: write it as '
                               "host/owner/name (github.com/acme/api) or as git prints it (git@github.com:acme/api.git)")]
    if repo in seen:
        return [places.problem(where + ("repo",), f'the same repository as binding "{seen[repo]}" ({places.at(("bindings", seen[repo]), key=True)}); '
                               "merge the two bindings")]
    seen[repo] = raw
    return []
