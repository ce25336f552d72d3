import numpy as np
import pytest

from mlmbook import rank


def with_spectrum(s, N=40, d=12, seed=0):
    """H = U diag(s) V^T with random orthonormal U (N, r), V (d, r): singular values exactly s."""
    rng = np.random.default_rng(seed)
    r = len(s)
    U, _ = np.linalg.qr(rng.normal(size=(N, r)))
    V, _ = np.linalg.qr(rng.normal(size=(d, r)))
    return U @ np.diag(s) @ V.T, V


def rotation(d, seed=0):
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return Q


def test_singular_values_recovered():
    H, _ = with_spectrum([3.0, 2.0, 1.0])
    np.testing.assert_allclose(rank.singular_values(H)[:3], [3, 2, 1], atol=1e-12)


@pytest.mark.parametrize("eps, expected", [(0.0, 5), (0.05, 4), (0.1, 3), (0.2, 2), (0.5, 1)])
def test_effective_rank_mass_known_spectrum(eps, expected):
    # squared singular values 5, 3, 1, .5, .5: cumulative mass .5, .8, .9, .95, 1
    H, _ = with_spectrum(np.sqrt([5.0, 3.0, 1.0, 0.5, 0.5]))
    assert rank.effective_rank_mass(H, eps=eps) == expected
    assert rank.effective_rank_mass(7.0 * H, eps=eps) == expected  # scale invariant


def test_effective_rank_mass_default_and_edge_cases():
    H, _ = with_spectrum(np.sqrt([5.0, 3.0, 1.0, 0.5, 0.5]))
    assert rank.DEFAULT_EPS == 0.1 and rank.effective_rank_mass(H) == 3
    assert rank.effective_rank_mass(np.zeros((4, 3))) == 0
    with pytest.raises(ValueError):
        rank.effective_rank_mass(H, eps=1.0)


def test_centering_removes_a_common_offset():
    rng = np.random.default_rng(1)
    t = rng.normal(size=200)
    H = np.outer(np.ones(200), [10.0, 0, 0]) + np.outer(t - t.mean(), [0, 1.0, 0])
    assert rank.effective_rank_mass(H, eps=0.001) == 2
    assert rank.effective_rank_mass(H, eps=0.001, center=True) == 1


def test_effective_rank_entropy():
    H, _ = with_spectrum([2.0, 2.0, 2.0, 2.0])
    assert rank.effective_rank_entropy(H) == pytest.approx(4.0, abs=1e-10)
    s = np.array([4.0, 2.0, 1.0, 1.0])
    H, _ = with_spectrum(s)
    p = s / s.sum()
    assert rank.effective_rank_entropy(H) == pytest.approx(np.exp(-(p * np.log(p)).sum()), abs=1e-10)
    H1, _ = with_spectrum([5.0])
    assert rank.effective_rank_entropy(H1) == pytest.approx(1.0, abs=1e-10)
    assert rank.effective_rank_entropy(np.zeros((3, 3))) == 0.0


def test_top_subspace_spans_the_right_vectors():
    H, V = with_spectrum([3.0, 2.0, 1.0])
    U = rank.top_subspace(H, 2)
    np.testing.assert_allclose(U @ U.T, V[:, :2] @ V[:, :2].T, atol=1e-10)


def test_principal_angles_identical_orthogonal_and_known_angle():
    Q = rotation(8)
    e = Q.T  # rows of Q^T: a rotated orthonormal basis e[0..7]
    U1 = np.column_stack([e[0], e[1]])
    np.testing.assert_allclose(rank.principal_angles(U1, U1), [1, 1], atol=1e-12)
    np.testing.assert_allclose(rank.principal_angles(U1, np.column_stack([e[2], e[3], e[4]])), [0, 0], atol=1e-12)
    theta = 0.3
    U2 = np.column_stack([e[0], np.cos(theta) * e[1] + np.sin(theta) * e[5]])
    np.testing.assert_allclose(rank.principal_angles(U1, U2), [1, np.cos(theta)], atol=1e-12)
    # the same through representation matrices: rows drawn inside each subspace
    rng = np.random.default_rng(3)
    H1, H2 = rng.normal(size=(50, 2)) @ U1.T, rng.normal(size=(60, 2)) @ U2.T
    np.testing.assert_allclose(rank.principal_angles(H1, H2, 2, 2), [1, np.cos(theta)], atol=1e-10)
    # a basis against a matrix, subspaces of different dimension
    assert rank.principal_angles(U1, H2, None, 1).shape == (1,)


