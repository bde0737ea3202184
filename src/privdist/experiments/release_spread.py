"""Measured spread of D-ZOA's released iterate against the sigma S1 Thm 1 declares (issue 14, finding).

S1 Thm 1 treats each release ``beta_k^{(m)}`` as a Gaussian mechanism whose per-coordinate standard deviation is
``sigma_k = sqrt(C_T / (J_k P))`` (the second-moment bound S1(17) read as the variance; ``J_k`` from S1(22)). This
module measures the spread the algorithm actually produces: run a catalog entry's D-ZOA run for ``at_round``
rounds on one trial, then replay round ``at_round + 1`` from that same state and inbox ``replicates`` times with
independent inner-loop streams (only the zeroth-order directions differ), and report per agent the RMS over
coordinates of the per-coordinate standard deviation beside the declared ``sigma_k``.

``python -m privdist.experiments.release_spread s1_fig4 "D-ZOA eps=0.15 delta=0.001" --set runs.0.params.step_scale=0.5``
prints the table (``--set`` as for ``privdist run``; the run's tuned parameters must be given, since no tuning
runs here).
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from ..errors import SpecError

__all__ = ["release_spread", "main"]


def release_spread(spec, label: str, *, trial: int = 0, at_round: int = 50, replicates: int = 30,
                   data_dir=None) -> dict:
    """Per-agent measured spread of one D-ZOA release and the sigma S1 Thm 1 declares for it.

    Args:
        spec: an :class:`~privdist.experiments.spec.ExperimentSpec` with a ``dzoa`` run labelled ``label``.
        trial: the trial whose data and first ``at_round`` rounds are used (reported seed of the spec).
        at_round: rounds run before the replayed one (>= 1).
        replicates: independent replays of round ``at_round + 1`` (>= 3).

    Returns:
        ``{"label", "trial", "round", "replicates", "J", "measured", "declared", "ratio", "sampler"}``: lists over
        agents (``ratio = declared / measured``).

    Raises:
        SpecError: no such run, or it is not a ``dzoa`` run with a privacy target.
    """
    from ..algorithms import make_algorithm
    from ..runtime import AgentStreams
    from ..runtime import run as run_algorithm
    from .build import build_trial

    rs = next((r for r in spec.runs if r.label == label), None)
    if rs is None or rs.algorithm != "dzoa":
        raise SpecError(f"{spec.name}: no dzoa run labelled {label!r}")
    if at_round < 1 or replicates < 3:
        raise SpecError("release_spread needs at_round >= 1 and replicates >= 3")
    built = build_trial(dataclasses.replace(spec, runs=(rs,)), trial, data_dir=data_dir)
    algo = make_algorithm(rs.algorithm, **rs.params)
    if algo.epsilon is None:
        raise SpecError(f"{label!r} has no privacy target: S1 Thm 1 declares no sigma")
    state = run_algorithm(algo, built.problem, built.network, at_round, seed=spec.seed, trial=trial,
                          transcript="none").final_state
    inbox = {"beta": built.network.adjacency.toarray() @ state.beta}
    ids = np.asarray(state.agent_ids)
    outs = np.stack([algo.step(state, inbox, at_round + 1,
                               AgentStreams(10_000 + r, trial, ids, at_round + 1))[1]["beta"]
                     for r in range(replicates)])
    measured = np.sqrt((outs.std(axis=0, ddof=1) ** 2).mean(axis=1))  # per agent, RMS over coordinates
    cal = state.calib
    declared = np.sqrt(cal.ct / (cal.J * built.problem.n_features))  # S1(17) read as the release variance
    info = algo.run_info([state])
    return {"label": label, "trial": trial, "round": at_round + 1, "replicates": replicates,
            "J": [int(j) for j in cal.J], "measured": measured.tolist(), "declared": declared.tolist(),
            "ratio": (declared / measured).tolist(), "sampler": info.get("inner_sampler_per_agent")}


def main(argv=None) -> int:
    """Command line: print the measured spread of one release beside S1 Thm 1's sigma, per agent."""
    from .catalog import load_experiment

    ap = argparse.ArgumentParser(prog="python -m privdist.experiments.release_spread", description=__doc__.split("\n")[0])
    ap.add_argument("experiment")
    ap.add_argument("label")
    ap.add_argument("--set", action="append", default=[], dest="settings", help="KEY.PATH=VALUE as for privdist run")
    ap.add_argument("--trial", type=int, default=0)
    ap.add_argument("--at-round", type=int, default=50)
    ap.add_argument("--replicates", type=int, default=30)
    args = ap.parse_args(argv)
    spec = load_experiment(args.experiment)
    if args.settings:
        spec = spec.with_settings(args.settings)
    out = release_spread(spec, args.label, trial=args.trial, at_round=args.at_round, replicates=args.replicates)
    print(f"{out['label']}: trial {out['trial']}, round {out['round']}, {out['replicates']} replicates")
    print("agent | J_k | sampler | measured std | declared sigma (S1(17)) | declared / measured")
    for k, (J, m, d, r) in enumerate(zip(out["J"], out["measured"], out["declared"], out["ratio"])):
        sampler = out["sampler"][k] if out["sampler"] else "-"
        print(f"{k} | {J} | {sampler} | {m:.3g} | {d:.3g} | {r:.0f}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
