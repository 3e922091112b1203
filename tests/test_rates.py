"""The rate table (`dpnotebooks.planning.rates`): implemented rows are their recipes' boundaries, prior-work rows are the notes' formulas."""
import math
import pytest
from dpnotebooks.planning.catalog import ALGORITHMS
from dpnotebooks.engine.registry import InsufficientDataError
from dpnotebooks.planning.rates import DECISIONS, rate_table, rate_markdown, recipe_samples, recommend, required_n_grid

_KW = {"klt-multi-pass": dict(max_steps=None), "abggmu-glm": dict(rank=3)}

@pytest.mark.parametrize("algorithm", ["klt-single-pass", "ztc", "ztc-naive", "klt-multi-pass", "abggmu-spider",
                                       "abggmu-tree-spider", "abggmu-convex", "abggmu-glm"])
@pytest.mark.parametrize("d,epsilon,beta", [(3, 0.5, 0.2), (40, 2.0, 0.08)])
def test_recipe_samples_is_the_recipe_boundary(algorithm, d, epsilon, beta):
    "The recipe accepts the target at n = recipe_samples and refuses it one sample below."
    kw = _KW.get(algorithm, {})
    n = recipe_samples(algorithm, d, epsilon, 1e-6, 0.1, beta, **kw)
    assert math.isfinite(n) and n == int(n)
    rec = ALGORITHMS[algorithm].recipe
    assert rec(int(n), d, epsilon, 1e-6, 0.1, beta, **kw).n_required == n
    with pytest.raises(InsufficientDataError):
        rec(int(n) - 1, d, epsilon, 1e-6, 0.1, beta, **kw)

def test_lt_sosp_row_is_the_worst_case_count():
    "lt-sosp runs below its worst case with a warning: at the table's n it plans without one, one below it warns."
    n = int(recipe_samples("lt-sosp", 4, 1.0, 1e-6, beta=0.3, alpha=None, M=1.0, rho=1.0))
    rec = ALGORITHMS["lt-sosp"].recipe
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rec(n, 4, 1.0, 1e-6, 0.3, M=1.0, rho=1.0).n_required == n
    with pytest.warns(UserWarning, match="worst-case"):
        rec(n - 1, 4, 1.0, 1e-6, 0.3, M=1.0, rho=1.0)

def test_table_monotone_in_the_target_and_the_budget():
    "A looser target or a larger epsilon never needs more samples, in every row."
    base = rate_table(d=20, epsilon=1.0, beta=0.1)
    for other in (rate_table(d=20, epsilon=1.0, beta=0.2), rate_table(d=20, epsilon=3.0, beta=0.1)):
        for a, b in zip(base, other):
            assert b["samples"] <= a["samples"], (a["method"], a["samples"], b["samples"])

def test_every_row_cites_a_note_section_and_registered_algorithms():
    table = rate_table(d=10)
    assert len(table) >= 25
    for r in table:
        assert r["source"].split(",")[0] in {"klt-nsnc.md §6", "ztc-zeroth-order.md §7", "abggmu-stationary.md §7", "lt-sosp.md §6"}
        assert r["algorithm"] is None or r["algorithm"] in ALGORITHMS
    assert {r.algorithm for r in DECISIONS} <= {r["algorithm"] for r in table}
    md = rate_markdown(table)
    assert md.count("\n") == len(table) + 1 and "`klt-single-pass`" in md

@pytest.mark.parametrize("kw,msg", [(dict(d=0), "`d` must be a positive integer"), (dict(epsilon=0.0), "`epsilon` must be"),
                                    (dict(beta=math.nan), "`beta` must be"), (dict(delta=1.0), "`delta` must be in (0, 1)")])
def test_bad_input_is_named(kw, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        rate_table(**kw)

def test_grid_and_recommend():
    g = required_n_grid("epsilon", values=[0.5, 2.0], d=10)
    assert g["values"] == [0.5, 2.0] and all(len(r["samples"]) == 2 for r in g["rows"])
    with pytest.raises(ValueError, match="`over` must be"): required_n_grid("n")
    assert [r.algorithm for r in recommend("smooth", "first", "single")] == ["abggmu-tree-spider"]
    with pytest.raises(ValueError, match="`passes` must be one of"): recommend("smooth", "first", "twice")
