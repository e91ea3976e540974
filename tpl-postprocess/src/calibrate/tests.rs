use super::*;
use tpl_core::test_util::uniforms;

/// The chain of an every-step stream: the previous estimate's q and u = q·P.
fn one_step(q: &[f64], u: &[f64], index: usize) -> Chain {
    let mut chain = Chain::default();
    chain.anchor(q, u, index);
    chain
}

#[test]
fn grid_starts_at_the_member_that_holds_and_is_sorted_out_by_scores() {
    let c = Calibrator::new();
    assert_eq!(c.choice(), Calibration::HOLD);
    let d = c.dispersions.len();
    assert_eq!(MOVE_WEIGHTS[HOLD_INDEX / d], Calibration::HOLD.move_weight);
    assert_eq!(c.dispersions[HOLD_INDEX % d], Calibration::HOLD.dispersion);
    assert_eq!(c.dispersions[0], 1.0);
    assert!(c.dispersions.contains(&4096.0) && c.dispersions.contains(&(1.0 / 64.0)));
}

/// A calibrator that scored `steps` steps of a population of 100 releasing `release` at
/// every step, with the move `(q, u)` of [`one_step`] and the likelihood weight `weight`.
fn scored_constant(release: &[f64], (q, u): ([f64; 2], [f64; 2]), steps: usize, weight: f64) -> Calibrator {
    let mut c = Calibrator::new();
    for t in 0..steps {
        c.score(release, &one_step(&q, &u, t), 100.0, weight);
    }
    c
}

#[test]
fn releases_far_from_the_model_choose_a_weak_prior() {
    // The model predicts everyone in cell 1; releases keep saying cell 2.
    let c = scored_constant(&[0.0, 100.0], ([1.0, 0.0], [1.0, 0.0]), 50, 1.0);
    // Cell 1 is off by 100 on a prediction of 100: a variance φ·100 ≈ 100² fits.
    assert!(c.choice().dispersion >= 64.0, "{:?}", c.choice());
}

#[test]
fn releases_at_the_model_keep_a_strong_prior() {
    let mut c = Calibrator::new();
    let (q, u) = ([0.5, 0.5], [0.5, 0.5]);
    for t in 0..200 {
        let noise = if t % 2 == 0 { 1.0 } else { -1.0 };
        c.score(&[50.0 + noise, 50.0 - noise], &one_step(&q, &u, t), 100.0, 1.0);
    }
    assert!(c.choice().dispersion <= 1.0 / 16.0, "{:?}", c.choice());
}

#[test]
fn the_move_weight_follows_the_releases() {
    // P swaps the two cells; the releases say nobody moved.
    let c = scored_constant(&[80.0, 20.0], ([0.8, 0.2], [0.2, 0.8]), 100, 2.0);
    assert_eq!(c.choice().move_weight, 0.0);
}

/// The pass moves its normalised estimate by the matrix without normalising it again;
/// against the former way (normalised twice, then moved), every step of streams of
/// several sizes chooses the same member and the priors agree within 1e-12 relative.
#[test]
fn moving_the_normalised_estimate_keeps_every_choice() {
    let mut next = uniforms(0x9e37_79b9_7f4a_7c15);
    for (case, (n, horizon, total)) in
        [(5, 300, 500.0), (64, 200, 6400.0), (300, 120, 30000.0), (1000, 60, 1e5)].into_iter().enumerate()
    {
        let rows: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if case % 2 == 0 {
                            0.1 + next()
                        } else {
                            f64::from(u8::from(i == j || next() < 0.01))
                        }
                    })
                    .collect()
            })
            .collect();
        let matrix = tpl_core::TransitionMatrix::normalized(rows).unwrap().smoothed(0.01).unwrap();
        let mover = Mover::new(&matrix);
        let share: Vec<f64> = (0..n).map(|_| next() + 0.1).collect();
        let sum: f64 = share.iter().sum();
        let (mut pass, mut former) = (Pass::new(), Pass::new());
        for t in 0..horizon {
            let a = [0.05, 0.5, 5.0][t % 3];
            let r: Vec<f64> =
                share.iter().map(|s| (total * s / sum + (next() - 0.5) * 6.0 / a).round().max(0.0)).collect();
            let (got, want) = (pass.predict(&r, a, total), former.predict(&r, a, total));
            match (&got, &want) {
                (Some(g), Some(w)) => {
                    assert_eq!(g.calibration, w.calibration, "case {case}, step {t}");
                    for (x, y) in g.prior.iter().zip(&w.prior) {
                        assert!((x - y).abs() <= 1e-12 * y, "case {case}, step {t}: {x} vs {y}");
                    }
                }
                (None, None) => {}
                _ => panic!("case {case}, step {t}: one pass predicts, the other not"),
            }
            let prior = want.map_or_else(|| vec![1.0 / n as f64; n], |w| w.prior);
            let estimate = crate::map::solve(&r, &prior, total, a).x;
            pass.observe(&estimate, Some(&mover));
            former.observe_former(&estimate, Some(&mover));
        }
    }
}

