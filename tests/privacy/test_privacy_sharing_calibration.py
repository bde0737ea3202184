"""S2 calibration (spec §3.6, §10 test vectors)."""

import pytest

from privdist.errors import ValidationError
from privdist.privacy import advanced_composition
from privdist.privacy.sharing_calibration import (computed_sensitivity, sharing_noise_multiplier,
                                                  sharing_sensitivity, sharing_sigma)


def test_spec_vectors():
    C = sharing_sensitivity(66, 1.0, 1e-3, 2.0, 10.0, 2)
    assert C == pytest.approx(1.363727, abs=1e-6)
    assert sharing_sigma(1.0, 0.01, C) == pytest.approx(4.237798, abs=1e-5)
    assert advanced_composition(1.0, 100, 0.01) == pytest.approx(202.1767, abs=1e-4)
    assert sharing_noise_multiplier(2.0, 0.01) == pytest.approx(sharing_sigma(2.0, 0.01, 1.0))
    assert computed_sensitivity(10, 1.0, 0.5, 2.0, 3.0) == pytest.approx(0.3 * (1.0 + 2.0 + 3.0))


def test_bad_values():
    with pytest.raises(ValidationError, match="rho"):
        sharing_sensitivity(66, 0.0, 1e-3, 2.0, 10.0, 2)
    with pytest.raises(ValidationError, match="epsilon"):
        sharing_sigma(0.0, 0.01, 1.0)
    with pytest.raises(ValidationError, match="b1"):
        sharing_sensitivity(66, 1.0, 1e-3, 2.0, -1.0, 2)


def test_clipped_sensitivity_value_and_checks():
    from privdist.privacy.sharing_calibration import clipped_sensitivity

    assert clipped_sensitivity(1.0, 10.0, 2) == pytest.approx(30.0)  # (1 + M rho) b1 / rho
    assert clipped_sensitivity(0.5, 1.0, 3) == pytest.approx(5.0)
    # about d_m / 3 times S2 Lemma 1's C, whose 1/d_m rests on ||(D^T D)^-1|| = 1/d_m
    assert clipped_sensitivity(1.0, 10.0, 2) / sharing_sensitivity(66, 1.0, 0.0, 2.0, 10.0, 2) == pytest.approx(22.0)
    with pytest.raises(ValidationError, match="rho"):
        clipped_sensitivity(0.0, 1.0, 2)
    with pytest.raises(ValidationError, match="b1"):
        clipped_sensitivity(1.0, -1.0, 2)
