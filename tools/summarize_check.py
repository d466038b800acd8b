"""Summarize `verifier check --format json` results as a Markdown table (used for docs/gpu-runs/).

    python tools/summarize_check.py result.json [more.json ...]
"""
from __future__ import annotations

import json
import sys
from collections import Counter


def main(paths) -> int:
    rows, env, total = [], None, Counter()
    for p in paths:
        try:
            with open(p) as fh:
                data = json.load(fh)
        except (OSError, ValueError) as e:
            print(f"{p}: unreadable ({e})", file=sys.stderr)
            continue
        env = env or data.get("environment")
        for k in data["kernels"]:
            checks = Counter(f["check"] for f in k["findings"] if f["severity"] == "error")
            skipped = sorted({v for d in k["checks"].values() for v in d.values() if v.startswith("skipped")})
            rows.append((k["name"], k["kind"], k["op"], ",".join(k["dtypes"]), k["verdict"], k["seconds"],
                         ", ".join(f"{c} {n}" for c, n in sorted(checks.items())) or "-", "; ".join(skipped) or "-"))
            total[k["verdict"]] += 1
    if env:
        print("environment: " + ", ".join(f"{k}={v}" for k, v in env.items() if v))
        print()
    print(f"{sum(total.values())} kernels: " + ", ".join(f"{v} {n}" for v, n in sorted(total.items())))
    print()
    print("| kernel | kind | op | dtypes | verdict | seconds | findings (errors by check) | skipped |")
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted(rows):
        print(f"| `{r[0]}` | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.1f} | {r[6]} | {r[7]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