#[test]
fn binomial_weights_are_the_binomial_distribution() {
    let mut w = Vec::new();
    for k in 1..=40usize {
        for &gamma in &MOVE_WEIGHTS {
            binomial_weights(k, gamma, &mut w);
            assert_eq!(w.len(), k + 1);
            let sum: f64 = w.iter().sum();
            assert!((sum - 1.0).abs() < 1e-12, "k = {k}, γ = {gamma}: Σ = {sum}");
            let mut choose = 1.0f64;
            for (j, &got) in w.iter().enumerate() {
                if j > 0 {
                    choose = choose * (k - j + 1) as f64 / j as f64;
                }
                let want = choose * gamma.powi(j as i32) * (1.0 - gamma).powi((k - j) as i32);
                assert!((got - want).abs() <= 1e-12 * want.max(1e-300), "k = {k}, γ = {gamma}, j = {j}");
            }
        }
    }
    binomial_weights(5, 0.0, &mut w);
    assert_eq!(w, [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    binomial_weights(5, 1.0, &mut w);
    assert_eq!(w, [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
    // A long gap: no underflow to 0 where the share is not negligible (C(2000, 1000)/2²⁰⁰⁰,
    // exactly 0.017839011145854…; the logarithms of 1000 ratios carry ~1e-12 of rounding).
    binomial_weights(2000, 0.5, &mut w);
    let want = 0.017_839_011_145_854_32;
    assert!((w[1000] - want).abs() < 1e-11 * want, "{}", w[1000]);
}

/// The release after two steps without information is scored by every member's own
/// three-step prediction from the last estimate that used a release — not by one step
/// from the estimates the chosen member made in between.
#[test]
fn a_release_after_a_gap_is_scored_by_each_members_k_step_prediction() {
    let matrix =
        tpl_core::TransitionMatrix::new(vec![vec![0.7, 0.2, 0.1], vec![0.1, 0.6, 0.3], vec![0.3, 0.3, 0.4]])
            .unwrap();
    let mover = Mover::new(&matrix);
    let total = 100.0;
    let mut pass = Pass::new();
    // Step 1 has information; steps 2 and 3 none (a = 0); step 4 is scored.
    assert!(pass.predict(&[50.0, 30.0, 20.0], 0.5, total).is_none());
    let anchor = [48.0, 33.0, 19.0];
    pass.observe(&anchor, Some(&mover));
    for _ in 0..2 {
        let prior = pass.predict(&[0.0; 3], 0.0, total).unwrap().prior;
        let estimate: Vec<f64> = prior.iter().map(|p| total * p).collect();
        pass.observe(&estimate, Some(&mover));
    }
    let r = [41.0, 30.0, 29.0];
    let a = 0.5;
    pass.predict(&r, a, total).unwrap();
    // By hand: q·P^j for j = 0..=3, and each member's Binomial(3, γ) mixture.
    let mut powers = vec![anchor.iter().map(|v| v / total).collect::<Vec<f64>>()];
    for j in 0..3 {
        let next = mover.step(&powers[j]);
        powers.push(next);
    }
    let noise = 2.0 / (a * a);
    let grid = dispersions();
    for (g, &gamma) in MOVE_WEIGHTS.iter().enumerate() {
        let choose = [1.0, 3.0, 3.0, 1.0];
        let m: Vec<f64> = (0..3)
            .map(|i| {
                (0..=3)
                    .map(|j| {
                        choose[j] * gamma.powi(j as i32) * (1.0 - gamma).powi(3 - j as i32) * powers[j][i]
                    })
                    .sum::<f64>()
                    * total
            })
            .collect();
        for (k, &phi) in grid.iter().enumerate() {
            let want: f64 = -0.5
                * (0..3)
                    .map(|i| {
                        let v = (phi * m[i] + noise).max(MIN_VARIANCE);
                        v.ln() + (r[i] - m[i]).powi(2) / v
                    })
                    .sum::<f64>();
            let got = pass.calibrator.scores[g * DISPERSIONS + k];
            assert!(
                (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                "γ = {gamma}, φ = {phi}: {got} vs {want}"
            );
        }
    }
    assert_eq!(pass.calibrator.scored, 1);
}

#[test]
fn a_gap_longer_than_the_longest_chain_restarts_it() {
    let matrix = tpl_core::TransitionMatrix::new(vec![vec![0.9, 0.1], vec![0.2, 0.8]]).unwrap();
    let mover = Mover::new(&matrix);
    let mut pass = Pass::new();
    assert!(pass.predict(&[5.0, 5.0], 1.0, 10.0).is_none());
    pass.observe(&[5.0, 5.0], Some(&mover));
    for _ in 0..3 * LONGEST_CHAIN {
        let prior = pass.predict(&[0.0, 0.0], 0.0, 10.0).unwrap().prior;
        let estimate: Vec<f64> = prior.iter().map(|p| 10.0 * p).collect();
        pass.observe(&estimate, Some(&mover));
        assert!(pass.chain.steps() <= LONGEST_CHAIN, "{}", pass.chain.steps());
    }
}

#[test]
fn fast_logarithm_matches_the_library_one() {
    let mut v = f64::MIN_POSITIVE;
    while v < 1e300 {
        for x in [v, v * 1.234_567, v * std::f64::consts::SQRT_2, v * 1.999_999] {
            let (got, want) = (ln_positive(x), x.ln());
            assert!((got - want).abs() <= 1e-9, "ln {x}: {got} vs {want}");
        }
        v *= 1.7;
    }
    assert_eq!(ln_positive(1.0), 0.0);
}

/// Every vector width adds in the same order: the dispatched sums equal the portable
/// ones to the bit, whatever the processor.
#[test]
fn member_terms_do_not_depend_on_the_vector_width() {
    let mut next = uniforms(0x2545_f491_4f6c_dd1d);
    let grid = dispersions();
    for len in [0, 1, 7, 8, 9, 16, 63, 64] {
        let m: Vec<f64> = (0..len).map(|_| 1e5 * next() * next()).collect();
        let e2: Vec<f64> = (0..len).map(|_| 1e4 * next() * next()).collect();
        let (mut fast, mut portable) = ([0.0; DISPERSIONS], [0.0; DISPERSIONS]);
        member_terms(&m, &e2, &grid, 8.0, &mut fast);
        lane_sums(&m, &e2, &grid, 8.0, &mut portable);
        assert_eq!(fast.map(f64::to_bits), portable.map(f64::to_bits), "{len} cells");
        // And the sums are the terms' sums.
        for (k, &phi) in grid.iter().enumerate() {
            let direct: f64 = m
                .iter()
                .zip(&e2)
                .map(|(&mi, &ei)| {
                    let v = (phi * mi + 8.0).max(MIN_VARIANCE);
                    v.ln() + ei / v
                })
                .sum();
            assert!(
                (fast[k] - direct).abs() <= 1e-9 * len as f64 + 1e-12 * direct.abs(),
                "{len} cells, φ = {phi}"
            );
        }
    }
}

#[test]
fn one_division_gives_the_logarithm_and_the_ratio() {
    assert_eq!(LARGEST_ONE_DIVISION, 2f64.powi(1020));
    let mut v = MIN_VARIANCE;
    while v < LARGEST_ONE_DIVISION {
        for x in [v, v * 1.234_567, v * std::f64::consts::SQRT_2, v * 1.999_999] {
            if x >= LARGEST_ONE_DIVISION {
                continue;
            }
            for e2 in [0.0, 1.0, x, (1e10 * x).min(f64::MAX), 1e300] {
                let (k, m) = exponent_split(x);
                let got = k as f64 * std::f64::consts::LN_2 + mantissa_ln_and_ratio(x, m, e2);
                let (ln, ratio) = (ln_positive(x), e2 / x);
                assert!((got - ln - ratio).abs() <= 1e-15 * (ln.abs() + ratio) + 1e-15, "{x} {e2}: {got}");
            }
        }
        v *= 1.7;
    }
}
