"""Model texts more than one test uses (and, for CODEX_HOOKED, what tests read and edit of its sync)."""

SIX_CLIENTS = """\
version: 1
clients: [claude-code, codex, opencode, crush, kiro, copilot]
providers:
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
  web:
    url: https://web.example.com/mcp
    token_env: WEB_TOKEN
    default: [a]
bindings:
  ~/work/a:
    docs: [x]
"""

TWO_CLIENTS = """\
version: 1
clients: [claude-code, codex]
providers:
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
    kbs: [a, b]
bindings:
  ~/work/a:
    docs: [a]
"""

CODEX_KIRO = """\
version: 1
clients: [codex, kiro]
providers:
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
"""

BOUND_AND_PLAIN = """\
version: 1
clients: [claude-code, codex]
providers:
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
  web:
    url: https://web.example.com/mcp
bindings:
  ~/work/a:
    docs: [x]
"""

# A user's Codex file, typed by hand before projector (issue 27's stories).
USERS_CODEX = """# my codex
model = "o3"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

[mcp_servers.sentry]
url = "https://mcp.sentry.dev/mcp"   # typed by hand
"""

# Codex with a bound provider and a hook: its config.toml holds two of projector's parts (its
# server entries and the trust of its hook group).
CODEX_HOOKED = """\
version: 1
clients: [codex]
providers:
  docs: {url: "https://kb.example.com/mcp", token_env: DOCS_TOKEN, kbs: [a, b]}
bindings:
  ~/work/a:
    docs: [a]
    hooks:
      guard: {event: PreToolUse, command: guard}
"""


def codex_hook_trust(home) -> str:
    """CODEX_HOOKED's hook-group trust entry in Codex's config.toml, as sync, diff and status name it."""
    return f"hook trust {home}/.codex/hooks.json:pre_tool_use:0:0"


def break_codex_trust(path) -> None:
    """A hand edit of the trust hash that Codex's config.toml (``path``) holds for projector's hook group."""
    text = path.read_text()
    trusted = text[text.index('trusted_hash = "') + len('trusted_hash = "'):].split('"')[0]
    path.write_text(text.replace(trusted, "sha256:" + "0" * 64))
