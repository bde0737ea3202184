"""Problem kind ``vertical_logistic`` (S2, spec §3.9): vertical split, log-loss metrics, baselines, S2 plots.

``[data] kind``: ``"a9a"`` (train ``a9a``, test ``a9a.t``, from the data directory), ``"gisette"`` (the real
LIBSVM ``gisette_scale`` / ``gisette_scale.t`` files when present in the data directory; otherwise, with
``params.source = "auto"`` (default), the SYNTHETIC gisette-shaped stand-in, with a warning; ``"real"`` requires
the files) or ``"gisette_synthetic"`` (always synthetic; ``params`` go to the generator). ``[problem]`` keys:
``blocks`` (feature block sizes, e.g. ``[66, 57]``), ``reg_weight`` (lambda, 1e-3), ``loss_scale`` (``sum``,
AMB-V1), ``sgd`` (FDML SGD baseline settings ``{lr, batch_size}``, spec §6.9). Party 1 gets a bias column.

Metrics (of ``beta = sum of the parties' embedded x_m``): ``test_log_loss`` (noise-free test logits, as in the S2
authors' code), ``train_log_loss``, ``train_objective`` (mean train log loss + lambda ||beta||^2 as in the authors'
code, of the noise-free ``x_m``: the runtime scores parties' models, spec §3.9 uses the noisy ``s^t``, which equals it
at noise 0; with ``loss_scale = "mean"`` it is exactly the ADMM objective), ``objective`` (the exact objective ADMM
solves, :meth:`VerticalProblem.objective`) and ``objective_gap`` (``(F(beta) - F*) / |F*|``, ``F*`` of the centralized
solve), and per-trial baselines shown as reference lines: ``sklearn_all_test_log_loss`` /
``sklearn_local_test_log_loss`` (``LogisticRegression(C=1/lambda)`` on all / party 1's features, spec §3.9, as in the
authors' code; with ``loss_scale = "mean"`` ``C = 1/(N lambda)``, the same loss-to-penalty ratio as the code's sum
convention), ``centralized_test_log_loss`` (exact solve of the ADMM objective, AMB-V8), ``sgd_train_objective`` /
``sgd_test_log_loss`` (FDML SGD, one value per epoch, computed once per trial by a separate ``privdist.run``; the runner
evaluates metrics once after init and after each round, so round ``t`` reads epoch ``t`` of the SGD curve), and
``n_train``.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import scipy.sparse as sp

from ..data import load_dataset, vertical_partition
from ..errors import DataFileNotFoundError, SpecError
from ..network import complete
from ..problems.vertical import VerticalProblem, log_loss
from .problem_kinds import ProblemKind, Trial, register_problem_kind
from .claims import register_claim_kind
from .plots import register_plotter

__all__ = ["build_vertical", "load_train_test", "PAPER_TEST_LOG_LOSS"]

#: Test log losses the S2 authors recorded for the scikit-learn baselines (spec §3.9) - the paper's numbers.
PAPER_TEST_LOG_LOSS = {"a9a": {"all": 0.3250, "local": 0.3500}, "gisette": {"all": 0.0854, "local": 0.2080}}

METRICS = ("test_log_loss", "train_objective", "train_log_loss", "objective", "objective_gap",
           "sklearn_all_test_log_loss", "sklearn_local_test_log_loss", "centralized_test_log_loss",
           "sgd_train_objective", "sgd_test_log_loss", "n_train")


def load_train_test(spec, rng, data_dir):
    """``(train, test, source)`` datasets of a spec's ``[data]`` table (``source`` names what was loaded)."""
    kind, params = spec.data.kind, dict(spec.data.params)
    if kind == "a9a":
        return load_dataset("a9a", data_dir=data_dir), load_dataset("a9a.t", data_dir=data_dir), "a9a"
    if kind == "gisette":
        source = params.pop("source", "auto")
        if source not in ("auto", "real", "synthetic"):
            raise SpecError(f"[data.params].source must be auto, real or synthetic, got {source!r}")
        if source != "synthetic":
            from ..data.svmlight import load_svmlight

            try:
                return (load_svmlight("gisette_scale", data_dir, n_features=5000),
                        load_svmlight("gisette_scale.t", data_dir, n_features=5000), "gisette")
            except DataFileNotFoundError:
                if source == "real":
                    raise
                warnings.warn("gisette_scale not found in the data directory: using the SYNTHETIC gisette-shaped "
                              "stand-in (numbers are not comparable with the paper's)", stacklevel=2)
        kind = "gisette_synthetic"
    if kind == "gisette_synthetic":
        rng_test = copy.deepcopy(rng)
        train = load_dataset("gisette_synthetic", rng=rng, split="train", **params)
        return train, load_dataset("gisette_synthetic", rng=rng_test, split="test", **params), "gisette_synthetic"
    raise SpecError(f"problem kind 'vertical_logistic' needs [data].kind a9a, gisette or gisette_synthetic, got {kind!r}")


