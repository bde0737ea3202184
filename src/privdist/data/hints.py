"""What a user states publicly to keep a guarantee (issues 37, 39): the flags that name a file's own category lists
and class names, printed when a fit read them off the data (owner-only advice: it shows the data's own values)."""

from __future__ import annotations

__all__ = ["categories_hint", "classes_hint", "classes_step"]

#: Label encodings whose class names carry nothing read from the data (issue 24).
CANONICAL_CLASSES = ({0, 1}, {-1, 1}, {False, True})


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


def classes_step(values) -> dict:
    """The preprocessing record of class names ``values`` read from the data (sorted, plain Python values): public
    (``classes_canonical``) for 0/1, -1/+1, False/True and 0..C-1 (C >= 3), else ``classes_from_data`` (not private,
    with :func:`classes_hint`)."""
    values = list(values)
    canonical = any(set(values) == c and all(isinstance(v, (bool, int, float)) for v in values)
                    for c in CANONICAL_CLASSES) or (
        len(values) > 2 and values == list(range(len(values)))
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values))  # 0.0, 1.0, 2.0 too
    if canonical:
        return {"step": "classes_canonical", "private": True, "note": f"labels {values}: a canonical encoding"}
    return {"step": "classes_from_data", "private": False,
            "note": f"NOT PRIVATE: the class names {values} were read from the data and a model file names them; "
                    f"state them as public: {classes_hint(values)}"}
