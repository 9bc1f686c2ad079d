"""`bind` and `unbind`: edits of the user's model that keep every comment and the key order.

ruamel.yaml's round trip gives back the file as it was outside the edit. A folder is written the
way a person writes it (``~/...`` under the home folder) and matched against existing bindings by
its canonical path, so ``~/w``, ``$HOME/w`` and a symlink to it are the same binding. The edited
text is checked like a hand edit before anything is written.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from projector.core.errors import ModelError, Problem, did_you_mean, display_path
from projector.core.model import expand_path


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a line the user wrote on one
    return yaml


def _absolute(folder: str, environ: Mapping[str, str]) -> str:
    return os.path.realpath(expand_path(folder, environ))


def _key_for(folder: str, environ: Mapping[str, str]) -> str:
    return display_path(_absolute(folder, environ), Path(environ.get("HOME") or Path.home()))


def _existing_key(bindings: Any, folder: str, environ: Mapping[str, str]) -> Any:
    wanted = _absolute(folder, environ)
    for key in bindings or {}:
        try:
            if os.path.realpath(expand_path(str(key), environ)) == wanted:
                return key
        except KeyError:
            continue
    return None


def bind(
    text: str, source: str, folder: str, provider: str, kbs: list[str] | None, environ: Mapping[str, str], enabled: bool | None = None,
    providers: Mapping[str, bool] | None = None,
) -> str:
    """Bind ``folder``: ``provider`` shows ``kbs`` there, or is turned on or off there
    (``enabled``). A provider's existing settings in that binding are kept. ``providers``: each
    provider of the model and whether it is local, its layers merged (core.layers); absent: the
    ones ``text`` declares."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    yaml = _yaml()
    data = yaml.load(text)
    if providers is None:
        providers = {str(name): "command" in spec for name, spec in (data.get("providers") or {}).items()}
    if provider not in providers:
        known = ", ".join(providers) or "none"
        guess = did_you_mean(provider, providers)
        raise ModelError(Problem(source, None, None, f'no provider named "{provider}"{guess} (providers: {known})'))
    if kbs is not None and providers[provider]:
        raise ModelError(Problem(source, None, None, f'"{provider}" is a local provider: it has no KBs; use --on or --off'))
    if data.get("bindings") is None:
        data["bindings"] = CommentedMap()
    bindings = data["bindings"]
    key = _existing_key(bindings, folder, environ) or _key_for(folder, environ)
    if bindings.get(key) is None:
        bindings[key] = CommentedMap()
    current = bindings[key].get(provider)
    if kbs is not None:
        value = _flow(CommentedSeq(kbs))  # [a, b], as the examples write it
        if isinstance(current, dict):
            current["kbs"] = value
            return _dump(yaml, data)
        bindings[key][provider] = value
        return _dump(yaml, data)
    if not isinstance(current, dict):
        settings = CommentedMap({"kbs": _flow(CommentedSeq(current))} if current is not None else {})
        settings.fa.set_flow_style()  # {enabled: true}; the line's comment stays on the binding's key
        bindings[key][provider] = current = settings
    current["enabled"] = bool(enabled)
    return _dump(yaml, data)


def unbind(text: str, source: str, folder: str, provider: str | None, environ: Mapping[str, str]) -> str:
    yaml = _yaml()
    data = yaml.load(text)
    bindings = data.get("bindings") or {}
    key = _existing_key(bindings, folder, environ)
    if key is None or (provider is not None and provider not in (bindings[key] or {})):
        what = f'provider "{provider}" in ' if provider else ""
        raise ModelError(Problem(source, None, None, f"no binding of {what}{_key_for(folder, environ)}"))
    if provider is not None:
        del bindings[key][provider]
    if provider is None or not bindings[key]:
        del bindings[key]
    if not bindings:  # written as "bindings: {}", not as a "{}" stranded below a comment
        from ruamel.yaml.comments import CommentedMap

        empty = CommentedMap()
        empty.fa.set_flow_style()
        data["bindings"] = empty
        tokens = data.ca.items.get("bindings")
        if tokens and len(tokens) > 3:
            tokens[3] = None  # the comment that opened the removed folders; the blank line before stays
    return _dump(yaml, data)


def _flow(node: Any) -> Any:
    node.fa.set_flow_style()
    return node


def _dump(yaml: Any, data: Any) -> str:
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def add_providers(text: str, providers: Mapping[str, Mapping[str, Any]], bindings: Mapping[str, Mapping[str, Any]]) -> str:
    """The model with ``providers`` added (each a block, its lists and env inline) and each
    folder's ``bindings`` settings added to its binding; every comment and key order kept."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    yaml = _yaml()
    data = yaml.load(text) if text.strip() else None
    if data is None:
        data = CommentedMap({"version": 1})
    for section, additions in (("providers", providers), ("bindings", bindings)):
        if not additions:
            continue
        if not data.get(section):  # absent, or the starter's "{}" below its comments
            data[section] = CommentedMap()
        for name, spec in additions.items():
            node = CommentedMap()
            for key, value in spec.items():
                if isinstance(value, list):
                    value = _flow(CommentedSeq(value))
                elif isinstance(value, Mapping):
                    value = _flow(CommentedMap(value))
                node[key] = value
            if section == "bindings" and isinstance(data[section].get(name), dict):
                data[section][name].update(node)
            else:
                data[section][name] = node
    return _dump(yaml, data)