def _with_bias(X):
    ones = np.ones((X.shape[0], 1))
    return sp.hstack([sp.csr_matrix(ones), X], format="csr") if sp.issparse(X) else np.hstack([ones, X])


def _sklearn_test_loss(Xtr, ytr, Xte, yte, lam: float) -> float:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=1.0 / lam, max_iter=1000).fit(Xtr, ytr)
    return log_loss(model.decision_function(Xte), yte)


def _sgd_curves(problem, network, Xtr_full, Xte_full, yte, sgd: dict, epochs: int, seed: int, trial: int):
    """FDML SGD baseline: per-epoch train objective and test log loss (epoch 0 = initialisation)."""
    from ..algorithms import make_algorithm
    from ..runtime import run

    algo = make_algorithm("fdml_sgd", **{"shuffle": True, "init_std": 0.01, **sgd})
    steps = algo.steps_per_epoch(problem.n_samples)
    lam, Y = problem.reg_weight, problem.labels
    train_obj, test, count = [], [], [0]

    def every(est):
        if count[0] % steps == 0:
            beta = est.sum(axis=0)
            train_obj.append(log_loss(np.asarray(Xtr_full @ beta).ravel(), Y) + lam * beta @ beta)
            test.append(log_loss(np.asarray(Xte_full @ beta).ravel(), yte))
        count[0] += 1
        return 0.0

    run(algo, problem, network, epochs * steps, seed=seed, trial=trial, transcript="none", metrics={"e": every})
    return np.asarray(train_obj), np.asarray(test)


def _by_round(curve: np.ndarray):
    """A round-aware runner metric returning ``curve[t]`` at round ``t`` (see :func:`privdist.run`)."""

    def metric(est, t):
        return float(curve[min(t, len(curve) - 1)])

    metric.with_round = True
    return metric


def build_vertical(spec, rng, data_dir) -> Trial:
    train, test, source = load_train_test(spec, rng, data_dir)
    prob = spec.problem
    lam = float(prob.get("reg_weight", 1e-3))
    blocks = list(prob.get("blocks", [train.n_features]))
    parts = vertical_partition(train.X, blocks)
    problem = VerticalProblem(parts, train.y, lam, prob.get("loss_scale", "sum"))
    network = complete(problem.n_agents)
    Xtr, Xte = problem.full_matrix(), _with_bias(test.X)
    Ytr, Yte = problem.labels, np.where(test.y > 0, 1.0, -1.0)
    wanted = set(spec.metrics)

    def beta(est):
        return np.asarray(est).sum(axis=0)

    def train_loss(est):
        return log_loss(np.asarray(Xtr @ beta(est)).ravel(), Ytr)

    metrics = {
        "test_log_loss": lambda est: log_loss(np.asarray(Xte @ beta(est)).ravel(), Yte),
        "train_log_loss": train_loss,
        "train_objective": lambda est: train_loss(est) + lam * float(beta(est) @ beta(est)),
        "n_train": lambda est: float(problem.n_samples),
    }
    metrics["objective"] = lambda est: problem.objective(beta(est))
    extras = {"source": source, "problem": problem}
    # penalty per unit of the summed loss (sklearn: C = 1 / lam_sum, as in the authors' code)
    lam_sum = lam / problem.loss_weight
    if "sklearn_all_test_log_loss" in wanted:
        v = _sklearn_test_loss(train.X, Ytr, test.X, Yte, lam_sum)
        metrics["sklearn_all_test_log_loss"] = lambda est, v=v: v
    if "sklearn_local_test_log_loss" in wanted:
        d1 = blocks[0]
        v = _sklearn_test_loss(train.X[:, :d1], Ytr, test.X[:, :d1], Yte, lam_sum)
        metrics["sklearn_local_test_log_loss"] = lambda est, v=v: v
    if wanted & {"centralized_test_log_loss", "objective_gap"}:
        beta_c = problem.centralized_solution()
        v, f_star = log_loss(np.asarray(Xte @ beta_c).ravel(), Yte), problem.objective(beta_c)
        extras["centralized_objective"] = f_star
        metrics["centralized_test_log_loss"] = lambda est, v=v: v
        metrics["objective_gap"] = lambda est, f=f_star: (problem.objective(beta(est)) - f) / abs(f)
    if wanted & {"sgd_train_objective", "sgd_test_log_loss"}:
        sgd = dict(prob.get("sgd", {}))
        tr_curve, te_curve = _sgd_curves(problem, network, Xtr, Xte, Yte, sgd, spec.rounds, spec.seed,
                                         int(rng.integers(2**31)))
        metrics["sgd_train_objective"] = _by_round(tr_curve)
        metrics["sgd_test_log_loss"] = _by_round(te_curve)
    # only what the spec asks for: every metric is evaluated after every round
    return Trial(problem, network, {k: f for k, f in metrics.items() if k in wanted}, extras)


