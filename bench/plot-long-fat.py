#!/usr/bin/env python3
"""Goodput against RTT, one curve per controller and one panel per loss rate, as SVG.

Reads the Markdown table `bench/long-fat.sh` prints (one or several, e.g. the single-path
and the CMT grid) and writes a self-contained SVG (no plotting library needed):

    bench/long-fat.sh | tee grid.md
    bench/plot-long-fat.py grid.md --title "one 1 Gbit/s path" --out docs/long-fat-1path.svg

The x axis is the RTT (log scale; for the CMT grid, path A's RTT), the y axis the goodput as
a share of the payload rate (the table's "of payload rate" column).
"""

import argparse
import math
import re
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
# Curves that coincide stay visible: the later ones are thinner and dashed.
STYLES = [("3", ""), ("2", "7 3"), ("1.5", "2 2"), ("1.5", "5 2 1 2")]
PANEL_W, PANEL_H = 300, 240
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 55, 15, 50, 45


def parse(text):
    """Rows of (rtt_ms, loss_label, cc, share_percent) from the table's body lines."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not re.match(r"^\d", cells[0]):
            continue
        rtt = float(cells[0].split("/")[0])
        share = float(cells[4].rstrip(" %"))
        rows.append((rtt, cells[1], cells[2], share))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", nargs="?", help="Markdown table file (default: stdin)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    text = open(args.table).read() if args.table else sys.stdin.read()
    rows = parse(text)
    if not rows:
        sys.exit("plot-long-fat: no table rows found")
    losses = sorted({r[1] for r in rows}, key=lambda s: float(s.split()[0]))
    ccs = list(dict.fromkeys(r[2] for r in rows))
    rtts = sorted({r[0] for r in rows})
    lo, hi = math.log10(min(rtts)), math.log10(max(rtts))
    if hi == lo:
        hi = lo + 1
    width = len(losses) * (PANEL_W + MARGIN_L + MARGIN_R)
    height = PANEL_H + MARGIN_T + MARGIN_B + 20 * len(ccs)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="13">'
        f"{args.title}</text>",
    ]
    for pi, loss in enumerate(losses):
        x0 = pi * (PANEL_W + MARGIN_L + MARGIN_R) + MARGIN_L
        y0 = MARGIN_T

        def px(rtt):
            return x0 + (math.log10(rtt) - lo) / (hi - lo) * PANEL_W

        def py(share):
            return y0 + PANEL_H - share / 100 * PANEL_H

        out.append(
            f'<text x="{x0 + PANEL_W / 2}" y="{y0 - 8}" text-anchor="middle">'
            f"random loss {loss}</text>"
        )
        out.append(
            f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" '
            f'fill="none" stroke="black"/>'
        )
        for s in range(0, 101, 20):
            y = py(s)
            out.append(
                f'<line x1="{x0}" y1="{y}" x2="{x0 + PANEL_W}" y2="{y}" stroke="#ddd"/>'
            )
            out.append(f'<text x="{x0 - 5}" y="{y + 4}" text-anchor="end">{s} %</text>')
        y90 = py(90)
        out.append(
            f'<line x1="{x0}" y1="{y90}" x2="{x0 + PANEL_W}" y2="{y90}" '
            f'stroke="#999" stroke-dasharray="4 3"/>'
        )
        for r in rtts:
            x = px(r)
            out.append(
                f'<text x="{x}" y="{y0 + PANEL_H + 15}" text-anchor="middle">{r:g}</text>'
            )
        out.append(
            f'<text x="{x0 + PANEL_W / 2}" y="{y0 + PANEL_H + 32}" text-anchor="middle">'
            f"RTT (ms)</text>"
        )
        for ci, cc in enumerate(ccs):
            pts = sorted((r[0], r[3]) for r in rows if r[1] == loss and r[2] == cc)
            if not pts:
                continue
            color = COLORS[ci % len(COLORS)]
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            w, dash = STYLES[ci % len(STYLES)]
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="{w}" '
                f'stroke-dasharray="{dash}"/>'
            )
            for x, y in pts:
                out.append(
                    f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>'
                )
    ly = MARGIN_T + PANEL_H + MARGIN_B
    for ci, cc in enumerate(ccs):
        color = COLORS[ci % len(COLORS)]
        y = ly + 20 * ci
        w, dash = STYLES[ci % len(STYLES)]
        out.append(
            f'<line x1="{MARGIN_L}" y1="{y}" x2="{MARGIN_L + 25}" y2="{y}" '
            f'stroke="{color}" stroke-width="{w}" stroke-dasharray="{dash}"/>'
        )
        out.append(f'<text x="{MARGIN_L + 32}" y="{y + 4}">{cc}</text>')
    out.append(
        f'<text x="{MARGIN_L + 140}" y="{ly + 4}" fill="#666">dashed: 90 % of the payload '
        f"rate</text>"
    )
    out.append("</svg>")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
