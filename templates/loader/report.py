# --- the report: python -m <package>._wheelmerge [--json] -------------------------------------
_USAGE = """usage: python -m PACKAGE._wheelmerge [--json]

Reports which build of PACKAGE this environment selects and why: the builds, what was
detected, the selection or why none fits. --json prints the same as a JSON object.
Exit status: 0 when a build is selected and loads, 1 when not, 2 for a usage error."""


def report(loader: dict[str, object]) -> str:
    """The report as text."""
    return _render(_diagnosis(loader))


def main(loader: dict[str, object]) -> None:
    """``python -m <package>._wheelmerge``: prints the report and exits."""
    arguments = sys.argv[1:]
    if "-h" in arguments or "--help" in arguments:
        package = str(loader["__name__"]).rpartition(".")[0] or "PACKAGE"
        print(_USAGE.replace("PACKAGE", package))
        raise SystemExit(0)
    if any(argument != "--json" for argument in arguments):
        print(f"error: unknown arguments {arguments}\n{_USAGE}", file=sys.stderr)
        raise SystemExit(2)
    data = _visible(_diagnosis(loader))
    assert isinstance(data, dict)
    if arguments:
        import json

        print(json.dumps(data, indent=2))
    else:
        print(_render(data))
    raise SystemExit(0 if data["selected"] else 1)


def _visible(value: object) -> object:
    """VALUE with every string made valid Unicode: what Python decoded from undecodable bytes of
    the environment or a path (lone surrogates, which strict JSON readers and UTF-8 output
    refuse) shown as backslash escapes, ``\\xff`` for each such byte."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            pass
        try:
            return value.encode("utf-8", "surrogateescape").decode(
                "utf-8", "backslashreplace"
            )
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_visible(k): _visible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible(v) for v in value]
    return value


def _diagnosis(loader: dict[str, object]) -> dict[str, object]:
    import platform

    _bind(loader)
    state = _loader._STATE
    kept = state.selection is not None
    data: dict[str, object] = {
        "distribution": _DISTRIBUTION,
        "package": _PACKAGE,
        "wheelmerge": _WHEELMERGE,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "builds": list(_VARIANTS),
        "environment": {
            name: value
            for name, value in sorted(os.environ.items())
            if name.startswith("WHEELMERGE_")
        },
    }
    data["detected"] = dict(_detected())
    data["selected"] = None
    try:
        label, how = _select()
        _loader._preload(label)
    except ImportError as error:
        data["error"] = str(error)
    else:
        data["selected"], data["because"] = label, how
        if kept:
            data["drift"] = _drift(label)
    data["files"] = {
        build: [
            {"kind": kind, "name": name, "stored": stored, "present": _present(stored)}
            for kind, entries in (
                ("module", sorted(_MODULES[build].items())),
                ("file", sorted(_FILES[build].items())),
                ("preload", [(stored, stored) for stored in _PRELOAD[build]]),
            )
            for name, stored in entries
        ]
        for build in _VARIANTS
    }
    return data


def _present(stored: str) -> bool:
    return os.path.exists(str(_loader._absolute(stored)))


def _drift(label: str) -> str:
    """What the environment would select now, when that differs from LABEL."""
    try:
        now, how = _detect_build()
    except ImportError as error:
        first = str(error).splitlines()[0]
        why = first.replace(
            f"{_DISTRIBUTION}: cannot select a {_what()} build: ", "", 1
        )
        return f"selecting now would fail: {why}"
    return "" if now == label else f"now {how}, which would select {now}"


def _render(data: dict[str, object]) -> str:
    lines = [
        (
            f"{data['distribution']} (package {data['package']}), merged by wheelmerge "
            f"{data['wheelmerge']}"
        ),
        f"builds: {', '.join(_VARIANTS)}",
        f"selector: {_SELECTOR}",
        f"python: {data['python']} on {data['platform']}",
    ]
    environment = data["environment"]
    assert isinstance(environment, dict)
    lines += [f"{name}: {value}" for name, value in environment.items()]
    detected = data["detected"]
    assert isinstance(detected, dict)
    lines += [f"{key}: {value}" for key, value in detected.items() if value]
    if data["selected"] is None:
        lines.append("selection failed:")
        lines += [f"    {line}" for line in str(data["error"]).splitlines()]
    else:
        lines.append(f"selected: {data['selected']}, because {data['because']}")
        if data.get("drift"):
            lines.append(
                f"kept: {data['selected']}, selected earlier in this process, which never "
                f"mixes builds; {data['drift']}\n    (a new process selects again)"
            )
    files = data["files"]
    assert isinstance(files, dict)
    for build, entries in files.items():
        lines.append(f"{build}{' (selected)' if build == data['selected'] else ''}:")
        for entry in entries:
            kind, name, stored = entry["kind"], entry["name"], entry["stored"]
            shown = stored if entry["present"] else f"{stored} (missing)"
            lines.append(
                f"    {kind} {name} -> {shown}"
                if kind != "preload"
                else f"    preload {shown}"
            )
    return "\n".join(lines)