register_problem_kind(ProblemKind("vertical_logistic", frozenset({"blocks", "reg_weight", "loss_scale", "sgd"}),
                                  METRICS, build_vertical))
# --- plots of the S2 figures ----------------------------------------------------------------------------

_PRETTY = {"test_log_loss": "test log loss", "train_objective": "training objective",
           "objective": "ADMM objective", "objective_gap": "relative objective gap to the centralized solve",
           "train_log_loss": "train log loss", "sklearn_all_test_log_loss": "sklearn LR, all features",
           "sklearn_local_test_log_loss": "sklearn LR, party-1 features only",
           "centralized_test_log_loss": "exact centralized solve"}


def _selected(plot, runs):
    want = plot.get("runs")
    return [r for r in runs if not want or r["label"] in want or r.get("group") in want]


def _reference_lines(ax, plot, runs, traces):
    first = runs[0]["label"]
    for i, b in enumerate(plot.get("baselines", [])):
        v = float(traces[f"{first}::{b}"][:, -1].mean())
        ax.axhline(v, ls="--", lw=1.2, color=f"C{7 + i}", label=f"{_PRETTY.get(b, b)} ({v:.4f})")
    for i, (name, v) in enumerate(dict(plot.get("paper", {})).items()):
        ax.axhline(v, ls=":", lw=1.0, color="gray" if i == 0 else "black",
                   label=f"paper's sklearn LR, {name} ({v:.4f}, S2 authors)")


def _epochs(ax, plot, runs, traces):
    """Curves against epochs 1..T (ADMM iteration = epoch; FDML SGD curves are already per epoch)."""
    names = list(plot.get("metrics", [plot["metric"]]))
    sgd_done = set()
    chosen = _selected(plot, runs)
    for r in chosen:
        for m in names:
            if m.startswith("sgd_"):
                if m in sgd_done:
                    continue
                sgd_done.add(m)
                label = f"FDML SGD: {_PRETTY.get(m[4:], m[4:])}"
            else:
                label = f"{r['label']}: {_PRETTY.get(m, m)}" if len(names) > 1 else r["label"]
            data = traces[f"{r['label']}::{m}"]
            x = np.arange(data.shape[1])
            ax.plot(x[1:], data.mean(axis=0)[1:], lw=1.6, label=label, ls="--" if m.startswith("sgd_") else "-")
    _reference_lines(ax, plot, chosen, traces)
    ax.set_xlim(1, plot.get("xmax", None))
    if "ylim" in plot:
        ax.set_ylim(*plot["ylim"])
    ax.set_xlabel("epoch")


def _noise(ax, plot, runs, traces):
    """Test log loss at epoch ``at`` against the noise std of the swept runs (categorical x axis)."""
    metric, at = plot["metric"], int(plot.get("at", -1))
    pts = sorted((r["sweep"]["noise_std"], r["label"]) for r in _selected(plot, runs) if "noise_std" in r["sweep"])
    ys = [float(traces[f"{lab}::{metric}"][:, at].mean()) for _, lab in pts]
    ax.plot(range(len(pts)), ys, marker="o", lw=1.6, label=f"ADMM sharing, {_PRETTY.get(metric, metric)} "
                                                          f"at epoch {at if at >= 0 else 'last'}")
    for i, ((s, _), y) in enumerate(zip(pts, ys)):  # tick labels would be reset by draw_plots' set_xscale
        ax.annotate(f"s={s:g}\n{y:.4f}", (i, y), textcoords="offset points", xytext=(0, 8), ha="center", fontsize=7)
    _reference_lines(ax, plot, runs, traces)
    if "ylim" in plot:
        ax.set_ylim(*plot["ylim"])
    modes = {r["params"].get("mode", "variable_isotropic") for r in _selected(plot, runs) if "noise_std" in r["sweep"]}
    noise = "Q_m + N(0, s^2 I), on the shared vector" if modes == {"output"} else "x~_m = x_m + N(0, s^2 I)"
    ax.set_xlabel(f"noise level (points labelled with the std s of {noise})")


