"""The behaviour snapshot: what one wheelmerge binary does over a fixed set of cases, written as
files that a second binary's snapshot can be compared with (`diff -r`). Used to show that a
refactoring changed no behaviour: the same exit codes, the same stdout and stderr, the same
output bytes.

    python tests/tools/behaviour_snapshot.py BINARY OUT_DIR [--wheels DIR]

The cases, over the real-wheel corpus (`scripts/fetch-real-wheels.sh` fills it):
- `inspect --json` and `verify` of every wheel;
- merges: cuda-bindings 13 with itself as cu12 + cu13, CuPy's two distributions into `cupy` (names and labels from
  the names, and with explicit labels), cuda-core with itself as cu12 + cu13 and as two CPU
  levels, every pure-Python wheel with itself as cu12 + cu13, each followed by `inspect --json`
  and `verify` of the result, and `variants` of the cuda-core pair;
- refusals: inputs of different names or versions, CuPy's data file without --variant-file, a label twice, labels of different selectors,
  disagreeing label sources, a missing input, a label that is no label.

The elapsed time in "wrote ... in 0.75s" is written as TIME. Every case runs in the same scratch directory (OUT_DIR/../snapshot-work, emptied before each
case), so paths in messages are equal between two snapshots taken with the same OUT_DIR's
parent. For each case OUT_DIR/CASE holds `command`, `rc`, `stdout`, `stderr` and `outputs` (the
sha256 and name of every file the case wrote). Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

CORPUS = Path(os.environ.get("WHEELMERGE_WHEEL_CACHE") or Path.home() / ".cache" / "wheelmerge") / "real-wheels"
# "wrote ... in 0.75s": the one part of a message that differs between runs.
ELAPSED = re.compile(rb" in [0-9]+\.[0-9]+s$", re.MULTILINE)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Snapshot:
    def __init__(self, binary: Path, out: Path, wheels: Path):
        self.binary = binary.resolve()
        self.out = out.resolve()
        self.wheels = wheels
        self.work = self.out.parent / "snapshot-work"
        self.count = 0

    def wheel(self, prefix: str) -> Path:
        found = sorted(self.wheels.glob(prefix + "*.whl"))
        if not found:
            raise SystemExit(f"behaviour_snapshot: no wheel {prefix}*.whl in {self.wheels}")
        return found[0]

    def staged(self, source: Path, copy: str = "a") -> Path:
        """A copy of an input in the scratch directory, in/COPY/ (a merge reads one file once)."""
        target = self.work / "in" / copy / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        return target

    def case(self, name: str, *args: str | Path, keep: bool = False) -> Path:
        """Runs one command; `keep` leaves the scratch directory for the next case to read."""
        self.count += 1
        directory = self.out / name
        directory.mkdir(parents=True)
        command = [str(self.binary), *(str(a) for a in args)]
        result = subprocess.run(command, cwd=self.work, capture_output=True, env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "NO_COLOR": "1"})
        (directory / "command").write_text(" ".join(str(a) for a in args) + "\n")
        (directory / "rc").write_text(f"{result.returncode}\n")
        (directory / "stdout").write_bytes(result.stdout)
        (directory / "stderr").write_bytes(ELAPSED.sub(b" in TIME", result.stderr))
        out_dir = self.work / "out"
        written = sorted(p for p in out_dir.rglob("*") if p.is_file()) if out_dir.is_dir() else []
        (directory / "outputs").write_text("".join(f"{sha256(p)}  {p.relative_to(out_dir)}\n" for p in written))
        if not keep:
            self.reset()
        return out_dir

    def reset(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
        (self.work / "out").mkdir(parents=True)

    def merged(self, name: str, *args: str | Path) -> None:
        """A merge, then inspect and verify of each wheel it wrote."""
        out = self.case(name, "merge", "-o", "out", *args, keep=True)
        results = sorted(out.glob("*.whl"))
        for i, wheel in enumerate(results):
            moved = self.work / "result" / wheel.name
            moved.parent.mkdir(exist_ok=True)
            shutil.move(wheel, moved)
            self.case(f"{name}.inspect{i}", "inspect", "--json", moved, keep=True)
            self.case(f"{name}.verify{i}", "verify", moved, keep=True)
        self.reset()

    def run(self) -> None:
        if self.out.exists():
            raise SystemExit(f"behaviour_snapshot: {self.out} exists")
        self.out.mkdir(parents=True)
        self.reset()
        corpus = sorted(self.wheels.glob("*.whl"))
        if len(corpus) < 60:
            raise SystemExit(f"behaviour_snapshot: {len(corpus)} wheels in {self.wheels}; run scripts/fetch-real-wheels.sh")
        for wheel in corpus:
            self.case(f"inspect.{wheel.name}", "inspect", "--json", wheel)
            self.case(f"verify.{wheel.name}", "verify", wheel)

        b12, b13 = self.wheel("cuda_bindings-12"), self.wheel("cuda_bindings-13")
        core = self.wheel("cuda_core-1.2.2-cp312-cp312-manylinux_2_24_x86_64")
        self.case("refuse.versions", "merge", "-o", "out", f"{self.staged(b12)}=cu12", f"{self.staged(b13)}=cu13")
        self.merged("merge.cuda-bindings-twice", f"{self.staged(b13)}=cu12", f"{self.staged(b13, 'b')}=cu13")
        self.case("variants.cuda-core", "variants", "-o", "out", f"{self.staged(core)}=cu12",
                  f"{self.staged(core, 'b')}=cu13")
        c12, c13 = self.wheel("cupy_cuda12x"), self.wheel("cupy_cuda13x")
        wheel_json = ("--variant-file", "cupy/.data/_wheel.json")
        self.merged("merge.cupy-by-name", "--name", "cupy", *wheel_json, self.staged(c12), self.staged(c13))
        self.merged("merge.cupy-labelled", "--name", "cupy", *wheel_json, f"{self.staged(c12)}=cu12",
                    f"{self.staged(c13)}=cu13")
        self.case("refuse.cupy-data", "merge", "-o", "out", "--name", "cupy", self.staged(c12), self.staged(c13))
        self.merged("merge.cuda-core-twice", f"{self.staged(core)}=cu12", f"{self.staged(core, 'b')}=cu13")
        self.merged("merge.cuda-core-levels", f"{self.staged(core)}=x86_64_v1",
                    f"{self.staged(core, 'b')}=x86_64_v3")
        for wheel in corpus:
            if wheel.name.endswith("-none-any.whl"):
                self.merged(f"merge.pure.{wheel.name}", f"{self.staged(wheel)}=cu12",
                            f"{self.staged(wheel, 'b')}=cu13")

        attrs, six = self.wheel("attrs-"), self.wheel("six-")
        self.case("refuse.names", "merge", "-o", "out", f"{self.staged(attrs)}=cu12", f"{self.staged(six)}=cu13")
        self.case("refuse.label-twice", "merge", "-o", "out", f"{self.staged(b12)}=cu12", f"{self.staged(b13)}=cu12")
        self.case("refuse.selectors", "merge", "-o", "out", f"{self.staged(b12)}=cu12",
                  f"{self.staged(b13)}=torch210_cu13")
        self.case("refuse.label-sources", "merge", "-o", "out", "--name", "cupy", f"{self.staged(c12)}=cu13",
                  f"{self.staged(c13)}=cu12")
        self.case("refuse.missing", "merge", "-o", "out", "missing.whl=cu12", f"{self.staged(b13)}=cu13")
        self.case("refuse.no-label", "merge", "-o", "out", f"{self.staged(b12)}=cuda12", f"{self.staged(b13)}=cu13")
        shutil.rmtree(self.work, ignore_errors=True)
        print(f"behaviour_snapshot: {self.count} cases in {self.out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--wheels", type=Path, default=CORPUS)
    options = parser.parse_args(argv)
    Snapshot(options.binary, options.out, options.wheels).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
