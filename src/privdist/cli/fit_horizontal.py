"""``privdist fit`` with parties holding ROWS: the private and non-private distributed models and the baselines.

Printed beside the private model (:class:`privdist.learn.DistributedLogisticRegression`, one-vs-rest for three or
more classes, or :class:`privdist.learn.DistributedRidge`): the same algorithm without noise, scikit-learn on the
pooled rows (non-private), each party alone (scikit-learn on its own rows) and the majority class (classification)
or the training mean (regression); then, per party on its own test rows, its model alone, the private model and its
personal model (:mod:`privdist.learn.personal`, issue 39), summarised in two lines. All of it is owner-only
evaluation (:mod:`privdist.cli.fit_release`).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..errors import EmptyPartyError, ValidationError
from .fit_common import NO_PROGRESS, fit_with_notes, held_out_metrics, majority_score, model_score, named
from .fit_trust import trust_options

__all__ = ["fit_horizontal", "sk_model", "parse_target_bounds"]


def parse_target_bounds(text: str) -> tuple[float, float]:
    """``--target-bounds LO:HI`` -> ``(LO, HI)``."""
    parts = text.split(":")
    try:
        lo, hi = (float(v) for v in parts)
    except ValueError:
        raise ValidationError(f"--target-bounds {text!r}: write LOW:HIGH, e.g. 0:400") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValidationError(f"--target-bounds must be finite with LOW < HIGH, got {text!r}")
    return lo, hi


def sk_model(task, alpha, n_rows):
    """scikit-learn's model with the estimators' objective scale: mean loss + alpha ||w||^2."""
    from sklearn.linear_model import LogisticRegression, Ridge

    if task == "classification":  # C = 1 / (2 alpha n)
        return LogisticRegression(C=1.0 / max(2 * alpha * n_rows, 1e-12), max_iter=2000)
    return Ridge(alpha=alpha * n_rows)


def fit_horizontal(args, ds, X, y, groups, seed, rng, scale, bounds, progress=NO_PROGRESS) -> SimpleNamespace:
    """Split the rows, fit and compare. Returns a namespace with ``private``, ``rows`` (name -> held-out metrics),
    ``local`` (each party alone), ``parties`` (:func:`privdist.learn.evaluate_parties`: each party's own test rows
    scored by its model alone, the private model and its personal model; party names from the data's party column
    or file names), ``fit(eps, draw)`` (a further private fit: refits for the curve and the draws),
    ``metrics(est)``, ``notes`` (the estimator's warnings), ``n_parties``, ``n_test``, ``n_train`` and ``sizes``
    (training rows per party)."""
    from sklearn.model_selection import train_test_split

    from ..data import make_groups
    from ..learn import DistributedLogisticRegression, DistributedRidge, evaluate_parties

    task = ds.extras["task"]
    classes = ds.extras.get("classes") or []
    n_classes = len(classes) if task == "classification" and len(classes) > 2 else None
    if groups is None:
        if args.dirichlet is not None:
            groups = make_groups("dirichlet", X.shape[0], args.agents_count, y=y, alpha=args.dirichlet, rng=rng)
        else:
            groups = make_groups("random", X.shape[0], args.agents or 10, rng=rng)
    sizes = np.bincount(groups)
    if sizes.min() < 2:  # stratified by party: every party needs a training and a test row
        small = [int(k) for k in np.flatnonzero(sizes < 2)]
        raise EmptyPartyError(f"party(ies) {small} hold fewer than 2 rows ({sizes.min()}), too few for a train/test "
                              "split: use fewer parties, or a larger Dirichlet alpha")
    idx_tr, idx_te = train_test_split(np.arange(X.shape[0]), test_size=args.test_size, random_state=seed % 2**32,
                                      stratify=groups)
    Xtr, ytr, gtr, Xte, yte = X[idx_tr], y[idx_tr], groups[idx_tr], X[idx_te], y[idx_te]
    untrained = np.flatnonzero(np.bincount(gtr, minlength=sizes.size) == 0)
    if untrained.size:  # a large --test-size can take all of a small party's rows (issue 39: it was an IndexError)
        from ..data.names import name_list, party_labels

        raise EmptyPartyError(f"--test-size {args.test_size:g} leaves {untrained.size} party(ies) without a training "
                              f"row ({name_list(party_labels(ds.extras.get('party_names'), untrained))}): lower "
                              "--test-size, or merge small parties")
    Ftr, Fte = named(Xtr, ds.feature_names), named(Xte, ds.feature_names)  # the estimators see the column names
    K = int(groups.max()) + 1
    Est = DistributedLogisticRegression if task == "classification" else DistributedRidge
    common = dict(algorithm=args.algorithm, delta=args.delta, network=args.network, rounds=args.rounds,
                  row_norm=args.row_norm, scale=scale, bounds=bounds, n_agents=K, range_share=args.range_share,
                  **trust_options(args))
    if task == "regression" and args.target_bounds:
        common["target_bounds"] = parse_target_bounds(args.target_bounds)
    elif args.target_bounds:
        raise ValidationError("--target-bounds is for a numeric (regression) target")

    def fit(eps, draw: int = 0, label: str | None = None):
        state = None if args.seed is None else args.seed + draw  # research mode: one seed per draw
        if label is None:
            label = f"refit at epsilon {eps:g}, draw {draw}" if eps is not None else "refit without noise"
        with progress.step(label):
            return fit_with_notes(Est(epsilon=eps, random_state=state, **common), Ftr, ytr, groups=gtr)

    def metrics(est) -> dict:
        return held_out_metrics(task, yte, model_score(est, Fte, n_classes))

    private, notes = fit(args.epsilon, label=f"private model (epsilon {args.epsilon:g})")
    nonpriv, _ = fit(None, label="same algorithm without noise")
    # the baselines see the features as the non-private model does (exact ranges, and no row clipping for a
    # regression): the fair reference, never the private model's noisy ranges or clipping (as bench_utility)
    pre = nonpriv.preprocessor_
    Ztr, Zte = pre.transform(Xtr), pre.transform(Xte)
    rows = {"private distributed": metrics(private), "non-private distributed": metrics(nonpriv)}
    central = sk_model(task, 1e-4, Ztr.shape[0]).fit(Ztr, ytr)
    rows["centralized (pooled, non-private)"] = held_out_metrics(task, yte, model_score(central, Zte, n_classes))
    local = []
    names = ds.extras.get("party_names")
    for k in range(K):
        mask = gtr == k
        if task == "classification" and len(np.unique(ytr[mask])) < 2:  # one class only: it predicts that class
            only = ytr[mask][0]
            acc = float(np.mean(yte == only)) if n_classes else float(np.mean((yte > 0) == (only > 0)))
            m = {"accuracy": acc, "log_loss": None,  # never NaN (issue 40)
                 "note": "log_loss not computable: the party's training rows hold one class, so its model gives the "
                         "other classes probability 0"}
        else:
            alone = sk_model(task, 1e-4, int(mask.sum())).fit(Ztr[mask], ytr[mask])
            m = held_out_metrics(task, yte, model_score(alone, Zte, n_classes))
        local.append({"party": k, **({"name": names[k]} if names else {}), "rows": int(mask.sum()), **m})
    # issue 39: each party's own test rows (the split is stratified by party) scored by its model alone, the private
    # global model and its personal model (owner-only; learn.party_eval)
    progress.add(1)
    with progress.step("per-party evaluation (personal models)"):
        parties = evaluate_parties(private, Xtr, ytr, gtr, Xte, yte, groups[idx_te], names=names,
                                   random_state=seed % 2**32)
    if task == "classification":  # predict the training majority; its log loss uses the training base rates
        rows["majority class"] = held_out_metrics(task, yte, majority_score(ytr, yte.shape[0], n_classes))
    else:
        rows["mean predictor"] = held_out_metrics(task, yte, np.full(yte.shape, float(np.mean(ytr))))
    return SimpleNamespace(private=private, rows=rows, local=local, parties=parties,
                           fit=lambda eps, draw=0: fit(eps, draw)[0],
                           metrics=metrics, notes=notes, n_parties=K, n_test=len(idx_te), n_train=len(idx_tr),
                           sizes=np.bincount(gtr, minlength=K), X_train=Xtr, n_models=n_classes or 1)