register_plotter("sharing_epochs", _epochs, {"metrics", "baselines", "paper", "xmax", "ylim"})
register_plotter("sharing_noise", _noise, {"at", "baselines", "paper", "ylim"})


# --- claims ---------------------------------------------------------------------------------------------

def _final(by_label, label, metric):
    return by_label[label]["metrics"][metric]["final_mean"]


def _reaches_all(c, by_label, metric):
    """``run``'s final metric is within ``value`` of (or below) the all-features scikit-learn baseline."""
    a, b = _final(by_label, c["run"], metric), _final(by_label, c["run"], "sklearn_all_test_log_loss")
    return a <= b + c.get("value", 0.0), f"{c['run']}: {a:.4f}; sklearn all features: {b:.4f} (tolerance {c.get('value', 0)})"


def _beats_local(c, by_label, metric):
    """Every run of ``runs`` ends below the party-1-features-only scikit-learn baseline."""
    if not c.get("runs"):
        return None, "no run listed"
    vals = {lab: _final(by_label, lab, metric) for lab in c["runs"]}
    b = _final(by_label, c["runs"][0], "sklearn_local_test_log_loss")
    ev = "; ".join(f"{k}: {v:.4f}" for k, v in vals.items()) + f"; sklearn local features: {b:.4f}"
    return all(v < b for v in vals.values()), ev


def _first_epoch(curve, target):
    hit = np.nonzero(np.asarray(curve)[1:] <= target)[0]
    return int(hit[0]) + 1 if hit.size else None


def _fewer_epochs(c, by_label, metric):
    """ADMM (``run``) reaches ``sklearn all + value`` in fewer epochs than FDML SGD (traces of the same run)."""
    m = by_label[c["run"]]["metrics"]
    target = m["sklearn_all_test_log_loss"]["final_mean"] + c.get("value", 0.0)
    e_admm, e_sgd = _first_epoch(m[metric]["curve_mean"], target), _first_epoch(m["sgd_test_log_loss"]["curve_mean"], target)
    holds = e_admm is not None and (e_sgd is None or e_admm < e_sgd)
    never = f"not within {len(m[metric]['curve_mean']) - 1} epochs"
    return holds, (f"epochs to test log loss <= {target:.4f}: ADMM {e_admm if e_admm else never}, "
                   f"FDML SGD {e_sgd if e_sgd else never}")


def _non_increasing(c, by_label, metric):
    """The metric curve of ``run`` (e.g. ``objective_gap``) never increases from epoch ``value`` (default 1) on
    (relative slack 1e-12). ADMM's objective need not be monotone in the first iterations (the augmented
    Lagrangian is the decreasing quantity, S2 Lemma 3), hence the start epoch."""
    start = int(c.get("value", 1))
    curve = np.asarray(by_label[c["run"]]["metrics"][metric]["curve_mean"])
    seg = curve[start:]
    if seg.size < 2:
        return None, f"fewer than two epochs from epoch {start} on"
    rises = np.nonzero(np.diff(seg) > 1e-12 * np.abs(seg[:-1]))[0]
    marks = sorted({start, min(10, len(curve) - 1), len(curve) - 1})
    ev = ", ".join(f"epoch {e}: {curve[e]:.4g}" for e in marks)
    return rises.size == 0, ev + ("" if rises.size == 0 else f"; first rise after epoch {int(rises[0]) + start}")


register_claim_kind("sharing_reaches_all_features", _reaches_all)
register_claim_kind("sharing_non_increasing", _non_increasing)
register_claim_kind("sharing_beats_local_features", _beats_local)
register_claim_kind("sharing_fewer_epochs_than_sgd", _fewer_epochs)
