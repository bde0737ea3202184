"""Party-local experts pooled in log-odds: a vertical model whose training releases nothing (issue 39).

**Protocol** (``SharedFeatureLogisticRegression(protocol="pool")``). Every party ``m`` holds the block ``D_m``
(its columns of all rows); the coordinator holds the labels ``Y``.

1. The coordinator gives every party the labels (the exposure S2's protocol already has: every party reads every
   label off ``sign(y)`` in every round, S2 Lemma 2; listed in ``exposures``, no DP event) and computes the prior
   log-odds ``pi = log(n_+ / n_-)`` of the labels (a function of the labels only).
2. Party ``m`` fits, on its own columns and the labels, the same L2-regularised logistic regression as the
   "party alone" baseline (``sum_i log(1 + exp(-Y_i (D_m x + b_m)_i)) + lambda ||x||^2``, intercept ``b_m`` not
   penalised), its log-odds ``c_m = D_m x_m + b_m``. It stays with the party.
3. The model's score is the logarithmic opinion pool of the parties' log-odds around the prior (Genest & Zidek,
   Statist. Sci. 1986; Hinton's product of experts for ``a = 1``)

       s = pi + a sum_m (c_m - pi),   a = 1 / sqrt(M)   (:func:`pool_weight`),

   i.e. party ``m`` holds the coefficient block ``a x_m`` and the intercept share ``a (b_m - pi)`` (party 0's
   also ``pi``): the model's intercept ``pi + a sum_m (b_m - pi)`` is the sum of the shares, formed only when a
   row is scored (each party's ``b_m`` is a function of its columns and never sent while training).

**Privacy argument.** Nothing computed from a party's columns leaves it while training: ``x_m`` and ``c_m`` stay
with party ``m``, the coordinator computes ``pi`` and ``a`` from the labels and the public ``M``. The training
transcript is therefore independent of every party's block: it is ``(epsilon = 0, delta = 0)``-DP for any
neighbouring relation on a party's columns (S2 Def. 2's column-level neighbours, spec §1.1, and row-level ones
alike) and records no DP event in the ledger. The ledger holds only the DP range step's releases (``scale="dp"``,
row-level neighbours, :func:`privdist.learn.ranges.fit_ranges_vertical`), and the printed guarantee is their
composition under the accountant, at most the request (the rest of the budget is not spent). Not covered, as for
ADMM sharing: the labels (named exposure) and scoring a new row, which needs each party's ``D_m^new x_m``.

**Why no noisy shares.** The sensitivity bound privdist has for a share under S2's neighbours is the clipped one of
:mod:`privdist.algorithms.sharing`, which holds for any two blocks: a share's whole range. Every release then
carries noise far above its signal (spec §3.6-§3.7, AMB-V3): ADMM sharing's private model stays below the best
party alone on Adult with 3 parties at a total epsilon of 1 (the measurement of ``docs/own-data.md``), and one round
of noisy own-fit shares (share of norm 1, sensitivity 2, noise multiplier 4.107 at epsilon 0.9, PLD) gave the
coordinator a share-to-noise norm ratio of 0.0007 and logistic stacking weights of 0 to 3 decimals (validation
accuracy 0.7559, 0.7504, 0.7483 for seeds 0-2: the majority class). What a combination needs across parties is thus
set publicly: the pool weight ``a``.

**The pool weight** ``a = 1 / sqrt(M)``: between the geometric mean (``a = 1/M``, right for redundant experts) and
the product of experts (``a = 1``, right for experts conditionally independent given the label). Chosen on a
validation split of Adult's training rows (80 % of the CLI's training split, seeds 0-2, columns min-max mapped into
[-1, 1], even contiguous column split, ``lambda = 1e-3``), mean validation accuracy over the seeds:

=====  ==========  ============  =========  =========  =======
``M``  best party  ``1/sqrt M``  ``a=0.5``  ``a=0.8``  ``a=1``
=====  ==========  ============  =========  =========  =======
2      0.8320      0.8435        0.8358     0.8436     0.8417
3      0.8372      0.8478        0.8472     0.8422     0.8355
4      0.8180      0.8419        0.8395     0.8429     0.8397
5      0.8273      0.8452        0.8439     0.8392     0.8329
=====  ==========  ============  =========  =========  =======

With the estimator itself (``M = 3``, no public bounds: a DP range step, guarantee epsilon 0.285 per party at a
requested total of 1), validation accuracy 0.8472, 0.8488, 0.8484 (seeds 0-2) against 0.8367, 0.8378, 0.8354 for
the best party alone; confirmed afterwards on the test splits of ``privdist fit`` (9,045 rows): 0.8450, 0.8456,
0.8422 against 0.8385, 0.8363, 0.8344. (scikit-learn's logistic stacking of the three parties' scores, fitted
without noise, reached 0.8467-0.8485 on the validation splits with ``M = 3``.) The pool is a fixed rule, not a fit
of the combination: nothing guarantees it is at least the best party alone on other data (e.g. where one party
carries all the signal and the others only noise).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["pool_weight", "fit_local_pool", "pool_block", "prior_log_odds", "POOL_SCOPE", "POOL_LABEL_EXPOSURE"]

#: The named exposure of the pool that no DP event covers (as ADMM sharing's, S2 Lemma 2).
POOL_LABEL_EXPOSURE = ("pool: labels exposed - the coordinator gives every party the labels (each party fits its own "
                       "block on them), the exposure S2's protocol also has (every party reads them off sign(y), S2 "
                       "Lemma 2); S2 protects features only (column neighbours, S2 Def. 2)")

#: What the guarantee of a pooled fit covers (the privacy report's ``scope``).
POOL_SCOPE = ("pool: while training nothing computed from a party's columns leaves it (each party fits its block "
              "on its own columns and the labels; the coordinator pools the parties' log-odds with the public weight "
              "1/sqrt(M) around the labels' prior log-odds), so the training releases no function of any party's "
              "block (no DP event); each party's block x_m stays with it (a model file holds no block: "
              "privdist.learn.save_model writes block m to parties/party_<m>.json, owner-only for party m); coef_ "
              "gathered in one process is for the data holder(s), and scoring a new row needs each party's D_m x_m "
              "(further releases, not covered)")


def pool_weight(n_parties: int) -> float:
    """The public pool weight ``a = 1 / sqrt(M)`` of ``M`` parties (module docstring)."""
    return 1.0 / math.sqrt(n_parties)


def prior_log_odds(y_pm: np.ndarray, fit_intercept: bool) -> float:
    """``pi = log(n_+ / n_-)`` of the labels (0 without an intercept): the coordinator's, a function of the labels
    only."""
    y = np.asarray(y_pm)
    n_pos = int(np.sum(y > 0))
    return math.log(n_pos / (y.size - n_pos)) if fit_intercept else 0.0


def pool_block(D: np.ndarray, y_pm: np.ndarray, alpha: float, fit_intercept: bool, weight: float, prior: float,
               first: bool) -> tuple[np.ndarray, float]:
    """One party's pooled expert (module docstring, step 2), fitted where its block ``D`` lives: its coefficient
    block ``a x_m`` and intercept share ``a (b_m - pi)`` (plus ``pi`` for the ``first`` party)."""
    from sklearn.linear_model import LogisticRegression

    y01 = (np.asarray(y_pm) > 0).astype(int)
    # C = 1/(2 lambda): scikit-learn's 1/2 ||w||^2 + C sum loss is the party's objective divided by 2 lambda
    model = LogisticRegression(C=1.0 / (2.0 * alpha), max_iter=2000, fit_intercept=fit_intercept).fit(D, y01)
    own_b = float(model.intercept_[0]) if fit_intercept else 0.0
    share = weight * (own_b - prior) + (prior if first else 0.0)
    return weight * np.asarray(model.coef_, dtype=float).ravel(), share


def fit_local_pool(blocks, y_pm: np.ndarray, alpha: float, fit_intercept: bool):
    """Fit every party's expert on its own block and pool them (module docstring, steps 2-3; one process: the
    estimator; across processes each party runs :func:`pool_block` on its own, :mod:`privdist.learn.job_vertical`).

    Args:
        blocks: party ``m``'s ``N x d_m`` columns (rows aligned).
        y_pm: labels in {-1, +1} (both present).
        alpha: ``lambda`` of the party's objective (sum loss); the intercept is not penalised.
        fit_intercept: give each party an intercept and pool around the prior log-odds (else no intercept anywhere
            and ``pi = 0``).

    Returns:
        ``(coef_blocks, intercept_shares, info)``: party ``m``'s pooled coefficient block ``a x_m`` and intercept
        share ``a (b_m - pi)`` (party 0's also holds the coordinator's ``pi``: the labels are exposed to every party
        anyway), so the model's intercept is their sum and scoring a row sums the parties' shares, as ADMM
        sharing's; ``info``: ``weight`` and ``prior_log_odds`` (public weight, a function of the labels).
    """
    a, prior = pool_weight(len(blocks)), prior_log_odds(y_pm, fit_intercept)
    fitted = [pool_block(D, y_pm, alpha, fit_intercept, a, prior, m == 0) for m, D in enumerate(blocks)]
    return [c for c, _ in fitted], [b for _, b in fitted], {"weight": a, "prior_log_odds": prior}
