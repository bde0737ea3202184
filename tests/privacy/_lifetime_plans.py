"""Small privacy plans built directly (no fit) for the lifetime-ledger and admission tests (issue 38)."""

from privdist.privacy.plan import PrivacyPlan, TrainingPlan


def make_plan(**kw):
    """A 4-party horizontal dpmm plan, total epsilon 1 and delta 1e-5: local trust unless ``secure`` is given."""
    secure = kw.pop("secure", None)
    base = dict(kind="horizontal", algorithm="dpmm", epsilon=1.0, delta=1e-5,
                trust="secure_aggregation" if secure else "local", secure=secure, parties=4, rows=400, columns=3,
                classes=1, rounds=10, range=None, training=(TrainingPlan(1.0, 1e-5),))
    base.update(kw)
    return PrivacyPlan(**base)
