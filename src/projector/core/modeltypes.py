"""The model's types: the frozen records a checked model is made of (core.record), the words of
its vocabulary, and the records made from checked plain data.

Nothing here reads a file, parses YAML or checks anything: loading (core.model, core.layers,
core.projects, core.checking, core.semantic) stands on this module, never the other way, and the
bridge, the compiler and the commands take their types from here.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from functools import cached_property

from projector.core.hooks import Hook
from projector.core.record import Record, fields, replace
from projector.core.tools import ToolRule, rule

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

KbSet = tuple[str, ...] | None
"""Which knowledge bases a session sees: None = all (no ``kbs`` parameter), () = none."""

Env = tuple[tuple[str, str | None], ...]
"""Variables in order: a value (``${VAR}`` expanded when the server starts) or None (unset)."""


class Settings(Record):
    """What a binding (or a project file) says about one provider; None: it does not say."""

    kbs: tuple[str, ...] | None = None
    enabled: bool | None = None
    command: str | None = None
    args: tuple[str, ...] | None = None
    cwd: str | None = None
    env: Env | None = None
    env_files: tuple[str, ...] | None = None
    direnv: bool | None = None
    shared: bool | None = None  # local: the workspace's sessions share one server
    linger: float | None = None  # local, shared: seconds the server outlives its last session
    tools: ToolRule | None = None  # the tools offered here (core.tools): replaces the provider's whole

    def said(self) -> tuple[str, ...]:
        return tuple(name for name in fields(self) if getattr(self, name) is not None)

    def over(self, base: Settings) -> Settings:
        """These settings laid over ``base``: each said value replaces, ``env`` merges by name."""
        merged = {name: getattr(self, name) for name in self.said()}
        if self.env is not None and base.env is not None:
            merged["env"] = tuple(dict(base.env, **dict(self.env)).items())
        return replace(base, **merged)


# What a sign-in reads of the environment it runs in, besides its secrets. A client that starts
# the bridge with a few variables only would leave them out, and the bridge could neither
# open a browser for the sign-in it starts itself nor reach the keyring `projector login` used:
BROWSER_VARIABLES = (
    "BROWSER",  # the browser the person chose (core.signin.headless: set, one can open)
    "DISPLAY",  # an X11 screen (headless: none of these two, off macOS, and no browser can open)
    "WAYLAND_DISPLAY",  # a Wayland one: a socket's name, relative to XDG_RUNTIME_DIR
    "XDG_RUNTIME_DIR",  # where that socket is, for the browser the sign-in starts
    "XAUTHORITY",  # the X11 cookie where it is not ~/.Xauthority (GDM's /run/user/UID/gdm/Xauthority)
    "SSH_CONNECTION",  # over SSH no browser of the person's can open here (headless); sshd sets it whenever it sets SSH_TTY
)
KEYRING_VARIABLES = ("DBUS_SESSION_BUS_ADDRESS",)  # the Secret Service's bus where it is not /run/user/UID/bus (core.tokenstore)


class OAuth(Record):
    """How a provider signs in with OAuth (``oauth:`` in the model)."""

    by_client: bool = False  # "client": each client signs itself in (today's plain entry); else projector does, once
    client_id: str | None = None  # pre-registered; None: a Client ID Metadata Document or Dynamic Client Registration
    client_secret_env: str | None = None  # NAME of the variable holding that client's secret
    client_metadata_url: str | None = None  # a Client ID Metadata Document's https URL, used as the client id where supported
    scopes: tuple[str, ...] | None = None  # None: those the challenge or the server's metadata names
    redirect_port: int | None = None  # a fixed loopback port for the redirect; None: any free one
    grant: str = "authorization_code"  # or "client_credentials" (no person), or "enterprise" (an IdP's token exchanged)
    private_key_file: str | None = None  # client_credentials with a signed JWT (RFC 7523) instead of a secret
    algorithm: str | None = None  # that JWT's algorithm
    # the authorization server a machine's grant signs in at, configured: enterprise (never discovered), or
    # client_credentials (discovered, and refused unless its metadata names this issuer); None: the MCP server decides
    issuer: str | None = None
    idp_token_endpoint: str | None = None  # enterprise: the identity provider's token endpoint
    idp_client_id: str | None = None
    idp_client_secret_env: str | None = None
    id_token_env: str | None = None  # enterprise: NAME of the variable holding the IdP's ID token

    @property
    def by_person(self) -> bool:
        """Whether a person signs in (in a browser); a machine's grant (client_credentials,
        enterprise) signs in again with its client's credentials, no person."""
        return self.grant == "authorization_code"

    @property
    def unpinned(self) -> bool:
        """Whether a machine's client_credentials sign-in names no ``issuer``: the MCP server then
        decides which authorization server receives the client's secret (or signed assertion)."""
        return self.grant == "client_credentials" and self.issuer is None

    def secret_variables(self) -> tuple[str, ...]:
        """The NAMES of the variables its sign-in reads secrets from: `projector login` reads
        them, and so does the one a bridge starts when a session finds no usable token."""
        return tuple(n for n in (self.client_secret_env, self.idp_client_secret_env, self.id_token_env) if n)

    def environment(self) -> tuple[str, ...]:
        """The other variables a sign-in reads where it runs: the keyring's bus, and where a
        person signs in, how a browser reaches their screen."""
        return (BROWSER_VARIABLES if self.by_person else ()) + KEYRING_VARIABLES


