"""What reading a stored OAuth secret costs a fresh process, per way of reading it: the choice
behind core.tokenstore (the access token in a 0600 file read at every bridge start, the refresh
token in the keyring read only to refresh).

    .venv/bin/python bench/tokenstore_bench.py [--runs N] [--python PATH]

Rows, each a fresh `python -c` against `python -c pass` in the same rounds: the token file as
core.tokenstore reads it; `secret-tool lookup` in a subprocess (what core.tokenstore uses); the
`secretstorage` package (D-Bus through jeepney) and the `keyring` package. The last two are not
projector's dependencies: give --python an interpreter that has them (`pip install keyring`
brings both), else their rows say they are missing. Everything runs against a real Secret
Service: gnome-keyring-daemon, unlocked, on a D-Bus session of its own in a temporary HOME.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from measure import Case, load, median_ms, rounds, table

ROOT = Path(__file__).resolve().parent.parent
LOOKUP = ["secret-tool", "lookup", "service", "projector", "state", "bench", "provider", "bench"]
READERS = {
    "token file (core.tokenstore.read)": "from projector.core import tokenstore\nassert tokenstore.read({state!r}, 'bench')",
    "secret-tool subprocess": f"import subprocess\nassert subprocess.run({LOOKUP!r}, capture_output=True).stdout",
    "secretstorage package": "import secretstorage\nc = secretstorage.dbus_init()\n"
                             "item = next(secretstorage.get_default_collection(c).search_items({{'service': 'projector', 'username': 'bench'}}))\n"
                             "assert item.get_secret()",
    "keyring package": "import keyring\nassert keyring.get_password('projector', 'bench')",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--python", default=sys.executable, help="an interpreter with keyring and secretstorage installed")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        environ = {**os.environ, "HOME": home, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={home}/bus",
                   "PYTHONPATH": str(ROOT / "src")}
        started = subprocess.run(["dbus-daemon", "--session", "--fork", "--print-pid=1", f"--address=unix:path={home}/bus"],
                                 capture_output=True, text=True, check=True, env=environ)
        try:
            subprocess.run(["gnome-keyring-daemon", "--unlock", "--components=secrets"], input="bench", env=environ,
                           capture_output=True, text=True, check=True)
            measure(options, environ, home)
        finally:
            os.kill(int(started.stdout.split()[0]), signal.SIGTERM)


def measure(options: argparse.Namespace, environ: dict[str, str], home: str) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from projector.core import tokenstore

    state = os.path.join(home, "state")
    tokenstore.write(state, "bench", tokenstore.Tokens(access_token="bench-access", expires_at=None))
    secret = "bench-refresh"
    subprocess.run(["secret-tool", "store", "--label", "bench", *LOOKUP[2:]], input=secret, text=True, env=environ, check=True)
    subprocess.run(["secret-tool", "store", "--label", "bench", "service", "projector", "username", "bench"], input=secret,
                   text=True, env=environ, check=True)
    baseline = Case("python -c pass", [options.python, "-c", "pass"], environ)
    cases = [baseline]
    for label, code in READERS.items():
        source = code.format(state=state)
        probe = subprocess.run([options.python, "-c", source], env=environ, capture_output=True, check=False)
        if probe.returncode == 0:
            cases.append(Case(label, [options.python, "-c", source], environ))
        else:
            print(f"{label}: not measured ({probe.stderr.decode(errors='replace').strip().splitlines()[-1:]})")
    rounds(cases, options.runs)
    print(f"{options.runs} rounds; {load()}")
    table([(case.label, [f"{median_ms(case):.1f} ms", f"{median_ms(case, cpu=True):.1f} ms",
                         f"+{median_ms(case, cpu=True) - median_ms(baseline, cpu=True):.1f} ms"]) for case in cases],
          ["wall (median)", "CPU (median)", "CPU over pass"])


if __name__ == "__main__":
    main()
