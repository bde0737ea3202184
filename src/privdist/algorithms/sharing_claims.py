"""The texts of DP ADMM sharing's privacy status (spec §3.6-§3.7, issue 12): why a mode is only the paper's claim,
what a run assumes, and the label exposure no DP event covers (:mod:`privdist.algorithms.sharing`)."""

from __future__ import annotations

__all__ = ["LABEL_EXPOSURE", "unenforced_reason", "sharing_assumptions"]

#: The named exposure of the protocol that no DP event covers (issue 12, item 6).
LABEL_EXPOSURE = ("admm_sharing: labels exposed - the coordinator broadcasts y = grad l(z) in the clear every round "
                  "(S2 Lemma 2); y_i = -w Y_i sigma(-Y_i z_i), so sign(y_i) = -Y_i gives every party every label, "
                  "with or without noise on Q_m. S2 protects features only (column neighbours, S2 Def. 2)")

_SINGULAR = ("the released Q_m = D_m (x_m + xi) always lies in col(D_m), the column space of the party's own block "
             "(noise confined to col(D_m), a singular mechanism), so projecting one release onto the orthogonal "
             "complement of col(D_m) separates neighbouring datasets exactly (AMB-V3)")


def unenforced_reason(algo) -> str | None:
    """Why the releases (with ``epsilon``) are only the paper's claim, or None (guaranteed mode, no epsilon)."""
    if algo.epsilon is None or algo._clipping():
        return None
    pilot = ("; b1 is read off a non-private pilot run on every party's features and the labels "
             "(data-dependent, AMB-V4) and nothing is clipped to it") if algo.b1 == "pilot" else ""
    if algo.mode == "paper_precision":
        return (f"admm_sharing (paper_precision): {_SINGULAR}; S2 Thm 3 models D_m xi as a scalar N(0, sigma^2) "
                f"and its C rests on the unenforced b1 and ||(D_m^T D_m)^-1|| = 1/d_m (AMB-V4){pilot}")
    if algo.mode == "variable_isotropic":
        return (f"admm_sharing (variable_isotropic): xi ~ N(0, sigma^2 I) with sigma from S2 Thm 3's calibration "
                f"(the authors' code), but {_SINGULAR}{pilot}")
    if algo.mode == "computed_heuristic":
        return ("admm_sharing (computed_heuristic): sigma is calibrated with private iterates (||y^t||, "
                f"||v_m^t||, the authors' code) and {_SINGULAR}")
    if algo.b1 == "pilot":
        return ("admm_sharing (output, b1='pilot'): the sensitivity bound b1 is read off a non-private pilot "
                "run on every party's features and the labels (data-dependent, AMB-V4); nothing is clipped to "
                "it (the private run's iterates exceed it) and S2 Lemma 1's C assumes ||(D_m^T D_m)^-1|| = 1/d_m")
    return ("admm_sharing (output, clip=False): S2 Lemma 1's sensitivity C assumes ||x||, ||y||, ||z|| <= b1 "
            "(not enforced: nothing is clipped) and ||(D_m^T D_m)^-1|| = 1/d_m (false in general), so C does "
            "not bound the real releases")


def _b1_text(algo) -> str:
    """The bound ``b1`` as the claim quotes it (the pilot's value and how it was read)."""
    if algo.b1 != "pilot":
        return f"{algo.b1}"
    value = "not yet resolved" if algo._pilot_value is None else f"{algo._pilot_value:.6g}"
    return (f"{value} (pilot: {algo.b1_safety} x the largest ||x^t||, ||y^t||, ||z^t|| of a non-private run of "
            f"{algo.pilot_rounds} iterations)")


def sharing_assumptions(algo) -> list[str]:
    """The assumption lines of an :class:`~privdist.algorithms.sharing.ADMMSharing` run (the report prints them)."""
    out = []
    if algo._clipping():
        budget = (f"per-release (epsilon={algo.epsilon}, delta={algo.delta}) of the classical Gaussian mechanism "
                  "(S2 Thm 3, valid for epsilon <= 1; RDP/PLD for every epsilon)" if algo.budget == "round" else
                  f"a total budget (epsilon={algo.epsilon}, delta={algo.delta}) per party over {algo.rounds} "
                  "releases, PLD-calibrated noise multiplier")
        if algo.secure:
            budget = ("under secure aggregation the sensitivity is 2 C (a party's own noise-free Q_m, hidden, "
                      "enters its next step) and the sum's Skellam noise is RDP-calibrated")
        out.append(f"admm_sharing (output, clipped): the party step clips ||y|| <= b1={algo.b1} and "
                   f"||v_m|| <= M b1 (the bounds of S2 Lemma 1's proof, Ass. 2.1), so ||Q_m(D) - Q_m(D')|| <= "
                   f"C = (1 + M rho) b1 / rho for any two blocks; {budget}. S2 Lemma 1's C (3/(d_m rho)[...]) is not "
                   "used: it assumes ||(D_m^T D_m)^-1|| = 1/d_m. Clipping changes the iterates whenever "
                   "||y^t|| > b1 or ||v_m^t|| > M b1 (counted in run_info)")
        if algo.secure:
            out.append(algo._trust_assumption())
    elif algo.mode in ("paper_precision", "output") and algo.epsilon is not None:
        out.append(f"admm_sharing ({algo.mode}): per-release (epsilon={algo.epsilon}, delta={algo.delta}) is the "
                   f"paper's claim: it rests on the sensitivity bound C of S2 Lemma 1 with the ASSUMED bound "
                   f"b1={_b1_text(algo)} on ||x||, ||y||, ||z|| (not enforced), ||(D_m^T D_m)^-1|| = 1/d_m and "
                   "unit-norm rows (S2 Ass. 2.3, not enforced) (AMB-V4, AMB-V5); no differential-privacy "
                   "guarantee")
        if algo.b1 == "pilot":
            out.append("admm_sharing: b1 is DATA-DEPENDENT - read off a non-private pilot run that uses every "
                       "party's features and the labels; the pilot is not private and the paper's claim holds at best only "
                       "for this value of b1 (AMB-V4)")
        if algo.mode == "paper_precision":
            out.append("admm_sharing (paper_precision): S2 Thm 3 treats D_m xi as a scalar N(0, sigma^2); "
                       "it is an N-vector with covariance sigma^2 Pi_m, confined to col(D_m) (AMB-V3)")
    elif algo.mode == "computed_heuristic":
        out.append("admm_sharing (computed_heuristic): noise calibrated with private iterates; "
                   "NO differential-privacy guarantee (spec §3.6)")
    elif algo.noise_std > 0 or algo.epsilon is not None:
        out.append(f"admm_sharing ({algo.mode}): noise without an a-priori sensitivity bound; "
                   "no differential-privacy guarantee is claimed")
    return out
