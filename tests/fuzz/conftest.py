"""Shared pieces of the fuzz suite: mutation strategies and the "one line, exit 2, no traceback" check."""
