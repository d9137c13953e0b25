#!/usr/bin/env python3
"""Reference values for xtask/src/stats.rs, from an independent implementation (scipy).

Run once, commit the output:  python3 stats_reference.py > stats-reference.json
(needs numpy and scipy from PyPI; the Rust tests do not).
"""
import json

import numpy as np
from scipy import optimize, stats

ALPHA, POWER = 0.05, 0.80
MARGIN = np.log(0.98)  # a 2% tolerance


def pct(x):
    return 100.0 * np.expm1(x)


def paired(a, b):
    d = np.log(np.array(b) / np.array(a))
    n = len(d)
    res = stats.ttest_1samp(d, 0.0)
    se, df, m = stats.sem(d), n - 1, d.mean()
    return finish("paired", a, b, m, se, df, res.pvalue)


def welch(a, b):
    la, lb = np.log(a), np.log(b)
    res = stats.ttest_ind(lb, la, equal_var=False)
    qa, qb = la.var(ddof=1) / len(la), lb.var(ddof=1) / len(lb)
    se = np.sqrt(qa + qb)
    df = (qa + qb) ** 2 / (qa**2 / (len(la) - 1) + qb**2 / (len(lb) - 1))
    return finish("welch", a, b, lb.mean() - la.mean(), se, df, res.pvalue)


def mde_noncentrality(df):
    """The noncentrality at which the two-sided t test has power POWER (scipy's nct)."""
    c = stats.t.ppf(1 - ALPHA / 2, df)

    def short(d):
        low = stats.nct.cdf(-c, df, d)
        return stats.nct.sf(c, df, d) + (low if np.isfinite(low) else 0.0) - POWER

    return optimize.brentq(short, 0.01, 30, xtol=1e-13)


def finish(method, a, b, m, se, df, p):
    t = stats.t(df)
    q = t.ppf(1 - ALPHA / 2)
    mde = mde_noncentrality(df) * se
    return {
        "method": method,
        "baseline": list(a),
        "experiment": list(b),
        "log_delta": m,
        "se": se,
        "df": df,
        "p_value": p,
        "ci_low_pct": pct(m - q * se),
        "ci_high_pct": pct(m + q * se),
        "mde_pct": -pct(-mde),
        "p_not_worse_2pct": t.sf((m - MARGIN) / se),
        "p_slower": t.cdf(m / se),
    }


CASES = [
    ([1000.0, 1010.0, 990.0], [980.0, 1000.0, 975.0]),
    ([5021.3, 4987.2, 5100.8, 4950.1, 5033.3, 4999.9], [4900.2, 4875.9, 5010.0, 4850.7, 4950.3, 4890.0]),
    ([700.0, 720.0], [715.0, 690.0]),
    ([1500.0, 1480.0, 1530.0, 1470.0], [1600.0, 1590.0, 1620.0, 1575.0]),
    ([12000.0, 11800.0, 12100.0, 11900.0, 12050.0], [11000.0, 11500.0, 10900.0, 11800.0, 11200.0]),
    ([3000.0, 3100.0, 2950.0], [3000.5, 3099.0, 2951.0]),
]
WELCH_CASES = [
    ([1000.0, 1010.0, 990.0], [980.0, 1000.0, 975.0, 985.0]),
    ([5021.3, 4987.2, 5100.8, 4950.1, 5033.3, 4999.9], [4700.0, 4990.0]),
    ([1500.0, 1480.0, 1530.0], [1600.0, 1590.0, 1620.0, 1575.0, 1610.0]),
]
HOLM = [[0.01, 0.04, 0.03, 0.005], [0.2, 0.01], [0.5], [0.04, 0.04, 0.04]]


def holm(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, p[i] * (m - rank)))
        out[i] = running
    return out


def holm_statsmodels_free_check(p):
    # Cross-check the loop above with the textbook formula written another way.
    ps = np.sort(p)
    m = len(p)
    adj = np.minimum(1.0, np.maximum.accumulate(ps * (m - np.arange(m))))
    back = np.empty(m)
    back[np.argsort(p, kind="stable")] = adj
    return list(back)


for p in HOLM:
    assert np.allclose(holm(p), holm_statsmodels_free_check(p))

out = {
    "generator": "xtask/testdata/stats_reference.py, scipy " + __import__("scipy").__version__,
    "cases": [paired(a, b) for a, b in CASES] + [welch(a, b) for a, b in WELCH_CASES],
    "holm": [[p, holm(p)] for p in HOLM],
}
print(json.dumps(out, indent=1, default=float))
