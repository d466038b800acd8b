"""``--plot FILE.png``: GB/s per shape per kernel, one panel per (op, dtype), the copy as a dashed mark.
matplotlib is the optional extra ``kernel-verifier[plot]``."""
from __future__ import annotations

from verifier.bench.plan import BenchResult
from verifier.errors import UsageError

MISSING = ("--plot needs matplotlib, which is not installed", "pip install 'kernel-verifier[plot]' (or matplotlib)")


def require_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(MISSING[0], fix=MISSING[1]) from None
    return plt


def panels(result: BenchResult) -> dict:
    """(op, dtype) -> {'shapes': [...], 'series': {kernel: [GB/s or None per shape]}, 'copy': [...]}"""
    out: dict = {}
    for r in result.rows:
        p = out.setdefault((r.op, r.dtype), {"shapes": [], "series": {}, "copy": {}})
        shape = f"{r.M}x{r.N}"
        if shape not in p["shapes"]:
            p["shapes"].append(shape)
        if r.role == "copy":
            p["copy"][shape] = r.gbs
        elif r.status == "ok":
            p["series"].setdefault(r.kernel, {})[shape] = r.gbs
        else:
            p["series"].setdefault(r.kernel, {})
    for p in out.values():
        p["series"] = {k: [v.get(s) for s in p["shapes"]] for k, v in p["series"].items()}
        p["copy"] = [p["copy"].get(s) for s in p["shapes"]]
    return out


def write(result: BenchResult, path: str) -> None:
    plt = require_matplotlib()
    groups = panels(result)
    if not groups:
        raise UsageError("nothing was timed, so there is nothing to plot", fix="check the kernels' refusals above")
    fig, axes = plt.subplots(len(groups), 1, figsize=(11, 3.6 * len(groups)), squeeze=False)
    for ax, ((op, tag), p) in zip(axes[:, 0], groups.items()):
        n = len(p["series"]) or 1
        width = 0.8 / n
        xs = range(len(p["shapes"]))
        for i, (name, vals) in enumerate(p["series"].items()):
            ax.bar([x - 0.4 + width * (i + 0.5) for x in xs], [v or 0 for v in vals], width, label=name)
        ax.plot(list(xs), [c or 0 for c in p["copy"]], "k_", markersize=40, label="d2d copy")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(p["shapes"])
        ax.set_ylabel("GB/s")
        ax.set_title(f"{op} {tag} - {result.gpu}, {result.date}, commit {result.environment.get('commit')}")
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
