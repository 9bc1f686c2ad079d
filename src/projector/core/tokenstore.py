"""Where an OAuth provider's tokens live, once for every client and folder.

Two places, chosen from what a bridge's start can afford (bench/tokenstore_bench.py): a start
reads the provider's token file, ``<state>/oauth/<provider>.json`` (mode 0600, in a 0700
folder), which holds the short-lived access token, its expiry and what a refresh needs but
its secrets. The long-lived secrets (the refresh token, a registered client's secret) go to
the OS keyring when one is reachable (a Secret Service through ``secret-tool``, the macOS
Keychain through ``security``; read only when a token is refreshed, about once an hour); else
they stay in the same file. Asking the keyring at every
start would cost 20 ms of CPU through ``secret-tool``, 50 through ``secretstorage`` and 175
through ``keyring``, against a 40 ms start.

A token file is read only when it is the user's own and no one else may read it: one that
another user owns, or that a group or others can read, is refused with what to do. No token is
ever part of an error message, a log line or a repr.
"""

from __future__ import annotations

import json
import os
import stat

from projector.core.record import Factory, Record, replace

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any

KEYRING = "keyring"  # a token file's "secrets" when they are in the keyring
FOLDER = "oauth"
EXPIRES_SOON = 300.0  # seconds before expiry a token is renewed rather than used
NO_FILE = "none"  # the stamp of a token file that is not there


class Unsafe(Exception):
    """A token file others could have read or written: it is not used (the message says what to do)."""


class Unfit(Unsafe):
    """A token no request can carry (``unfit``): not kept. An Unsafe, so that whatever refuses
    a token file that cannot be trusted refuses this one alike, the message naming no token."""


class Secrets(Record):
    """What a token file keeps out of itself when there is a keyring."""

    refresh_token: str | None = None
    client_secret: str | None = None  # a client registered at sign-in (Dynamic Client Registration)

    def __repr__(self) -> str:
        return "Secrets(...)"


def covers(granted: str | None, wanted: str) -> bool:
    """Whether the scopes ``granted`` (space-separated; None: none said) include every one ``wanted``."""
    return set(wanted.split()) <= set((granted or "").split())


class Tokens(Record):
    """One provider's sign-in, as the bridge uses it."""

    access_token: str
    expires_at: float | None  # seconds since the epoch; None: the server did not say
    token_endpoint: str | None = None  # where a refresh goes
    revocation_endpoint: str | None = None  # where `projector logout` revokes them (RFC 7009), when the server has one
    client_id: str | None = None
    auth_method: str = "none"  # how the client authenticates there: none, client_secret_basic, client_secret_post
    resource: str | None = None  # the resource indicator (RFC 8707) of every token request
    scope: str | None = None
    account: str | None = None  # who signed in, when the server said ("signed in as ...")
    lifetime: float | None = None  # seconds the server gave the access token (expires_in), when it said
    secrets: Secrets = Factory(Secrets, compare=False)
    in_keyring: bool = False  # the secrets live in the keyring (read them with keyring_secrets)

    def __repr__(self) -> str:
        return f"Tokens(expires_at={self.expires_at!r}, client_id={self.client_id!r}, in_keyring={self.in_keyring})"

    def usable(self, now: float, margin: float = EXPIRES_SOON) -> bool:
        return self.expires_at is None or self.expires_at - self.renewed_before(margin) > now

    def current_for(self, url: str | None, now: float) -> bool:
        """Not expired at ``now`` and issued for ``url``: a sign-in that can be sent as it is."""
        return self.usable(now, margin=0) and self.serves(url)

    def serves(self, url: str | None) -> bool:
        """Whether this sign-in was issued for ``url`` (its RFC 8707 resource), compared as the
        MCP SDK's check_resource_allowed does: the same origin, and the URL's path at or below
        the resource's (the Protected Resource Metadata may name a parent). A sign-in that names
        no resource, or a provider with no URL, is taken as it is."""
        if not self.resource or not url:
            return True
        from urllib.parse import urlsplit

        issued, asked = urlsplit(self.resource), urlsplit(url)
        if (issued.scheme.lower(), issued.netloc.lower()) != (asked.scheme.lower(), asked.netloc.lower()):
            return False
        return (asked.path.rstrip("/") + "/").startswith(issued.path.rstrip("/") + "/")

    def renewed_before(self, margin: float) -> float:
        """How long before its expiry the token is renewed: ``margin``, but at most half its
        lifetime: a server that gives two-minute tokens would otherwise see a refresh at every
        session's start, each bridge taking the token another had just renewed for an old one."""
        return margin if self.lifetime is None else min(margin, self.lifetime / 2)


