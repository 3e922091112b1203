"""Fast checks of the accountants' speed-ups: the same numbers as before, faster; privacy never weakened."""
import numpy as np
import pytest
import dp_accounting
from dp_accounting import NeighboringRelation, PoissonSampledDpEvent, GaussianDpEvent
from dp_accounting.rdp import RdpAccountant
from dpnotebooks.privacy.accounting import (_gdp_epsilon_of_sigma, calibrate_gaussian, calibrate_tree, epsilon_of, gaussian_event,
                                 tree_event)
from dpnotebooks.privacy.ledger import (Ledger, Release, calibrate_ledger, addremove_poisson_rdp, replace_one_poisson_rdp, _scaled,
                                POISSON_RDP_ORDERS)

@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_fast_gaussian_epsilon_is_dp_accountings_bit_for_bit(delta):
    for s in np.geomspace(0.02, 500, 60):
        assert _gdp_epsilon_of_sigma(float(s), delta) == dp_accounting.get_epsilon_gaussian(float(s), delta)

def test_vectorized_poisson_rdp_matches_dp_accounting_and_the_loop():
    orders = [2, 3, 5, 17, 128, 1024]
    for q, z in ((0.001, 0.8), (0.01, 1.1), (0.3, 5.0), (1.0, 2.0)):
        ref = RdpAccountant(orders, NeighboringRelation.ADD_OR_REMOVE_ONE).compose(PoissonSampledDpEvent(q, GaussianDpEvent(z))).rdp
        np.testing.assert_allclose(addremove_poisson_rdp(q, z, orders), ref, rtol=1e-9, atol=1e-12)
    a = np.asarray(POISSON_RDP_ORDERS)
    assert replace_one_poisson_rdp(0.02, 1.3, a).shape == a.shape

@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_cached_calibration_equals_a_fresh_one_and_meets_the_target(accountant):
    for eps, delta, s, k in ((1.0, 1e-5, 1.0, 1), (0.5, 1e-6, 0.3, 40)):
        sig = calibrate_gaussian(eps, delta, s, k, accountant)
        assert sig == calibrate_gaussian(eps, delta, s, k, accountant) == calibrate_gaussian.__wrapped__(eps, delta, s, k, accountant)
        assert epsilon_of(gaussian_event(sig, s, k), delta, accountant) <= eps
    st = calibrate_tree(1.0, 1e-5, 0.5, 1000, accountant)
    assert st == calibrate_tree.__wrapped__(1.0, 1e-5, 0.5, 1000, accountant)
    assert epsilon_of(tree_event(st, 0.5, 1000), 1e-5, accountant) <= 1.0

def test_pld_never_needs_more_noise_than_rdp_and_both_fit():
    units = [Ledger((Release("gaussian", 1.0, 1.0, 100),)),
             Ledger((Release("poisson-gaussian", 1.0, 1.0, 1250, sampling_rate=0.016),)),
             Ledger((Release("poisson-gaussian", 0.5, 1.0, 30), Release("poisson-gaussian", 1.0, 1.0, 600, sampling_rate=0.03)))]
    for unit in units:
        c_pld, c_rdp = calibrate_ledger(unit, 1.0, 1e-5, "pld"), calibrate_ledger(unit, 1.0, 1e-5, "rdp")
        assert c_pld <= c_rdp
        assert _scaled(unit, noise=c_pld).spent(1e-5, "pld") <= 1.0 and _scaled(unit, noise=c_rdp).spent(1e-5, "rdp") <= 1.0
        assert calibrate_ledger.__wrapped__(unit, 1.0, 1e-5, "pld") == c_pld                  # the cache returns what a search finds
