"""The API reference a user reads (issue 37): every public estimator documents each of its parameters in a literal
class docstring (what ``help()`` prints and what mkdocstrings reads statically, without importing), the ``trust``
values the code accepts are the ones documented, and no docstring on the API pages renders a raw Sphinx role
(``:func:`x```; ``tools/docstring_roles.py`` turns them into cross-references) or a ``[CODE]`` marker."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator

import privdist.learn
from privdist.learn.trust import TRUST_CHOICES

ROOT = Path(__file__).resolve().parents[2]
ESTIMATORS = [getattr(privdist.learn, name) for name in privdist.learn.__all__
              if inspect.isclass(getattr(privdist.learn, name))
              and issubclass(getattr(privdist.learn, name), BaseEstimator)]
#: Anything that looks like a reStructuredText role (``:name:`...```), known to the transform or not.
ANY_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`")


@pytest.fixture(scope="module")
def roles():
    spec = importlib.util.spec_from_file_location("docstring_roles", ROOT / "tools" / "docstring_roles.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _class_node(cls) -> ast.ClassDef:
    tree = ast.parse(Path(inspect.getsourcefile(cls)).read_text(encoding="utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)


def _args(doc: str) -> dict[str, str]:
    """The entries of a Google-style ``Args:`` section: each documented name and its text (``a, b: ...`` documents
    both)."""
    section = re.search(r"^Args:\n(.*?)(?=^\S|\Z)", doc, flags=re.M | re.S)
    assert section, "no Args: section"
    entries = re.split(r"^    (?=[A-Za-z_][\w, ]*:)", section.group(1), flags=re.M)[1:]
    out = {}
    for entry in entries:
        names, text = entry.split(":", 1)
        for name in names.split(","):
            out[name.strip()] = " ".join(text.split())
    return out


def test_the_public_estimators_are_found():
    names = {cls.__name__ for cls in ESTIMATORS}
    assert {"DistributedLogisticRegression", "DistributedRidge", "DistributedLasso",
            "SharedFeatureLogisticRegression"} <= names


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_estimator_docstring_documents_every_parameter_statically(cls):
    """The class's own literal docstring (read from the source, as griffe reads it; a docstring assembled at import
    time is not one) has an Args entry for each parameter of the class's own explicit ``__init__``, and it is what
    ``help()`` shows."""
    node = _class_node(cls)
    literal = ast.get_docstring(node)
    assert literal, f"{cls.__name__} has no literal docstring"
    assert any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in node.body), (
        f"{cls.__name__} has no __init__ of its own (static analysis would not see its parameters)")
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    documented = _args(literal)
    missing = [p for p in params if p not in documented]
    assert not missing, f"{cls.__name__}: parameters without an Args entry: {missing}"
    assert not set(documented) - set(params), f"{cls.__name__}: Args entries for no parameter"
    assert inspect.getdoc(cls) == literal
    assert re.search(r"^Attributes:$", literal, flags=re.M), f"{cls.__name__} has no Attributes: section"


def test_the_horizontal_estimators_document_shared_parameters_alike():
    """The three horizontal estimators repeat one text per shared parameter (each page stands alone): no copy may
    drift from the others."""
    docs = {cls.__name__: _args(ast.get_docstring(_class_node(cls))) for cls in
            (privdist.learn.DistributedLogisticRegression, privdist.learn.DistributedRidge,
             privdist.learn.DistributedLasso)}
    first, *others = docs.values()
    for name, doc in zip(list(docs)[1:], others):
        for param in set(first) & set(doc):
            assert doc[param] == first[param], f"{name}: {param} reads differently from DistributedLogisticRegression"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_trust_documents_every_accepted_value(cls):
    text = _args(inspect.getdoc(cls))["trust"]
    for value in TRUST_CHOICES:
        assert f'``"{value}"``' in text, f"{cls.__name__}: trust={value!r} is accepted but not documented"
    assert cls().trust == "auto" and '``"auto"`` (default)' in text


def test_help_shows_the_budget_and_trust_parameters():
    text = inspect.getdoc(privdist.learn.DistributedLogisticRegression)
    for param in ("epsilon", "delta", "trust", "bounds"):
        assert re.search(rf"^    {param}: \S", text, flags=re.M), param


@pytest.mark.parametrize("text, want", [
    (":func:`privdist.run`", '<autoref identifier="privdist.run" optional><code>privdist.run</code></autoref>'),
    (":class:`~privdist.data.Dataset`",
     '<autoref identifier="privdist.data.Dataset" optional><code>Dataset</code></autoref>'),
    (":meth:`~Network.neighbors()`",
     '<autoref identifier="Network.neighbors" optional><code>neighbors()</code></autoref>'),
    (":py:data:`MAX_BITS`", '<autoref identifier="MAX_BITS" optional><code>MAX_BITS</code></autoref>'),
    (":mod:`the learn module <privdist.learn>`",
     '<autoref identifier="privdist.learn" optional><code>the learn module</code></autoref>'),
    (":class:`privdist.experiments.store.\n    Store`",
     '<autoref identifier="privdist.experiments.store.Store" optional><code>privdist.experiments.store.Store</code>'
     '</autoref>'),
    ("a :attr:`x` and :exc:`E`.", 'a <autoref identifier="x" optional><code>x</code></autoref> and '
                                  '<autoref identifier="E" optional><code>E</code></autoref>.'),
    ("``:func:`` alone, `code`, a: b", "``:func:`` alone, `code`, a: b"),
])
def test_roles_become_cross_references(roles, text, want):
    assert roles.rewrite(text) == want


def test_role_targets_resolve_in_the_docstrings_scope(roles):
    griffe = pytest.importorskip("griffe")
    pkg = griffe.load("privdist", search_paths=[str(ROOT / "src")], resolve_aliases=False)
    in_vertical = roles.resolver(pkg["learn.vertical.SharedFeatureLogisticRegression"])
    assert in_vertical(".budget") == "privdist.learn.budget"
    assert in_vertical("..privacy") == "privdist.privacy"
    assert in_vertical("ValidationError") == "privdist.errors.ValidationError"  # imported into the module
    assert in_vertical("fit") == "privdist.learn.vertical.SharedFeatureLogisticRegression.fit"
    assert in_vertical("privdist.network.make_network") == "privdist.network.make_network"
    assert in_vertical("numpy.ndarray") == "numpy.ndarray"
    assert roles.resolver(pkg["learn"])(".budget") == "privdist.learn.budget"  # an __init__ is its own package


def _rendered(obj):
    """``obj`` and the public members mkdocstrings renders with it (``filters: ["!^_"]``), imports followed."""
    yield obj
    for name, member in obj.members.items():
        if name.startswith("_") or (member.is_alias and member.parent is not obj):
            continue
        try:
            target = member.final_target if member.is_alias else member
        except Exception:  # an import from outside the package
            continue
        if target.path.startswith(obj.path + ".") or not member.is_alias:
            yield from _rendered(target)


def test_no_api_page_renders_a_raw_role_or_marker():
    """Every object a ``::: identifier`` line of the docs renders, with its public members, after the site's
    griffe extension: no role is left (a role the extension does not know would still show here) and no
    ``[CODE]`` marker."""
    griffe = pytest.importorskip("griffe")
    extensions = griffe.load_extensions(str(ROOT / "tools" / "docstring_roles.py"))
    pkg = griffe.load("privdist", search_paths=[str(ROOT / "src")], extensions=extensions)
    idents = sorted({m for page in (ROOT / "docs").rglob("*.md")
                     for m in re.findall(r"^::: (privdist\S*)", page.read_text(encoding="utf-8"), flags=re.M)})
    assert len(idents) > 30 and "privdist.learn.DistributedLogisticRegression" in idents
    bad = {}
    for ident in idents:
        obj = pkg[ident.removeprefix("privdist.")] if ident != "privdist" else pkg
        for item in _rendered(obj.final_target if obj.is_alias else obj):
            text = item.docstring.value if item.docstring else ""
            found = ANY_ROLE.findall(text) + re.findall(r"\[CODE[^\]]*\]", text)
            if found:
                bad[item.path] = found[:3]
    assert not bad, f"docstrings that would render raw roles or markers: {bad}"
