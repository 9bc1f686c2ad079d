"""projector: compile one MCP model into every AI coding client's own config file."""

__version__ = "0.3.0"
