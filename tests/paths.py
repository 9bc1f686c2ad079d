"""Where the tests' own files are, and the shared material beside the clone."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
SERVERS = TESTS / "servers"
TOOLS = TESTS / "tools"
SHARED = TESTS.parent.parent / "shared"
CORPUS = SHARED / "corpus"
REFERENCE = SHARED / "reference"
