"""The message templates in wheelmerge's sources: every wm::Problem construction and every call
of a helper that makes one, with the string literals of its `what`, `expected` and `found`.

A template is what the source says: a literal, the literal of a fmt::format with its `{}`, or
the literals of a concatenation with `{}` for each value between them. A site whose `what` holds
no literal (a helper passing on its caller's) is no template of its own: its callers are.
`python tests/integration/support/message_sites.py` lists them.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCE_DIRS = ("merger", "driver", "ci", "cli")

# A Problem's fields after its kind: file, member, what, expected, found.
PROBLEM_INIT = re.compile(r"(?:Problem\s*)?\{\s*(?:wm::)?ProblemKind::\w+\s*,")
PROBLEM_FIELDS = {"what": 3, "expected": 4, "found": 5}

# Helpers that make a Problem from their arguments: the argument index of each field (None:
# the helper sets it itself).
_CALL = r"(?<![\w.:>]){}\("
HELPERS: dict[str, list[tuple[str, dict[str, int | None]]]] = {
    "merger/wheel.cpp": [(r"\br\.fail\(", {"what": 1, "expected": 2, "found": 3})],
    "merger/zip/zip_archive.cpp": [(r"\br\.fail\(", {"what": 1, "expected": 2, "found": 3})],
    "merger/zip/member_stream.cpp": [(_CALL.format("fail"), {"what": 0, "expected": 1, "found": 2})],
    "merger/format/record.cpp": [(_CALL.format("fail"), {"what": 0, "expected": 1, "found": 2}),
                                 (r"\bFieldError\{", {"what": 0, "expected": 1, "found": 2})],
    "merger/verify.cpp": [(_CALL.format("fail"), {"what": 1, "expected": 2, "found": 3})],
    "merger/write.cpp": [(_CALL.format("fail"), {"what": 1, "expected": 2, "found": 3}),
                         (_CALL.format("write_failed"), {"what": 2, "expected": None, "found": 3})],
    "merger/plan.cpp": [(_CALL.format("conflict"), {"what": 2, "expected": None, "found": None}),
                        (_CALL.format("differ"), {"what": 1, "expected": 3, "found": 2})],
    "driver/config.cpp": [(r"(?<![\w:>])(?:w\.)?fail\(", {"what": 1, "expected": 2, "found": 3})],
    "ci/workflow.cpp": [(_CALL.format("refuse"), {"what": 0, "expected": 1, "found": 2})],
}
# Fields set one by one (clash_problem, RECORD's hash checks), and the reasons (`why`) that
# functions hand back to become a Problem's `found`, `expected` or part of its `what`.
ASSIGNMENT = re.compile(r"(?<![\w>])(?:p\.)?(what|expected|found|why) = ")
# Warnings, kept as strings until the command line prints them.
WARNING = re.compile(r"\b(?:warnings|notes)\.push_back\(")
# Functions whose returned strings are reasons.
REASON_FUNCTIONS = re.compile(r"\n(?:std::string|const char\*) (unsafe_name_reason|windows_name_reason|fields_problem)"
                              r"\([^)]*\) \{\n(.*?)\n\}\n", re.DOTALL)

STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_CLOSE = {"(": ")", "{": "}", "[": "]"}


@dataclasses.dataclass
class Site:
    path: str  # relative to the repository root
    line: int
    fields: dict[str, list[str] | None]  # per field: its templates (alternatives), None: no literal

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def templates(self, field: str) -> list[str]:
        return self.fields.get(field) or []


def _unescape(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), literal)


def _arguments(text: str, start: int) -> list[str]:
    """The top-level comma-separated arguments of the call or initialiser opening at `start`."""
    args, depth, current, i = [], 0, [], start + 1
    while i < len(text):
        c = text[i]
        if c == '"':
            m = STRING.match(text, i)
            if m:
                current.append(m.group(0))
                i = m.end()
                continue
        if c == "'":
            end = text.index("'", i + 2 if text[i + 1] == "\\" else i + 1) + 1
            current.append(text[i:end])
            i = end
            continue
        if c in _CLOSE:
            depth += 1
        elif c in ")}]":
            if depth == 0:
                args.append("".join(current).strip())
                return args
            depth -= 1
        elif c == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
            i += 1
            continue
        current.append(c)
        i += 1
    return args


def _split_top(expr: str, sep: str) -> list[str]:
    """`expr` split at `sep` outside strings and brackets."""
    parts, depth, current, i = [], 0, [], 0
    while i < len(expr):
        c = expr[i]
        if c == '"':
            m = STRING.match(expr, i)
            if m:
                current.append(m.group(0))
                i = m.end()
                continue
        if c in _CLOSE:
            depth += 1
        elif c in ")}]":
            depth -= 1
        elif depth == 0 and expr.startswith(sep, i):
            parts.append("".join(current).strip())
            current = []
            i += len(sep)
            continue
        current.append(c)
        i += 1
    parts.append("".join(current).strip())
    return parts


def templates(expr: str) -> list[str] | None:
    """The templates an argument expression can give; None when it holds no literal."""
    expr = expr.strip()
    if not expr or expr == "{}":
        return [""]
    if expr.startswith("std::move(") or not STRING.search(expr):
        return None
    # cond ? a : b (nested to the right): each branch is an alternative.
    question = _split_top(expr, "?")
    if len(question) > 1:
        rest = "?".join(question[1:])
        branches = _split_top(rest, ":")
        out = []
        for b in [branches[0], ":".join(branches[1:])]:
            t = templates(b)
            out.extend(t if t is not None else ["{}"])
        return out
    m = re.match(r"fmt::format\(\s*", expr)
    if m:
        args = _arguments(expr, m.end() - 1)
        literal = "".join(_unescape(s) for s in STRING.findall(args[0]))
        # "{{" and "}}" print braces; each replacement field is a value.
        literal = re.sub(r"\{\{|\}\}|\{[^{}]*\}", lambda f: f.group(0)[0] if f.group(0) in ("{{", "}}") else "\x00",
                         literal)
        return [literal.replace("\x00", "{}")]
    out = ""
    for part in _split_top(expr, "+"):
        lits = STRING.findall(part)
        out += "".join(_unescape(s) for s in lits) if lits and part.lstrip().startswith('"') else "{}"
    return [out]


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _strip_comments(text: str) -> str:
    # Line comments only (the sources use no block comments around code), blanked to keep offsets.
    return re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)) if m.group(0).count('"') % 2 == 0 else m.group(0),
                  text)


def sites() -> list[Site]:
    found: list[Site] = []
    for directory in SOURCE_DIRS:
        for path in sorted((ROOT / directory).rglob("*.cpp")):
            rel = path.relative_to(ROOT).as_posix()
            text = _strip_comments(path.read_text(encoding="utf-8"))
            for m in PROBLEM_INIT.finditer(text):
                brace = text.rfind("{", m.start(), m.end())
                args = _arguments(text, brace)
                if len(args) < 4:
                    continue
                fields = {f: templates(args[i]) if i < len(args) else [""] for f, i in PROBLEM_FIELDS.items()}
                found.append(Site(rel, _line(text, m.start()), fields))
            for pattern, index in HELPERS.get(rel, []):
                for m in re.finditer(pattern, text):
                    args = _arguments(text, m.end() - 1)
                    if index["what"] >= len(args):
                        continue
                    fields = {f: (templates(args[i]) if i < len(args) else [""]) if i is not None else None
                              for f, i in index.items()}
                    found.append(Site(rel, _line(text, m.start()), fields))
            for m in ASSIGNMENT.finditer(text):
                end = m.end() + len(_split_top(text[m.end():], ";")[0])  # the first ";" outside strings
                t = templates(_split_top(text[m.end():end], ",")[0])  # a, b = ...: each its own
                if t is not None:
                    found.append(Site(rel, _line(text, m.start()), {m.group(1): t}))
            for m in WARNING.finditer(text):  # warnings are text: the whole line after the file
                args = _arguments(text, m.end() - 1)
                t = templates(args[0]) if args else None
                if t is not None:
                    found.append(Site(rel, _line(text, m.start()), {"warning": t}))
            for f in REASON_FUNCTIONS.finditer(text):
                for m in re.finditer(r"\breturn ", f.group(2)):
                    end = f.group(2).index(";", m.end())
                    t = templates(f.group(2)[m.end():end])
                    if t is not None and t != [""]:
                        found.append(Site(rel, _line(text, f.start(2) + m.start()), {"why": t}))
    return found


def what_pattern(template: str) -> re.Pattern[str]:
    """A rendered message holding the `what` of `template`: the literal pieces in order, any text
    for each `{}`, between the separators describe() puts around a what."""
    body = ".+?".join(re.escape(piece) for piece in template.split("{}"))
    return re.compile(r"(?:^|: )" + body + r"(?:: |$)")


if __name__ == "__main__":
    for s in sites():
        print(s.where, {k: v for k, v in s.fields.items() if v})
