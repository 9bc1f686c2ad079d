"""A stand-in for macOS's /usr/bin/security (no Mac here): the generic-password commands
projector uses, over a JSON file of items, with ``-i`` reading commands from standard input and
splitting each line as Apple's SecurityTool does (security.c's split_line: blanks between
arguments, double or single quotes, a backslash escaping the next character; lines read as
fgets reads them into its 4096-byte buffer). Every run is appended to $SECURITY_LOG: its argv,
its standard input, and its environment's names and values.

Exit codes as security's: 0, 44 (errSecItemNotFound's tool status) when no item matches, 45
(a duplicate without -U), 2 for a usage error."""

from __future__ import annotations

import json
import os
import sys

MAX_LINE_LEN = 4096
ITEMS = os.environ["SECURITY_ITEMS"]


def split_line(line: str) -> list[str]:
    """SecurityTool's split_line, state for state."""
    args: list[str] = []
    current: list[str] | None = None
    state, quote = "skip", ""
    for ch in line:
        if state == "skip":
            if ch.isspace():
                continue
            current = []
            if ch in "\"'":
                quote, state = ch, "quoted"
                continue
            state = "arg"
        if state.endswith("-escaped"):  # READ_ARG_ESCAPED, QUOTED_ARG_ESCAPED: the character as it is
            current.append(ch)
            state = state.removesuffix("-escaped")
        elif ch == "\\":
            state += "-escaped"
        elif (state == "arg" and ch.isspace()) or (state == "quoted" and ch == quote):  # the argument ends
            args.append("".join(current or []))
            state = "skip"
        else:
            current.append(ch)
    if state != "skip":
        args.append("".join(current or []))
    return args


def options(argv: list[str], flags: str) -> dict[str, str | bool]:
    found: dict[str, str | bool] = {}
    words = iter(argv)
    for word in words:
        if word.startswith("-") and len(word) == 2 and word[1] in flags:
            found[word[1]] = True
        elif word.startswith("-") and len(word) == 2:
            found[word[1]] = next(words)
        else:
            raise SystemExit(2)
    return found


def load() -> list[dict[str, str]]:
    try:
        with open(ITEMS) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return []


def save(items: list[dict[str, str]]) -> None:
    with open(ITEMS, "w") as handle:
        json.dump(items, handle)


def run(argv: list[str]) -> int:
    command, rest = argv[0], argv[1:]
    items = load()
    if command == "add-generic-password":
        given = options(rest, "U")
        same = [i for i in items if (i["service"], i["account"]) == (given.get("s"), given.get("a"))]
        if same and not given.get("U"):
            return 45
        items = [i for i in items if i not in same]
        items.append({"service": given["s"], "account": given["a"], "label": given.get("l", given["s"]), "password": given["w"]})
        save(items)
        return 0
    if command in ("find-generic-password", "delete-generic-password"):
        given = options(rest, "wg")
        same = [i for i in items if all(i[k] == given[f] for k, f in (("service", "s"), ("account", "a")) if f in given)]
        if not same:
            print("security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.", file=sys.stderr)
            return 44
        if command == "delete-generic-password":
            items.remove(same[0])
            save(items)
        elif given.get("w"):
            print(same[0]["password"])
        return 0
    return 2


def main() -> int:
    argv = sys.argv[1:]
    stdin = sys.stdin.read() if argv == ["-i"] else ""
    with open(os.environ["SECURITY_LOG"], "a") as log:
        log.write(json.dumps({"argv": argv, "stdin": stdin, "environ": dict(os.environ)}) + "\n")
    if argv != ["-i"]:
        return run(argv)
    result = 0
    for start in range(0, len(stdin), MAX_LINE_LEN - 1):  # fgets into a 4096-byte buffer: a longer line comes in pieces
        for line in stdin[start:start + MAX_LINE_LEN - 1].splitlines():
            words = split_line(line)
            if words:
                result = run(words)
    return result


if __name__ == "__main__":
    sys.exit(main())
