"""Per-worker summary of a pytest junit file written with the verifier plugin: which xdist worker and
GPU ran how many tests, with what outcome, and how many of them ran in a child process because the
worker's CUDA context had been lost to a fault (the `isolated` property).

    python tools/junit_workers.py junit.xml [--kernel GLOB]
"""
from __future__ import annotations

import argparse
import fnmatch
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict


def summarize(path: str, kernel_glob: str | None = None) -> dict:
    """{(worker, gpu): Counter(passed=…, failure=…, skipped=…, error=…, isolated=…)}"""
    rows: dict = defaultdict(Counter)
    for tc in ET.parse(path).getroot().iter("testcase"):
        props: dict = {}
        for p in tc.iter("property"):
            props.setdefault(p.get("name"), p.get("value"))
        if kernel_glob and not fnmatch.fnmatchcase(props.get("kernel", ""), kernel_glob):
            continue
        kind = next((k for k in ("failure", "error", "skipped") if tc.find(k) is not None), "passed")
        key = (props.get("worker", "-"), props.get("cuda_visible_devices", "-"))
        rows[key][kind] += 1
        rows[key]["isolated"] += "isolated" in props
    return dict(rows)


def render(rows: dict) -> str:
    cols = ("passed", "failure", "error", "skipped", "isolated")
    out = ["| worker | GPU | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    for (worker, gpu), c in sorted(rows.items()):
        out.append(f"| {worker} | {gpu} | " + " | ".join(str(c[k]) for k in cols) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit")
    ap.add_argument("--kernel", help="only tests of kernels matching this glob")
    args = ap.parse_args(argv)
    try:
        rows = summarize(args.junit, args.kernel)
    except (OSError, ET.ParseError) as e:
        print(f"junit_workers: cannot read {args.junit}: {e}\n  fix: pass the file pytest --junitxml wrote",
              file=sys.stderr)
        return 2
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
