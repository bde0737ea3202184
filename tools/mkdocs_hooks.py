"""MkDocs hooks of the privdist site: new guide pages join the navigation; references in docstrings become links.

A Markdown page dropped at the top of ``docs/`` that ``mkdocs.yml``'s nav does not list is appended to the "Guides"
section (titled by its first heading), so a new topic page needs no edit of the nav; give it a place in the nav to put
it elsewhere.

privdist's docstrings cite the ambiguity register (``AMB-D12``) and sections of the algorithm specification
(``spec §2.4``), neither of which is a link in the source. On every rendered page (the API reference included) this
hook links each such reference to its entry in ``ambiguities.md`` or ``spec-sections.md``, outside existing links,
headings and code listings. Only references whose entry exists are linked; ``tests/docs`` checks that every one cited
in ``src/`` has an entry.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

AMB = re.compile(r"\bAMB-([A-Z])(\d+)\b")
SPEC = re.compile(r"\b([Ss]pec(?:ification)? §)(\d+(?:\.\d+)?)")
SKIP = {"a", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "script", "style", "title"}
TAG = re.compile(r"(<[^>]+>)")
_anchors: dict[str, set[str]] = {}


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in _nav_pages(v)]
    return [p for item in nav for p in _nav_pages(item)]


def on_config(config):
    _anchors.clear()
    listed = set(_nav_pages(config["nav"] or []))
    extra = sorted(p.name for p in Path(config["docs_dir"]).glob("*.md") if p.name not in listed)
    if extra:
        guides = next(item["Guides"] for item in config["nav"] if isinstance(item, dict) and "Guides" in item)
        guides.extend(extra)
    return config


def _ids(docs_dir: str, page: str) -> set[str]:
    if page not in _anchors:
        text = (Path(docs_dir) / page).read_text(encoding="utf-8")
        _anchors[page] = set(re.findall(r'id="([\w-]+)"', text)) | set(re.findall(r"\{#([\w-]+)\}", text))
    return _anchors[page]


def _link(text: str, here: str, docs_dir: str) -> str:
    def amb(m: re.Match) -> str:
        anchor = f"amb-{m.group(1).lower()}{m.group(2)}"
        if anchor not in _ids(docs_dir, "ambiguities.md"):
            return m.group(0)
        return f'<a href="{posixpath.relpath("ambiguities.html", here)}#{anchor}">{m.group(0)}</a>'

    def spec(m: re.Match) -> str:
        anchor = "spec-" + m.group(2).replace(".", "-")
        if anchor not in _ids(docs_dir, "spec-sections.md"):
            return m.group(0)
        return f'<a href="{posixpath.relpath("spec-sections.html", here)}#{anchor}">{m.group(0)}</a>'

    return SPEC.sub(spec, AMB.sub(amb, text))


def on_page_content(html, page, config, files):
    if page.file.src_uri in ("ambiguities.md", "spec-sections.md"):
        return html
    here = posixpath.dirname(page.file.dest_uri) or "."
    out, depth = [], 0
    for part in TAG.split(html):
        if part.startswith("<"):
            name = re.match(r"</?\s*([a-zA-Z0-9]+)", part)
            if name and name.group(1).lower() in SKIP and not part.endswith("/>"):
                depth += -1 if part.startswith("</") else 1
            out.append(part)
        else:
            out.append(part if depth > 0 else _link(part, here, config["docs_dir"]))
    return "".join(out)
