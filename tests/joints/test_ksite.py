"""Beyond two tokens (mlmbook.joints.ksite): the k-site conditionals a model gives, and the joints
derived from them, against a fake model whose answers are known exactly."""
import numpy as np
import pytest

from mlmbook import joints as J
from mlmbook.joints.ksite import SiteConditionals, ag_k_objective, independent_k
from tests.fakes import JointOracle, PerturbedOracle, random_joint


def _conditionals(oracle, sites=(0, 1, 3), ids=(0, 1, 2, 1), cands=None):
    cands = cands or [np.arange(oracle.Vw)] * len(sites)
    return J.site_conditionals_batch(oracle, [(np.array(ids), list(sites))], [cands])[0]


def test_site_conditionals_are_the_oracles_and_every_joint_is_exact_where_it_should_be():
    logp = random_joint(4, 3, seed=1)
    sc = _conditionals(JointOracle(logp))
    P = np.exp(logp[:, :, 2, :])
    P /= P.sum()                                                  # p(x0, x1, x3 | x2 = 2)
    ref = SiteConditionals.from_joint(P)
    for got, want in zip(sc.log_cond + sc.log_marg + sc.log_chain, ref.log_cond + ref.log_marg + ref.log_chain):
        assert got.shape == want.shape and np.abs(got - want).max() < 1e-12
    # compatible conditionals: AG-k and the chain rule give the joint back; the product of marginals does not
    joint, updates, converged = J.ag_k(sc)
    assert converged and np.abs(joint - P).max() < 1e-9 and ag_k_objective(sc, joint) < 1e-12
    assert np.abs(J.chain_k(sc) - P).max() < 1e-12
    product = np.einsum("a,b,c->abc", P.sum((1, 2)), P.sum((0, 2)), P.sum((0, 1)))
    assert np.abs(independent_k(sc) - product).max() < 1e-12
    assert J.kl_joint(P, independent_k(sc)) > 1e-3


def test_ag_k_on_incompatible_conditionals():
    logp = random_joint(4, 3, seed=2)
    sc = _conditionals(PerturbedOracle(logp, scale=0.6))
    joint, updates, converged = J.ag_k(sc, tol=1e-11)
    assert converged and abs(joint.sum() - 1) < 1e-12 and np.all(joint > 0)
    best = ag_k_objective(sc, joint)
    # AG-k is the joint closest to the conditionals: no other joint (nor a nudge of it) does better
    for other in (J.chain_k(sc), independent_k(sc)):
        assert ag_k_objective(sc, other) > best
    rng = np.random.default_rng(0)
    for _ in range(5):
        nudged = joint * np.exp(0.01 * rng.standard_normal(joint.shape))
        assert ag_k_objective(sc, nudged / nudged.sum()) >= best - 1e-12
    # it is a fixed point of the update
    num = sum(np.exp(lc) for lc in sc.log_cond)
    den = sum(1 / joint.sum(axis=i, keepdims=True) for i in range(3))
    step = num / den
    assert np.abs(np.log(step / step.sum()) - np.log(joint)).max() < 1e-9


def test_two_sites_is_the_pair_ag():
    logp = random_joint(3, 4, seed=3)
    oracle = PerturbedOracle(logp, scale=0.5)
    ids = np.array([1, 2, 0])
    sc = _conditionals(oracle, sites=(0, 2), ids=ids)
    pc = J.pair_conditionals(oracle, ids, 0, 2, [np.arange(4), np.arange(4)])
    assert np.abs(sc.log_cond[0] - pc.log_a_given_b).max() < 1e-12
    assert np.abs(sc.log_cond[1] - pc.log_b_given_a).max() < 1e-12
    assert np.abs(np.log(J.ag_k(sc, tol=1e-12)[0]) - np.log(J.ag(pc).joint)).max() < 1e-8


def test_candidate_grids_and_query_count():
    logp = random_joint(4, 5, seed=4)
    oracle = JointOracle(logp)
    cands = [np.array([4, 0]), np.array([1, 3, 2]), np.array([0, 4])]
    sc = _conditionals(oracle, cands=cands)
    assert sc.shape == (2, 3, 2)
    full = np.exp(logp[:, :, 2, :])
    P = full[np.ix_(*cands)] / full[np.ix_(*cands)].sum()
    # the conditionals given filled sites are the restricted joint's: AG-k recovers it exactly ...
    assert np.abs(J.ag_k(sc)[0] - P).max() < 1e-9
    # ... while the chain's first factor marginalises the later sites over the whole vocabulary
    first = full.sum((1, 2))[cands[0]]
    assert np.abs(np.exp(sc.log_chain[0]) - first / first.sum()).max() < 1e-12
    with pytest.raises(ValueError, match="distinct"):
        J.site_conditionals_batch(oracle, [(np.zeros(4, int), [1, 1])], [[np.arange(5)] * 2])
