"""How messages name columns and parties (issue 39: a new user's warnings named ``x10`` and ``party 3``).

A column is named by its name (the CSV header, the DataFrame column, a one-hot column ``workclass=Private``) and by
its position (``column 10``) only when the data have no names (a NumPy array). A party is named by the value of the
party column (or the file it came from) when the parties come from the data, and ``party 3`` only for a generated
split. A message about many columns or parties lists a few of them and counts the rest (:func:`name_list`), so
65 small parties give one line, not 65.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SHOWN", "column_label", "column_labels", "party_label", "party_labels", "name_list", "unnamed_label"]

#: How many names a message lists before "and N more".
SHOWN = 5


def column_label(feature_names: Sequence | None, j: int) -> str:
    """Column ``j``: its name, or ``column j`` when the data have no names."""
    return str(feature_names[j]) if feature_names is not None and len(feature_names) else f"column {int(j)}"


def column_labels(feature_names: Sequence | None, columns) -> list[str]:
    """:func:`column_label` of each index in ``columns``."""
    return [column_label(feature_names, j) for j in columns]


def unnamed_label(name, feature_names: Sequence | None) -> str:
    """A column named in a record (``"x10"`` is the estimators' record key of column 10 when the data had no names;
    ``"<target>"`` is the target): ``column 10`` / ``the target`` without names, the name itself otherwise."""
    text = str(name)
    if text == "<target>":
        return "the target"
    if feature_names is None and text.startswith("x") and text[1:].isdigit():
        return f"column {int(text[1:])}"
    return text


def party_label(party_names: Sequence | None, k: int) -> str:
    """Party ``k``: its name (the party column's value, or its file) when the parties come from the data, else
    ``party k`` (a generated split)."""
    return str(party_names[k]) if party_names is not None and k < len(party_names) else f"party {int(k)}"


def party_labels(party_names: Sequence | None, parties) -> list[str]:
    """:func:`party_label` of each index in ``parties``."""
    return [party_label(party_names, k) for k in parties]


def name_list(names: Sequence, limit: int = SHOWN) -> str:
    """``"a, b, c, d, e and 7 more"``: at most ``limit`` of ``names``, then how many are left out."""
    names = [str(n) for n in names]
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
