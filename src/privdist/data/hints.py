"""What a user states publicly to keep a guarantee (issues 37, 39): the flags that name a file's own category lists
and class names, printed when a fit read them off the data (owner-only advice: it shows the data's own values)."""

from __future__ import annotations

__all__ = ["categories_hint", "classes_hint"]


def categories_hint(cats: dict, limit: int = 12) -> str:
    """The ``--categories`` flags that state ``cats`` (``{column: [values]}``, read from the data) as public, shell
    quoted; a column with more than ``limit`` values is shown by its first ones and pointed to a JSON file
    (``--categories FILE`` holding ``{column: [values]}``). Owner-only advice: it prints the data's own values."""
    import shlex

    flags = []
    for col, values in cats.items():
        shown = [str(v) for v in values[:limit]]
        more = f" ... {len(values) - limit} more: list them all in a JSON file for --categories FILE" \
            if len(values) > limit else ""
        flags.append(f"--categories {shlex.quote(f'{col}=' + ','.join(shown))}{more}")
    return " ".join(flags)


def classes_hint(values) -> str:
    """How to state the class names ``values`` (as read from a file, in sorted order) as public: ``classes=(...)``
    of the estimators and the CLI's ``--classes`` with every name as the file writes it, shell-quoted (two classes:
    negative first; three or more: fitted one-vs-rest)."""
    import shlex

    names = [str(v) for v in values]
    python = f"classes={tuple(values)!r} in Python"
    if any("," in n for n in names):  # --classes splits on commas
        return f"{python}; a name holds a comma, which --classes cannot state: rename the classes in the file"
    what = "negative first" if len(names) == 2 else f"{len(names)} classes, fitted one-vs-rest"
    return f"--classes {shlex.quote(','.join(names))} ({what}), {python}"