class Provider(Record):
    """A named MCP server: remote (url) or local (command)."""

    name: str
    url: str | None  # remote: the MCP endpoint; None for a local provider
    token_env: str | None
    kbs: tuple[str, ...] | None  # what the server mounts, when the model says
    default: KbSet  # the set for folders under no binding
    command: str | None = None  # local: the server's command
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: Env = ()
    enabled: bool = True
    oauth: OAuth | None = None  # remote: it signs users in with OAuth (core.modeltypes.OAuth), not with a token variable
    shared: bool | None = None
    linger: float | None = None
    listen: bool = False  # remote: the bridge opens the GET stream for the server's own requests
    timeout: float = 120.0  # remote: seconds a request through the bridge may take
    tools: ToolRule | None = None  # the tools offered where no workspace says (core.tools); None: all
    insecure: bool = False  # remote: its token may go over plain http:// to a host that is not this machine

    @property
    def local(self) -> bool:
        return self.url is None

    def launch(self) -> Settings:
        """A local provider's own definition, as the base its bindings are laid over."""
        return Settings(enabled=self.enabled, command=self.command, args=self.args or None, cwd=self.cwd, env=self.env or None,
                        shared=self.shared, linger=self.linger, tools=self.tools)


class Binding(Record):
    """A folder and what it says of each provider there."""

    path: str  # absolute, with ~ and $VAR expanded; made canonical where it is resolved
    uses: tuple[tuple[str, Settings], ...]  # (provider, what this folder says of it), sorted by provider
    worktrees: bool = False  # every git worktree of the repository is bound too
    hooks: tuple[Hook, ...] = ()  # what this folder says of hooks (core.hooks)
    repo: str | None = None  # a clone of the repository binding of this name (Model.repos)
    distrust: str | None = None  # a clone not trusted (by its folder, as a clone of that repository): why what the binding runs does not run there

    def settings(self, provider: str) -> Settings | None:
        return dict(self.uses).get(provider)


# Clone, Repo and Layer are named tuples (collections.namedtuple: typing.NamedTuple would import
# typing): as immutable as a record, and the model's cache holds them as JSON arrays.

Clone = namedtuple("Clone", "path remote root")
"""A clone of a repository binding's repository found on this machine, and why it matched:
``path`` canonical; ``remote`` the remote that matched, its name and URL as .git/config writes
it; ``root`` the root it was found under (None: a folder bound by path)."""

Repo = namedtuple("Repo", "name repo uses clones hooks", defaults=((),))
"""A binding by git remote (``repo: github.com/acme/api``): each clone found is bound. ``name``
its key in the model; ``repo`` the remote, normalised (core.repos); ``uses`` and ``hooks`` what
it says; ``clones`` the Clones found."""

Layer = namedtuple("Layer", "path sha256 included_by local hooks distrust remote", defaults=((), (), None, ()))
"""One file of the model (core.layers): the files it includes come before it; the model's own
file is last. ``path`` absolute, as the include named it; ``included_by`` (the including
layer's index, the include's index in its list), None for the model's file; ``local`` the local
providers and ``hooks`` the hooks it defines or gives settings to; ``remote`` the token-carrying
remote providers whose url or token it gives; ``distrust`` why those do not run (and those
remote ones are left out: an included layer not trusted with these bytes), None: they may."""


