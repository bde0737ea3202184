"""The catalog of experiment specs shipped inside the package (``catalog/*.toml``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import UnknownNameError
from .papers import PAPER_ALIASES, PAPERS
from .spec import ExperimentSpec, load_spec_file, parse_spec

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["catalog", "catalog_index", "load_experiment", "experiments_of_paper", "resolve_paper"]


def _entries():
    root = resources.files("privdist.experiments") / "catalog"
    return [e for e in sorted(root.iterdir(), key=lambda e: e.name) if e.name.endswith(".toml")]


def catalog_index() -> list[dict]:
    """Name, paper, figure, title, trials and estimated seconds of every shipped entry, read from the TOML files
    without building the specs (what ``privdist list`` shows; fast). :func:`catalog` validates them fully."""
    out = []
    for entry in _entries():
        raw = tomllib.loads(entry.read_text(encoding="utf-8"))
        out.append({"name": raw.get("name"), "paper": raw.get("paper") or None, "figure": raw.get("figure", ""),
                    "title": raw.get("title", ""), "trials": raw.get("trials"),
                    "estimated_seconds": raw.get("estimated_seconds")})
    return out


def catalog() -> dict[str, ExperimentSpec]:
    """Every shipped experiment, by name (sorted)."""
    out = {}
    for entry in _entries():
        spec = parse_spec(tomllib.loads(entry.read_text(encoding="utf-8")), source=f"catalog/{entry.name}")
        out[spec.name] = spec
    return out


def load_experiment(name_or_path: str) -> ExperimentSpec:
    """A catalog entry by name, or a spec file by path (anything ending in ``.toml``)."""
    if name_or_path.endswith(".toml") or Path(name_or_path).is_file():
        return load_spec_file(name_or_path)
    cat = catalog()
    if name_or_path not in cat:
        raise UnknownNameError("experiment", name_or_path, list(cat))
    return cat[name_or_path]


def resolve_paper(paper: str) -> tuple[str, ...]:
    """Spec ids of a paper given as ``S0``..``S4`` or by name (dzoa, sharing, laadmm, dpdonc)."""
    key = paper.strip()
    if key.upper() in PAPERS:
        return (key.upper(),)
    if key.lower() in PAPER_ALIASES:
        return PAPER_ALIASES[key.lower()]
    raise UnknownNameError("paper", paper, list(PAPERS) + list(PAPER_ALIASES))


def experiments_of_paper(paper: str) -> list[ExperimentSpec]:
    """Catalog entries of a paper, in name order."""
    ids = resolve_paper(paper)
    return [s for s in catalog().values() if s.paper in ids]
