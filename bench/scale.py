#!/usr/bin/env python3
"""Figures of the scale suite (tests/integration/merge/test_scale.py) for docs/scale.md.

Runs the suite with WHEELMERGE_SCALE_REPORT pointing at a scratch file (each case appends one
JSON line: sizes, merge wall times, peak RSS, check times) and prints them as a Markdown
table. The cases, their checks and their bounds live in the suite; this only collects.

Usage: python bench/scale.py [--full] [--json FILE] [-- PYTEST ARGS...]
  --full   the full version (WHEELMERGE_SCALE_FULL=1): adds the archive over 4 GiB (about
           13 GB of disk, written and deleted) and 200,000 entries instead of 70,000.
The binary comes from $WHEELMERGE, else build/wheelmerge (as in the suite).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "integration" / "merge" / "test_scale.py"


def python() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB" if n < (1 << 30) else f"{n / (1 << 30):,.2f} GiB"


def table(rows: list[dict]) -> str:
    lines = ["| case | entries | inputs | output | merge (s, run 1 / run 2) | peak RSS (MiB) | "
             "generate (s) | strict check (s) | zipfile check (s) | wheel unpack (s) | ZIP64 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        central = ", ".join(f"{k}: {v}" for k, v in r["zip64_central"].items()) or "none"
        zip64 = (f"local extras: {r['zip64_local']}; central extras: {central}; "
                 f"end record: {'yes' if r['zip64_end'] else 'no'}")
        lines.append(
            f"| {r['case']} | {r['entries']:,} | {' + '.join(mib(b) for b in r['input_bytes'])} | "
            f"{mib(r['output_bytes'])} | {r['merge_s'][0]} / {r['merge_s'][1]} | "
            f"{r['peak_rss_mib'][0]} / {r['peak_rss_mib'][1]} | {r['generate_s']} | "
            f"{r['strict_check_s']} | {r['zipfile_check_s']} | "
            f"{'skipped' if r.get('unpack_s') is None else r['unpack_s']} | {zip64} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "scale.jsonl"
        env = dict(os.environ, WHEELMERGE_SCALE_REPORT=str(report))
        if args.full:
            env["WHEELMERGE_SCALE_FULL"] = "1"
        else:
            env.pop("WHEELMERGE_SCALE_FULL", None)
        start = time.perf_counter()
        status = subprocess.run([python(), "-m", "pytest", str(SUITE), "-q", "-p", "no:cacheprovider",
                                 "-rs", *args.pytest_args], cwd=ROOT, env=env).returncode
        wall = time.perf_counter() - start
        rows = [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []
    print()
    print(f"{'full' if args.full else 'short'} version, {platform.machine()}, {os.cpu_count()} cores, "
          f"suite wall time {wall:.0f} s, pytest exit status {status}")
    print()
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"full": args.full, "suite_s": round(wall, 1), "status": status,
                                         "cases": rows}, indent=2) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