class Model(Record):
    """The checked model."""

    source: Path
    clients: tuple[str, ...] | None  # None: the clients found on this machine
    providers: tuple[Provider, ...]  # sorted by name
    bindings: tuple[Binding, ...]  # sorted by path (a clone of a repository binding is one too)
    hooks: tuple[Hook, ...] = ()  # for every folder, in the model's order (core.hooks)
    layers: tuple[Layer, ...] = ()  # in order; the model's own file last
    repos: tuple[Repo, ...] = ()
    watched: tuple[str, ...] = ()  # what else the model depends on: optional includes, globs' folders, the clones' folders and configs
    variables: tuple[str, ...] = ()  # variables the includes and roots name
    withheld: tuple[Provider, ...] = ()  # token-carrying remote providers left out: a layer that placed their url or token is not trusted
    # (provider, layer file) for each token-less remote provider whose url a layer not trusted with its bytes chose
    urls_chosen: tuple[tuple[str, str], ...] = ()

    def provider(self, name: str) -> Provider | None:
        return next((p for p in self.providers if p.name == name), None)

    def bindings_of(self, provider: str) -> tuple[Binding, ...]:
        return self._bindings_by_provider.get(provider, ())

    @cached_property
    def _bindings_by_provider(self) -> dict[str, tuple[Binding, ...]]:
        """One pass over the bindings, not one per provider (50 × 1,000 at scale)."""
        found: dict[str, list[Binding]] = {}
        for binding in self.bindings:
            for name, _ in binding.uses:
                found.setdefault(name, []).append(binding)
        return {name: tuple(bindings) for name, bindings in found.items()}

    def bound(self, provider: str) -> bool:
        """Whether a binding names ``provider``: by folder, or by repository (clones found or not)."""
        return bool(self.bindings_of(provider)) or any(dict(r.uses).get(provider) is not None for r in self.repos)

    def blocked(self, provider: str) -> str | None:
        """Why local provider ``provider`` must not run (an included layer that says something of
        it is not trusted with its current bytes); None: nothing stops it."""
        return next((layer.distrust for layer in self.layers if layer.distrust and provider in layer.local), None)

    def hook_blocked(self, name: str) -> str | None:
        """Why hook ``name`` must not run, in any folder (an included layer that defines it, or
        says something of it, is not trusted with its current bytes); None: nothing stops it."""
        return next((layer.distrust for layer in self.layers if layer.distrust and name in layer.hooks), None)

    def left_out(self, name: str) -> str | None:
        """Why remote provider ``name`` is left out (a layer that decides where its token goes is
        not trusted with its current bytes); None: it is not."""
        return next((layer.distrust for layer in self.layers if layer.distrust and name in layer.remote), None)

    def repo(self, name: str) -> Repo | None:
        return next((r for r in self.repos if r.name == name), None)


class Project(Record):
    """A trusted project file (core.projects)."""

    root: str  # canonical folder the file sits in
    file: str
    providers: tuple[Provider, ...]  # local providers owned by this workspace
    uses: tuple[tuple[str, Settings], ...]  # what the file says of each provider here
    hooks: tuple[Hook, ...] = ()  # what the file says of hooks (core.hooks)

    def settings(self, name: str) -> Settings | None:
        return dict(self.uses).get(name)

    def provider(self, name: str) -> Provider | None:
        return next((p for p in self.providers if p.name == name), None)

    def mentions(self, name: str) -> bool:
        return self.provider(name) is not None or self.settings(name) is not None


# --------------------------------------------------------------------------- the model's words

REMOTE_KEYS = ("url", "token_env", "oauth", "kbs", "default", "listen", "timeout", "insecure")
LOCAL_KEYS = ("command", "args", "cwd", "env", "shared", "linger")
REMOTE_SETTINGS = ("kbs", "enabled", "tools")  # what a workspace may change of a remote provider
MAX_BYTES = 64 * 1024 * 1024  # a model file's size: far beyond any model; a device or a runaway file is not one
RESERVED = ("worktrees", "providers", "hooks", "repo", "remove")  # keys of a binding or project file that are not providers


def token_words(provider: Provider | Mapping[str, Any]) -> str:
    """A provider's token as a person reads it: ``$VAR``, or "its OAuth token"."""
    token_env = provider.get("token_env") if isinstance(provider, Mapping) else provider.token_env
    return f"${token_env}" if token_env else "its OAuth token"