def sendable(token: str) -> bool:
    """Whether ``token`` is what RFC 6749 (Appendix A) lets an access or refresh token be: one or
    more printable ASCII characters (VSCHAR, %x20-7E). A line break in one would end the header
    it goes in and start another the server never sent; a request that refuses it quotes it."""
    return bool(token) and token.isascii() and token.isprintable()


def unfit(provider: str, access_token: str, refresh_token: str | None) -> str | None:
    """Why a sign-in's tokens (a login's, a refresh's answer) are not kept: which of them holds a
    character no request can carry, and what to do; never the token. None: they may be kept."""
    which = ("an access token" if not sendable(access_token)
             else "a refresh token" if refresh_token is not None and not sendable(refresh_token) else None)
    if which is None:
        return None
    return (f"the authorization server of {provider} answered with {which} holding a line break, a control or a "
            "non-ASCII character, which no request can carry (RFC 6749 allows printable ASCII only): projector does not "
            f"keep it; sign in again (projector login {provider}), and if the server answers the same, tell its operator")


def private_folder(state: str) -> str:
    """``<state>/oauth``, made (0700) where it is not: ``Unsafe`` when it is another user's or
    others may write in it (they could plant a symlink where a sign-in's log or a lock goes, or
    hold the lock forever); one others may only read is made 0700 (its files are 0600 each)."""
    folder = os.path.join(state, FOLDER)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    status = os.stat(folder)
    if status.st_uid != os.getuid():
        raise Unsafe(f"{folder}: owned by user {status.st_uid}, not by you ({os.getuid()}): projector keeps no sign-in "
                     f"there; remove it, or set PROJECTOR_STATE to a folder of yours")
    if status.st_mode & 0o022:
        raise Unsafe(f"{folder}: mode {stat.S_IMODE(status.st_mode):04o} lets others write in it: check what is in it, "
                     f"then make it private (chmod 700 {folder}) and sign in again")
    if status.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return folder


def token_file(state: str, provider: str) -> str:
    return os.path.join(state, FOLDER, provider + ".json")


def lock_file(state: str, provider: str) -> str:
    """The lock a refresh or a sign-in of ``provider`` is taken under, by every process alike."""
    return os.path.join(state, FOLDER, provider + ".lock")


def read(state: str, provider: str) -> Tokens | None:
    """The provider's tokens; None: not signed in. ``Unsafe`` for a file that is not private."""
    return read_stamped(state, provider)[0]


def read_stamped(state: str, provider: str) -> tuple[Tokens | None, str]:
    """``read``, with the stamp (``stamp``) of the very file the tokens were read from: a reader
    that keeps them knows them current while the file's stamp stays that one."""
    path = token_file(state, provider)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, NO_FILE
    except OSError as exc:  # a symlink (ELOOP) or an unreadable file
        raise Unsafe(f"{path}: cannot be read safely ({exc.strerror}); remove it and sign in again: "
                     f"projector login {provider}") from None
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        _refuse_unless_private(status, path, provider)
        try:
            data = json.loads(handle.read())
            return _tokens(data), _stamp_of(status)
        except (ValueError, KeyError, TypeError):
            raise Unsafe(f"{path}: not a token file projector wrote; remove it and sign in again: "
                         f"projector login {provider}") from None


