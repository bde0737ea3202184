"""References in the code resolve to the docs (issue 28): every ``AMB-*`` id cited in ``src/`` has an entry in the
ambiguity register, every ``spec §`` section has an anchor on the specification-sections page, every page is in the
site's navigation, the architecture table says what the imports are, and the README stays short."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SRC = ROOT / "src" / "privdist"
AMB = re.compile(r"\bAMB-([A-Z])(\d+)\b")
#: ``spec §2.4``, ``Spec §6.2, §6.3``, ``spec §6.2-§6.5``, ``spec §1.3-2`` (item 2 of §1.3), ``spec §3.6/§3.7``
SPEC = re.compile(r"\b[Ss]pec(?:ification)?\s+(§\s?\d+(?:\.\d+)*(?:-\d+)?(?:\s*(?:,|-|–|and|to|/)\s*§\s?\d+(?:\.\d+)*)*)")


def _sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(SRC.rglob("*")) if p.suffix in (".py", ".toml")}


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    return set(re.findall(r'id="([\w-]+)"', text)) | set(re.findall(r"\{#([\w-]+)\}", text))


def cited_ambiguities() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path, text in _sources().items():
        for letter, num in AMB.findall(text):
            out.setdefault(f"AMB-{letter}{num}", []).append(str(path.relative_to(ROOT)))
    return out


def cited_sections() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path, text in _sources().items():
        for ref in SPEC.findall(text):
            for item in re.findall(r"§\s?(\d+(?:\.\d+)*)", ref):  # the item number of "§1.3-2" belongs to §1.3
                out.setdefault(item, []).append(str(path.relative_to(ROOT)))
    return out


def test_every_ambiguity_cited_in_the_code_has_a_register_entry():
    cited = cited_ambiguities()
    assert len(cited) > 40, "the AMB pattern no longer finds the code's references"
    anchors = _anchors(DOCS / "ambiguities.md")
    missing = {k: v[:2] for k, v in cited.items() if f"amb-{k[4:].lower()}" not in anchors}
    assert not missing, f"AMB ids cited in src/ without an entry in docs/ambiguities.md: {missing}"


def test_register_entries_have_a_reading():
    """Each entry says what is open and what privdist adopts (not an empty heading)."""
    text = (DOCS / "ambiguities.md").read_text(encoding="utf-8")
    entries = re.split(r"^### ", text, flags=re.M)[1:]
    assert len(entries) >= len(cited_ambiguities())
    for entry in entries:
        assert "**Open:**" in entry and "**Adopted" in entry, entry.splitlines()[0]


def test_every_spec_section_cited_in_the_code_has_an_anchor():
    cited = cited_sections()
    assert {"2.4", "1.3", "3.9", "6.6"} <= set(cited), "the spec § pattern no longer finds the code's references"
    anchors = _anchors(DOCS / "spec-sections.md")
    missing = {k: v[:2] for k, v in cited.items() if "spec-" + k.replace(".", "-") not in anchors}
    assert not missing, f"spec sections cited in src/ without an anchor in docs/spec-sections.md: {missing}"


def test_the_patterns_read_the_forms_used_in_docstrings():
    text = "Spec §6.2, §6.3, §4.10, AMB-B1; spec §1.3-2 and spec §6.2-§6.5; [AMB-D7]"
    assert [n for r in SPEC.findall(text) for n in re.findall(r"§\s?(\d+(?:\.\d+)*)", r)] == \
        ["6.2", "6.3", "4.10", "1.3", "6.2", "6.5"]
    assert AMB.findall(text) == [("B", "1"), ("D", "7")]


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_docs_page_is_in_the_navigation():
    """Pages in sub-folders are listed in mkdocs.yml; a top-level page may be left out (the site's hook appends it to
    the Guides section)."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = set(_load(ROOT / "tools" / "mkdocs_hooks.py")._nav_pages(config["nav"]))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    unlisted = {p for p in pages - nav if "/" in p}
    assert not unlisted and nav <= pages, f"not in the nav: {sorted(unlisted)}; missing: {sorted(nav - pages)}"


def test_architecture_table_matches_the_imports():
    mod = _load(ROOT / "tests" / "test_imports.py")
    imported: dict[str, set[str]] = {}
    for module, targets in mod._graph().items():
        imported.setdefault(mod.layer(module), set()).update(
            t for t in map(mod.layer, targets) if t != mod.layer(module))
    rows = [line.split("|")[1:4] for line in (DOCS / "architecture.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and not line.startswith("| layer")]
    layers = [r[0].strip() for r in rows]
    assert layers == [x for x in reversed(mod.LAYERS) if x != "entry"]
    from privdist.cli.main import _COMMAND_MODULES

    cli_row = (DOCS / "architecture.md").read_text(encoding="utf-8").split("| cli |", 1)[1].splitlines()[0]
    assert all(m.removesuffix("_cmd") in cli_row for m in _COMMAND_MODULES), "the cli row misses a command"
    for name, _, deps in rows:
        stated = set() if deps.strip() == "-" else {d.strip() for d in deps.split(",")}
        assert stated == imported.get(name.strip(), set()), f"layer {name.strip()}: docs say {sorted(stated)}"


def test_readme_is_short_and_links_inside_the_repository():
    from privdist.algorithms import ALGORITHMS

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert f"{len(ALGORITHMS)} algorithms" in text, "the README's algorithm count is stale"
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), f"README links to {target}, which is not in the repository"
