"""compute-sanitizer integration: run racecheck / memcheck / synccheck / initcheck on a kernel, parse
the XML records into findings, apply checked-in suppressions.

- :func:`sanitize` — one tool on one kernel and dtype → :class:`SanitizerRun` (driver.py);
- :func:`battery_hook` — what ``verifier check --sanitize`` calls (driver.py);
- ``verifier sanitize`` — the command (command.py); XML parsing in xmlparse.py, suppressions in
  suppressions.py, the watched process in child.py.
"""
from verifier.sanitizer.runs import TOOLS, SanitizerRun, battery_hook, sanitize

__all__ = ["TOOLS", "SanitizerRun", "battery_hook", "sanitize"]