def _refuse_unless_private(status: os.stat_result, path: str, provider: str) -> None:
    if status.st_uid != os.getuid():
        raise Unsafe(f"{path}: owned by user {status.st_uid}, not by you ({os.getuid()}): another user could have written "
                     f"it; remove it (rm {path}) and sign in again: projector login {provider}")
    if not stat.S_ISREG(status.st_mode):
        raise Unsafe(f"{path}: not a regular file; remove it and sign in again: projector login {provider}")
    if status.st_mode & 0o077:
        raise Unsafe(f"{path}: mode {stat.S_IMODE(status.st_mode):04o} lets others read it, so its token may have been read: "
                     f"sign out and in again (projector logout {provider}; projector login {provider}), "
                     f"which writes it 0600")


def _tokens(data: Mapping[str, Any]) -> Tokens:
    secrets = data.get("secrets")
    return Tokens(
        access_token=str(data["access_token"]),
        expires_at=None if data.get("expires_at") is None else float(data["expires_at"]),
        token_endpoint=data.get("token_endpoint"),
        revocation_endpoint=data.get("revocation_endpoint"),
        client_id=data.get("client_id"),
        auth_method=data.get("auth_method", "none"),
        resource=data.get("resource"),
        scope=data.get("scope"),
        account=data.get("account"),
        lifetime=None if data.get("lifetime") is None else float(data["lifetime"]),
        secrets=_secrets(secrets),
        in_keyring=secrets == KEYRING,
    )


def _secrets(kept: object) -> Secrets:
    """The secrets a token file or a keyring item keeps (a JSON object); none from anything else."""
    if not isinstance(kept, dict):
        return Secrets()
    return Secrets(refresh_token=kept.get("refresh_token"), client_secret=kept.get("client_secret"))


def write(state: str, provider: str, tokens: Tokens, keyring: Keyring | None = None) -> Tokens:
    """Keep ``tokens``: the secrets in ``keyring`` when one is given and takes them, else in the
    file; the file replaced whole (a reader sees the old one or the new one), mode 0600. Returns
    the tokens as kept (``in_keyring`` says where the secrets went). ``Unfit`` for a token no
    request can carry: nothing is written."""
    if why := unfit(provider, tokens.access_token, tokens.secrets.refresh_token):
        raise Unfit(why)
    private_folder(state)
    secrets = {k: v for k, v in (("refresh_token", tokens.secrets.refresh_token),
                                 ("client_secret", tokens.secrets.client_secret)) if v}
    in_keyring = bool(secrets) and keyring is not None and keyring.store(state, provider, json.dumps(secrets))
    if keyring is not None and not in_keyring:
        keyring.clear(state, provider)  # no stale refresh token left behind where the file no longer points
    data = {name: getattr(tokens, name) for name in ("access_token", "expires_at", "token_endpoint", "revocation_endpoint",
                                                     "client_id", "auth_method", "resource", "scope", "account", "lifetime")
            if getattr(tokens, name) is not None}
    data["secrets"] = KEYRING if in_keyring else secrets
    _replace(token_file(state, provider), json.dumps(data, indent=1).encode())
    return replace(tokens, in_keyring=in_keyring)


def _replace(path: str, data: bytes) -> None:
    while True:  # a name no one has: one of the pid alone may be a killed writer's, left behind
        temporary = f"{path}.{os.urandom(6).hex()}.tmp"
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            continue
    try:
        try:
            os.fchmod(descriptor, 0o600)  # whatever the umask
            os.write(descriptor, data)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)  # no copy of the tokens left beside the file
        raise


def remove(state: str, provider: str, keyring: Keyring | None = None) -> bool:
    """Forget the provider's sign-in (file and keyring); whether there was one."""
    if keyring is not None:
        keyring.clear(state, provider)
    try:
        os.unlink(token_file(state, provider))
        return True
    except FileNotFoundError:
        return False