def loopback(host: str) -> bool:
    """Whether ``host`` (from a URL) is this machine: localhost, 127.0.0.0/8 or ::1."""
    import ipaddress

    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def clear_text_host(provider: Provider | Mapping[str, Any]) -> str | None:
    """The host a provider's token would reach over plain http:// (not this machine); None: it
    has no token, or it is sent over TLS or only to loopback."""
    get = provider.get if isinstance(provider, Mapping) else lambda key: getattr(provider, key, None)
    url = get("url")
    if not isinstance(url, str) or not (get("token_env") or get("oauth")):
        return None
    return plain_http_host(url)


def plain_http_host(url: str) -> str | None:
    """The host ``url`` reaches over plain http:// when it is not this machine (a secret sent
    there crosses the network in clear); None: https://, or http:// to loopback only. The rule
    for a provider's url, and for the authorization server a sign-in or a refresh talks to."""
    if not url.lower().startswith("http://"):
        return None
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return None
    return None if loopback(host) else host


def is_folder(raw: str) -> bool:
    """Whether a binding's key names a folder (absolute, under ~ or a variable); else it names a repository binding."""
    return raw.startswith(("/", "~", "$"))


# --------------------------------------------------------------------------- records of checked data


def _kb_set(value: Any) -> KbSet:
    return None if value is None else tuple(str(kb) for kb in value)


def _strings(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(str(item) for item in value)


def _env(value: Any) -> Env | None:
    return None if value is None else tuple((str(k), None if v is None else str(v)) for k, v in value.items())


def settings(value: Any) -> Settings:
    """A binding's value for one provider: a KB list, or a mapping of settings."""
    if not isinstance(value, Mapping):
        return Settings(kbs=_kb_set(value))
    return Settings(
        kbs=_kb_set(value.get("kbs")),
        enabled=value.get("enabled"),
        command=value.get("command"),
        args=_strings(value.get("args")),
        cwd=value.get("cwd"),
        env=_env(value.get("env")),
        env_files=_strings(value.get("env_files")),
        direnv=value.get("direnv"),
        shared=value.get("shared"),
        linger=value.get("linger"),
        tools=rule(value.get("tools")),
    )


def provider(name: str, spec: Mapping[str, Any]) -> Provider:
    return Provider(
        name=str(name),
        url=spec.get("url"),
        token_env=spec.get("token_env"),
        kbs=_kb_set(spec.get("kbs")),
        default=_kb_set(spec.get("default")),
        command=spec.get("command"),
        args=_strings(spec.get("args")) or (),
        cwd=spec.get("cwd"),
        env=_env(spec.get("env")) or (),
        enabled=spec.get("enabled", True),
        oauth=oauth(spec.get("oauth")),
        shared=spec.get("shared"),
        linger=spec.get("linger"),
        listen=bool(spec.get("listen", False)),
        timeout=float(spec.get("timeout", Provider.timeout)),
        tools=rule(spec.get("tools")),
        insecure=bool(spec.get("insecure", False)),
    )


def oauth(value: Any) -> OAuth | None:
    """A provider's ``oauth``: false/absent (None), true, "client", or a mapping of settings."""
    if not value:
        return None
    if not isinstance(value, Mapping):
        return OAuth(by_client=value == "client")
    credentials, enterprise = value.get("client_credentials"), value.get("enterprise") or {}
    key = credentials if isinstance(credentials, Mapping) else {}
    return OAuth(
        client_id=value.get("client_id"),
        client_secret_env=value.get("client_secret_env"),
        client_metadata_url=value.get("client_metadata_url"),
        scopes=_strings(value.get("scopes")),
        redirect_port=value.get("redirect_port"),
        grant="client_credentials" if credentials else "enterprise" if enterprise else "authorization_code",
        private_key_file=key.get("private_key_file"),
        algorithm=key.get("algorithm", "RS256") if key else None,
        issuer=enterprise.get("issuer") if enterprise else value.get("issuer"),
        idp_token_endpoint=enterprise.get("idp_token_endpoint"),
        idp_client_id=enterprise.get("idp_client_id"),
        idp_client_secret_env=enterprise.get("idp_client_secret_env"),
        id_token_env=enterprise.get("id_token_env"),
    )


def uses(binding: Mapping[str, Any]) -> tuple[tuple[str, Settings], ...]:
    return tuple(sorted((str(p), settings(v)) for p, v in binding.items() if p not in RESERVED))

