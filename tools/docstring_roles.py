"""Griffe extension of the privdist site: Sphinx roles in docstrings become cross-references on the API pages.

privdist's docstrings name other objects the Sphinx way (``:func:`privdist.run```, ``:class:`~privdist.data.Dataset```,
``:mod:`.budget```), which ``help()`` shows as they are and which mkdocstrings (Google style, Markdown) would print
as raw text. ``mkdocs.yml`` loads this extension into mkdocstrings' griffe: once the package is loaded, every
docstring's roles are rewritten before the docstring is parsed, each into an optional cross-reference in code font
(``<autoref identifier="..." optional><code>...</code></autoref>``): mkdocs-autorefs turns it into a link when the
target is rendered somewhere on the site and into plain code (titled with the full path) when it is not, so an
unrendered target never breaks the strict build.

Targets are resolved as Sphinx does: a leading ``~`` shows the last component only; ``.name`` is relative to the
current package (``..name`` to its parent); a bare name is looked up in the scope of the docstring's object (its
members, then its parents' up to the module, imports included), else kept as written.
"""

from __future__ import annotations

import html
import re
from typing import Callable

try:
    import griffe
except ImportError:  # only the site build needs griffe; the transform itself does not
    griffe = None

#: ``:role:`target``` (optionally ``:py:role:``) and ``:role:`title <target>```; the target may wrap a line.
ROLE = re.compile(r":(?:py:)?(mod|func|class|meth|data|attr|exc|obj|const):`(?=[^`\s])([^`<]*?)\s*(?:<([^`>]+)>)?`")


def _title_and_target(text: str, explicit: str | None) -> tuple[str, str]:
    text = " ".join(text.split())
    if explicit:
        return text, "".join(explicit.split()).lstrip("~!")
    target = "".join(text.split()).lstrip("!")
    short = target.startswith("~")
    target = target.lstrip("~")
    title = target.rstrip("()").split(".")[-1] + ("()" if target.endswith("()") else "") if short else target
    return title, target.rstrip("()")


def crossref(identifier: str, title: str) -> str:
    """An optional autorefs cross-reference to ``identifier`` shown as code ``title``."""
    return (f'<autoref identifier="{html.escape(identifier, quote=True)}" optional>'
            f"<code>{html.escape(title, quote=False)}</code></autoref>")


def rewrite(text: str, resolve: Callable[[str], str] = lambda target: target) -> str:
    """``text`` with every Sphinx role replaced by a cross-reference; ``resolve`` maps a target as written (no
    ``~``) to a full dotted path."""
    def sub(m: re.Match) -> str:
        title, target = _title_and_target(m.group(2), m.group(3))
        return crossref(resolve(target) if target else title, title)

    return ROLE.sub(sub, text)


def resolver(obj) -> Callable[[str], str]:
    """How a target named in ``obj``'s docstring resolves: relative module paths against ``obj``'s package, bare
    names against the members of ``obj`` and its parents (imports are members too)."""
    def resolve(target: str) -> str:
        if target.startswith("."):
            module = obj.module
            package = module.path if module.is_init_module else module.parent.path
            dots = len(target) - len(target.lstrip("."))
            parts = package.split(".")
            base = ".".join(parts[:len(parts) - (dots - 1)]) if dots > 1 else package
            return f"{base}.{target.lstrip('.')}" if target.lstrip(".") else base
        first, _, rest = target.partition(".")
        scope = obj
        while scope is not None:
            if first == scope.name and scope.parent is None:
                return target  # a full path from the package
            member = scope.members.get(first) if hasattr(scope, "members") else None
            if member is not None:
                path = member.target_path if member.is_alias else member.path
                return f"{path}.{rest}" if rest else path
            scope = scope.parent
        return target

    return resolve


if griffe is not None:
    class SphinxRoles(griffe.Extension):
        """Rewrites the Sphinx roles of every docstring of the loaded package (see the module docstring)."""

        def on_package(self, *, pkg, loader=None, **kwargs) -> None:
            for obj in _walk(pkg):
                if obj.docstring is not None and ROLE.search(obj.docstring.value):
                    obj.docstring.value = rewrite(obj.docstring.value, resolver(obj))


def _walk(obj, seen=None):
    seen = set() if seen is None else seen
    if obj.path in seen:
        return
    seen.add(obj.path)
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member, seen)