def secrets_of(state: str, provider: str, tokens: Tokens, keyring: Keyring | None) -> Secrets:
    """The refresh token and client secret, from the keyring when the file says they are there."""
    if not tokens.in_keyring:
        return tokens.secrets
    text = keyring.lookup(state, provider) if keyring is not None else None
    if not text:
        return Secrets()
    try:
        return _secrets(json.loads(text))
    except ValueError:
        return Secrets()


class Keyring:
    """The OS keyring, through its command-line tool, a secret never on a command line (any
    user sees those in ``ps``): the Secret Service on Linux and the BSDs, the Keychain on macOS
    (``backend`` chooses). An item is named by service ``projector``, the state folder and the
    provider."""

    TOOL = ""

    def __init__(self, environ: Mapping[str, str], tool: str) -> None:
        self.environ = dict(environ)
        self.tool = tool

    @staticmethod
    def found(environ: Mapping[str, str], platform: str | None = None) -> Keyring | None:
        """This system's keyring when it can be reached from here; None: the token file keeps the secrets."""
        import sys

        return backend(platform or sys.platform).reachable(environ)

    @classmethod
    def reachable(cls, environ: Mapping[str, str]) -> Keyring | None:
        from projector.core.locations import on_path

        tool = on_path(cls.TOOL, environ)
        return cls(environ, tool) if tool else None

    def _run(self, args: list[str], stdin: str = "") -> tuple[int, str]:
        import subprocess

        try:
            done = subprocess.run([self.tool, *args], input=stdin, capture_output=True, text=True, env=self.environ,
                                  timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return 1, ""
        return done.returncode, done.stdout

    def store(self, state: str, provider: str, secret: str) -> bool:
        raise NotImplementedError

    def lookup(self, state: str, provider: str) -> str | None:
        raise NotImplementedError

    def clear(self, state: str, provider: str) -> None:
        raise NotImplementedError


class SecretService(Keyring):
    """The Secret Service (GNOME Keyring, KWallet's, KeePassXC's), through ``secret-tool``: a
    secret goes on its standard input."""

    TOOL = "secret-tool"

    @classmethod
    def reachable(cls, environ: Mapping[str, str]) -> Keyring | None:
        """When a session bus is there to reach one and ``secret-tool`` is installed. A client
        that starts the bridge with a few variables only leaves the bus's address out: systemd's
        /run/user/UID/bus is the user's session bus then."""
        address = environ.get("DBUS_SESSION_BUS_ADDRESS")
        if not address:
            bus = f"/run/user/{os.getuid()}/bus"
            if not os.path.exists(bus):
                return None
            environ = dict(environ, DBUS_SESSION_BUS_ADDRESS=f"unix:path={bus}")
        elif (socket := _unix_path(address)) is not None and not os.path.exists(socket):
            return None  # nothing listens there: no secret-tool run that can only fail, at each store and read
        return super().reachable(environ)

    def _attributes(self, state: str, provider: str) -> list[str]:
        return ["service", "projector", "state", os.path.abspath(state), "provider", provider]

    def store(self, state: str, provider: str, secret: str) -> bool:
        label = f"projector: {provider} (OAuth)"
        return self._run(["store", "--label", label, *self._attributes(state, provider)], secret)[0] == 0

    def lookup(self, state: str, provider: str) -> str | None:
        code, out = self._run(["lookup", *self._attributes(state, provider)])
        return out if code == 0 and out else None

    def clear(self, state: str, provider: str) -> None:
        self._run(["clear", *self._attributes(state, provider)])


def _unix_path(address: str) -> str | None:
    """The socket of a session-bus address of the form ``unix:path=X[,key=value...]`` (D-Bus
    escapes a byte as %XX); None for any other form (abstract sockets, tcp, a list of addresses
    to try in turn), which secret-tool is left to judge."""
    if ";" in address or not address.startswith("unix:"):
        return None
    for pair in address.removeprefix("unix:").split(","):
        key, _, value = pair.partition("=")
        if key == "path" and value:
            from urllib.parse import unquote

            return unquote(value)
    return None


class Keychain(Keyring):
    """The macOS Keychain, through ``security`` (/usr/bin/security): a generic password of
    service ``projector`` whose account is the provider and the state folder. A secret is stored
    by ``security -i``, which reads the command from its standard input (one line, at most 4096
    bytes, split as a shell would: double quotes, backslash escapes); reading and deleting name
    no secret and run as plain commands. Untested on a real Mac: the command sequence is held to
    what Apple's SecurityTool source parses (tests/core/test_tokenstore.py's stand-in)."""

    TOOL = "security"
    SYSTEM_TOOL = "/usr/bin/security"  # where macOS has it: a client may start the bridge with a PATH without /usr/bin
    LINE = 4096  # SecurityTool's MAX_LINE_LEN: a longer line would be read as two commands

    @classmethod
    def reachable(cls, environ: Mapping[str, str]) -> Keyring | None:
        found = super().reachable(environ)
        return cls(environ, cls.SYSTEM_TOOL) if found is None and os.path.exists(cls.SYSTEM_TOOL) else found

    def _item(self, state: str, provider: str) -> list[str]:
        return ["-s", "projector", "-a", f"{provider}@{os.path.abspath(state)}"]

    def store(self, state: str, provider: str, secret: str) -> bool:
        label = f"projector: {provider} (OAuth)"
        words = ["add-generic-password", "-U", *self._item(state, provider), "-l", label, "-w", secret]
        line = " ".join(_security_quoted(word) for word in words) + "\n"
        if len(line.encode()) >= self.LINE or "\n" in secret or "\0" in secret:
            return False  # the token file keeps it
        return self._run(["-i"], line)[0] == 0

    def lookup(self, state: str, provider: str) -> str | None:
        code, out = self._run(["find-generic-password", *self._item(state, provider), "-w"])
        return out.removesuffix("\n") if code == 0 and out.strip() else None

    def clear(self, state: str, provider: str) -> None:
        self._run(["delete-generic-password", *self._item(state, provider)])


def _security_quoted(word: str) -> str:
    """``word`` as one argument of a ``security -i`` line: in double quotes, ``\\`` and ``"`` escaped."""
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def backend(platform: str) -> type[Keyring]:
    """Which keyring ``platform`` (a ``sys.platform``) has."""
    return Keychain if platform == "darwin" else SecretService


def stamp(state: str, provider: str) -> str:
    """Which version of the provider's token file is there (its inode, change time and size;
    ``none`` without one): a bridge hands it to the sign-in it starts, which signs in only while
    the file is still that one. It says nothing of the tokens."""
    try:
        status = os.stat(token_file(state, provider))
    except OSError:
        return NO_FILE
    return _stamp_of(status)


def _stamp_of(status: os.stat_result) -> str:
    return f"{status.st_ino}-{status.st_mtime_ns}-{status.st_size}"


def held(state: str, provider: str) -> bool:
    """Whether a refresh or a sign-in of ``provider`` holds its lock now (asked without waiting)."""
    from projector.core.files import flock_within

    try:
        descriptor = os.open(lock_file(state, provider), os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False  # no lock file: nobody ever took it
    try:
        return not flock_within(descriptor, 0)
    finally:
        os.close(descriptor)  # (closing it drops the lock this took)


def locked(state: str, provider: str, timeout: float) -> Iterator[None]:
    """The provider's sign-in lock (core.files.exclusive on ``lock_file``): one refresh or one
    sign-in at a time across every process; ``files.Busy`` after ``timeout`` seconds; ``Unsafe``
    when the folder is not private (private_folder)."""
    from pathlib import Path

    from projector.core.files import exclusive

    private_folder(state)
    return exclusive(Path(lock_file(state, provider)), timeout)
