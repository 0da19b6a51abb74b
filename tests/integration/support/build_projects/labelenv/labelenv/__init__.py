"""A package whose every build records what its build was given (labelenv._built)."""


def built() -> dict:
    from labelenv._built import BUILT

    return dict(BUILT)
