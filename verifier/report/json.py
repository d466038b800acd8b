"""JSON report: the run as verifier.results.serialize writes it (schema in docs/json-schema.md)."""
from __future__ import annotations

import json as _json

from verifier.results.serialize import to_dict


def render(result) -> str:
    return _json.dumps(to_dict(result), indent=2, default=str) + "\n"
