"""Output of a run: the terminal table, results.json and the ratio chart."""

from __future__ import annotations

import json
import math
from pathlib import Path


def _num(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _cell(res: dict | None) -> str:
    if not res:
        return "-"
    if res["status"] in ("ok", "fallback"):
        return _num(res["value"])
    return res["status"]


def format_table(results: dict) -> str:
    """One line per case: the vkml figure with its spread, each baseline and the ratio."""
    baselines = results["baselines"]
    head = ["case", "unit", "vkml", "±%"]
    for b in baselines:
        head += [b, f"x {b}"]
    head += ["status"]
    rows = [head]
    for c in results["cases"]:
        v = c["runs"].get("vkml")
        spread = "-"
        if v and v["status"] in ("ok", "fallback"):
            spread = f"{100 * v['spread']:.0f}"
        row = [c["name"], c["unit"], _cell(v), spread]
        for b in baselines:
            r = c["ratios"].get(b)
            row += [_cell(c["runs"].get(b)), "-" if r is None else f"{r:.3g}x"]
        status = c["status"]
        if v and v.get("fallbacks"):
            status += " (" + ", ".join(f"{k}:{n}" for k, n in sorted(v["fallbacks"].items())) + ")"
        for b, run in c["runs"].items():
            if run.get("message"):
                status += f" [{b}: {run['message']}]"
        if c.get("extra"):
            status += " " + c["extra"]
        if c.get("group") == "model" and v and v.get("engine"):
            e = v["engine"]
            status += (
                f" [per step: {e['dispatches']} dispatches, {e['barriers']} barriers, "
                f"{e['submits']} submits, {e['syncs']} syncs]"
            )
        row.append(status)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    lines = []
    for r in rows:
        cells = [
            r[i].ljust(widths[i]) if i < 2 else r[i].rjust(widths[i]) for i in range(len(widths))
        ]
        lines.append("  ".join(cells) + "  " + r[-1])
    lines.insert(1, "-" * min(160, len(lines[0])))
    legend = (
        "x <baseline> = baseline time / vkml time (> 1: vkml faster); kernels on the device "
        "clock, models end to end (wall). ±% = interquartile range / median of vkml."
    )
    device = results.get("device", {})
    if device.get("coopmat_status"):
        legend += " GEMM on matrix units (VK_KHR_cooperative_matrix): "
        legend += f"fp16 {device['coopmat_status']}"
        if device.get("coopmat_status_bf16"):
            legend += f", bf16 {device['coopmat_status_bf16']}"
        legend += "."
    return "\n".join(lines + ["", legend])


def write_json(results: dict, path: Path) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=False))
    tmp.replace(path)


def plot(results: dict, path: Path) -> str | None:
    """A horizontal bar chart of the ratios (log scale). Returns why not, if not drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # matplotlib is optional at run time
        return f"no chart: {e}"
    baselines = results["baselines"]
    cases = [c for c in results["cases"] if any(b in c["ratios"] for b in baselines)]
    if not cases:
        return "no chart: no ratios"
    fig, ax = plt.subplots(figsize=(10, 1.5 + 0.28 * len(cases) * max(1, len(baselines))))
    height = 0.8 / len(baselines)
    colors = {"cpu": "#4477aa", "cuda": "#66aa55"}
    for j, b in enumerate(baselines):
        ys = [i + j * height for i in range(len(cases))]
        vals = [c["ratios"].get(b, float("nan")) for c in cases]
        ax.barh(ys, vals, height=height, label=f"vs {b}", color=colors.get(b))
    ax.set_yticks([i + height * (len(baselines) - 1) / 2 for i in range(len(cases))])
    ax.set_yticklabels(
        [c["name"] + (" *" if c["status"] == "fallback" else "") for c in cases], fontsize=7
    )
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("baseline time / vkml time (> 1: vkml faster)   * = CPU fallbacks")
    ax.set_title(f"torch-vkml on {results['device']['name']} ({results['profile']})")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