def test_subspace_overlap():
    e = rotation(6, seed=2).T
    rng = np.random.default_rng(4)
    H_real = rng.normal(size=(100, 2)) @ np.column_stack([e[0], e[1]]).T
    # [MASK] rows: energy 3 inside the real subspace (along e0), 1 outside (along e3)
    H_mask = np.vstack([np.sqrt(3.0) * e[0], e[3]])
    assert rank.subspace_overlap(H_mask, H_real, k=2) == pytest.approx(0.75, abs=1e-12)
    assert rank.subspace_overlap(H_real, H_real, k=2) == pytest.approx(1.0, abs=1e-12)


def test_cumulative_energy_known_spectrum():
    H, _ = with_spectrum(np.sqrt([5.0, 3.0, 1.0, 0.5, 0.5]), N=30, d=8)
    np.testing.assert_allclose(rank.cumulative_energy(H)[:5], [0.5, 0.8, 0.9, 0.95, 1.0], atol=1e-12)
    # the eps-rank is where the curve first reaches 1 - eps
    for eps in (0.05, 0.1, 0.2, 0.5):
        assert rank.effective_rank_mass(H, eps) == int(np.argmax(rank.cumulative_energy(H) >= 1 - eps - 1e-12)) + 1


def brute_ranks(H, eps):
    """The four ranks from first principles: eigenvalues of the Gram matrix, sorted by hand."""
    out = {}
    for centred in (False, True):
        X = H - H.mean(0) if centred else H
        lam = np.sort(np.clip(np.linalg.eigvalsh(X.T @ X), 0, None))[::-1]      # sigma^2, d of them
        s = np.sqrt(lam)
        p = s[s > 1e-9 * s.max()] / s.sum()
        tag = "_centred" if centred else ""
        out["entropy" + tag] = float(np.exp(-(p * np.log(p)).sum()))
        k, acc = 0, 0.0
        while acc < (1 - eps) * lam.sum() * (1 - 1e-12):
            acc += lam[k]
            k += 1
        out["mass" + tag] = k
    return out


def test_block_ranks_equal_the_one_matrix_functions_and_brute_force():
    rng = np.random.default_rng(7)
    H = rng.normal(size=(300, 6)) @ np.diag([5, 3, 2, 1, 0.5, 0.1]) + rng.normal(size=6) * 4   # an offset
    blocks = rng.permutation(300)[:240].reshape(4, 60)
    got = rank.block_ranks(H, blocks, eps=0.1)
    assert set(got) == set(rank.RANK_KINDS)
    for b, idx in enumerate(blocks):
        want = brute_ranks(H[idx], 0.1)
        for kind in rank.RANK_KINDS:
            assert got[kind][b] == pytest.approx(want[kind], rel=1e-8), kind
        assert got["entropy"][b] == pytest.approx(rank.effective_rank_entropy(H[idx]), rel=1e-12)
        assert got["mass_centred"][b] == rank.effective_rank_mass(H[idx], 0.1, center=True)
    assert got["entropy_centred"].mean() > got["entropy"].mean()     # the offset took one big direction
    with pytest.raises(ValueError, match="same number of rows"):
        rank.block_ranks(H, [np.arange(5), np.arange(6)])


def test_rows_for_keeps_n_over_d_fixed():
    assert rank.rows_for(32, 8) == 256 and rank.rows_for(128, 8) == 1024
    # the reason: the entropy rank of isotropic noise depends on N/d, not on N
    rng = np.random.default_rng(0)
    share = [rank.effective_rank_entropy(rng.normal(size=(rank.rows_for(d, 2), d))) / d for d in (16, 64)]
    assert share[0] == pytest.approx(share[1], abs=0.015)
    fixed_n = [rank.effective_rank_entropy(rng.normal(size=(128, d))) / d for d in (16, 64)]
    assert fixed_n[0] - fixed_n[1] > 0.04           # the same N flatters the narrower matrix
    with pytest.raises(ValueError):
        rank.rows_for(0, 8)
