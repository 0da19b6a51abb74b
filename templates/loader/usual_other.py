def _usual() -> tuple[str, str] | None:
    return None  # this selector always asks the rules module
