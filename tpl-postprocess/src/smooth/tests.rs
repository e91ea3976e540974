use super::*;
use tpl_core::TransitionMatrix;
use tpl_core::test_util::correlation;

/// The former computation of `smooth`, kept as the reference: both passes store every
/// step's prior (each estimate normalised twice before it is moved), then every step is
/// pooled (logarithms and exponentials of the library) with the strengths split by
/// distance ([docs/map.md](tpl_core::guide::map) §9).
fn reference(releases: &[Vec<f64>], budgets: &[f64], config: FilterConfig<'_>) -> Vec<Vec<f64>> {
    let rows: Vec<&[f64]> = releases.iter().map(Vec::as_slice).collect();
    let (horizon, cells, total) = (rows.len(), rows[0].len(), config.total);
    let n_total = total as f64;
    let weights: Vec<f64> = budgets.iter().map(|&e| e / config.sensitivity).collect();
    let forward = config.correlation.forward().map(Mover::new);
    let Some(forward) = forward else { unreachable!("the streams below have a matrix") };
    let backward = match config.correlation.backward() {
        Some(b) => Mover::new(b),
        None => {
            Mover::reversed(Mover::new(config.correlation.forward().unwrap()), &reference_occupancy(&rows))
        }
    };
    let backward_initial =
        if config.prior == PriorPolicy::Uniform { PriorPolicy::Uniform } else { PriorPolicy::Frequency };
    let pass = |order: Vec<usize>, mover: &Mover<'_>, initial: &PriorPolicy| {
        let (mut priors, mut strengths) = (vec![Vec::new(); horizon], vec![0.0; horizon]);
        let mut pass = Pass::new();
        for (k, &t) in order.iter().enumerate() {
            let r = rows[t];
            let (prior, dispersion) = match pass.predict(r, weights[t], n_total) {
                Some(p) => (p.prior, p.calibration.dispersion),
                None if k == 0 => (initial.initial_unchecked(r).0, 1.0),
                None => (vec![1.0 / cells as f64; cells], 1.0),
            };
            let estimate = if total == 0 {
                vec![0.0; cells]
            } else {
                map::solve(r, &prior, n_total, tempered_weight(weights[t], dispersion)).x
            };
            pass.observe_former(&estimate, Some(mover));
            priors[t] = prior;
            strengths[t] = 1.0 / dispersion;
        }
        (priors, strengths)
    };
    let (fp, fs) = pass((0..horizon).collect(), &forward, &config.prior);
    let (bp, bs) = pass((0..horizon).rev().collect(), &backward, &backward_initial);
    (0..horizon)
        .map(|t| {
            if total == 0 {
                return vec![0.0; cells];
            }
            let strength = fs[t] + bs[t];
            // The split by distance: k^f steps since the last release with information
            // before t (t + 1 without one), k^b until the first after (T − t without one).
            let kf = (0..t).rev().find(|&s| weights[s] > 0.0).map_or(t + 1, |s| t - s) as f64;
            let kb = (t + 1..horizon).find(|&s| weights[s] > 0.0).map_or(horizon - t, |s| s - t) as f64;
            let share = kb / (kf + kb);
            let (wf, wb) = (strength * share, strength * (1.0 - share));
            let logs: Vec<f64> = (0..cells)
                .map(|i| {
                    if fp[t][i] <= 0.0 || bp[t][i] <= 0.0 {
                        f64::NEG_INFINITY
                    } else {
                        (wf / strength) * fp[t][i].ln() + (wb / strength) * bp[t][i].ln()
                    }
                })
                .collect();
            let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let pooled: Vec<f64> = if top == f64::NEG_INFINITY {
                (0..cells).map(|i| (wf * fp[t][i] + wb * bp[t][i]) / strength).collect()
            } else {
                let e: Vec<f64> = logs.iter().map(|&l| (l - top).exp()).collect();
                let sum: f64 = e.iter().sum();
                e.iter().map(|v| v / sum).collect()
            };
            map::solve(rows[t], &pooled, n_total, tempered_weight(weights[t], 1.0 / strength)).x
        })
        .collect()
}

/// The former occupancy: row by row, each release's positive part scaled and summed.
fn reference_occupancy(releases: &[&[f64]]) -> Vec<f64> {
    let n = releases[0].len();
    let mut pi = vec![0.0; n];
    for r in releases {
        let largest = r.iter().fold(0.0f64, |m, &v| m.max(v));
        if largest <= 0.0 {
            continue;
        }
        let scaled: Vec<f64> = r.iter().map(|&v| v.max(0.0) / largest).collect();
        let sum: f64 = scaled.iter().sum();
        pi.iter_mut().zip(&scaled).for_each(|(p, v)| *p += v / sum);
    }
    let sum: f64 = pi.iter().sum();
    if sum > 0.0 {
        pi.iter_mut().for_each(|p| *p /= sum);
        pi
    } else {
        vec![1.0 / n as f64; n]
    }
}

/// The occupancy summed four releases side by side has the bits of the one summed row
/// by row, for any number of releases (zero rows and all-zero streams included).
#[test]
fn occupancy_is_the_row_by_row_sum() {
    let mut numbers = Numbers(0x2545_f491_4f6c_dd1d);
    for (horizon, cells) in [(1, 1), (3, 7), (4, 9), (5, 1000), (13, 33), (64, 17)] {
        let releases: Vec<Vec<f64>> = (0..horizon)
            .map(|t| {
                (0..cells)
                    .map(|_| if t % 3 == 1 { 0.0 } else { (200.0 * numbers.next() - 20.0).round() })
                    .collect()
            })
            .collect();
        let rows: Vec<&[f64]> = releases.iter().map(Vec::as_slice).collect();
        let (got, want) = (occupancy(&rows), reference_occupancy(&rows));
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{horizon} × {cells}"
        );
        let zeros = vec![vec![0.0; cells]; horizon];
        let rows: Vec<&[f64]> = zeros.iter().map(Vec::as_slice).collect();
        assert_eq!(occupancy(&rows), reference_occupancy(&rows));
    }
}

/// The pooled prior from logarithms and exponentials of the library, as [`pool`] formed
/// it before: the reference of its faster forms.
fn reference_pool(priors: &[WeightedPrior<'_>], n: usize) -> Option<Vec<f64>> {
    let strength: f64 = priors.iter().map(|p| p.strength).sum();
    let logs: Vec<f64> = (0..n)
        .map(|i| {
            let mut s = 0.0;
            for p in priors.iter().filter(|p| p.strength > 0.0) {
                if p.prior[i] <= 0.0 {
                    return f64::NEG_INFINITY;
                }
                s += (p.strength / strength) * p.prior[i].ln();
            }
            s
        })
        .collect();
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if top == f64::NEG_INFINITY {
        return None;
    }
    let e: Vec<f64> = logs.iter().map(|&l| (l - top).exp()).collect();
    let sum: f64 = e.iter().sum();
    Some(e.iter().map(|v| v / sum).collect())
}

/// Two priors of equal strength (the geometric means, and their log-space fallback when
/// the means are tiny), of unequal strengths and three priors: the pool is the one from
/// the library's logarithms within 1e-13 relative, zeros where a prior is 0, `None`
/// where the priors share no cell.
#[test]
fn pooled_prior_matches_the_library_logarithms() {
    let mut numbers = Numbers(0x0123_4567_89ab_cdef);
    for n in [1, 2, 7, 8, 9, 100, 1000] {
        for case in 0..6 {
            let mut prior = |zeros: bool, tiny: bool| -> Vec<f64> {
                let w: Vec<f64> = (0..n)
                    .map(|_| {
                        let v = numbers.next();
                        if zeros && v < 0.2 {
                            0.0
                        } else if tiny {
                            v * 1e-290
                        } else {
                            v
                        }
                    })
                    .collect();
                let s: f64 = w.iter().sum();
                if s > 0.0 { w.iter().map(|v| v / s).collect() } else { vec![1.0 / n as f64; n] }
            };
            let (a, b, c) = (prior(case % 2 == 1, false), prior(case == 3, false), prior(false, false));
            // Case 4: two priors that share one cell, where both are 1e-250 (its mean is
            // below 1e-200: the log-space fallback).
            if case == 4 && n > 2 {
                let (mut x, mut y) = (vec![0.0; n], vec![0.0; n]);
                (x[0], x[1], y[1], y[2]) = (1.0 - 1e-250, 1e-250, 1e-250, 1.0 - 1e-250);
                let pair =
                    [WeightedPrior { prior: &x, strength: 3.0 }, WeightedPrior { prior: &y, strength: 3.0 }];
                check(&pair, n);
                let (pooled, _) = pool(&pair, n);
                assert_eq!(pooled.map(|p| p[1]), Some(1.0));
            }
            let strengths: [(f64, f64, f64); 3] = [(64.0, 64.0, 0.0), (2.0, 0.25, 0.0), (1.0, 4.0, 0.5)];
            for (sa, sb, sc) in strengths {
                let priors = [
                    WeightedPrior { prior: &a, strength: sa },
                    WeightedPrior { prior: &b, strength: sb },
                    WeightedPrior { prior: &c, strength: sc },
                ];
                check(&priors, n);
            }
        }
    }
    // Disjoint priors: nothing shared.
    let (a, b) = ([1.0, 0.0], [0.0, 1.0]);
    let pair = [WeightedPrior { prior: &a, strength: 1.0 }, WeightedPrior { prior: &b, strength: 1.0 }];
    assert_eq!(pool(&pair, 2), (None, 2.0));
}

fn check(priors: &[WeightedPrior<'_>], n: usize) {
    let (got, strength) = pool(priors, n);
    assert_eq!(strength, priors.iter().map(|p| p.strength).sum::<f64>());
    let want = reference_pool(priors, n);
    match (got, want) {
        (Some(g), Some(w)) => {
            for (i, (x, y)) in g.iter().zip(&w).enumerate() {
                assert!((x - y).abs() <= 1e-13 * y, "n = {n}, cell {i}: {x} vs {y}");
            }
        }
        (g, w) => assert_eq!(g, w, "n = {n}"),
    }
}

/// A fixed pseudo-random stream: uniform numbers in [0, 1).
struct Numbers(u64);

impl Numbers {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Streams of several shapes (sparse smoothed and dense matrices, budgets with zeros, a
/// backward matrix or the reversed forward one, every prior policy, N = 0, one step):
/// `smooth` gives the estimates of the former computation within 1e-9 relative.
#[test]
fn smoothing_matches_the_former_computation() {
    let mut numbers = Numbers(0x9e37_79b9_7f4a_7c15);
    let shapes =
        [(1, 5, 50), (2, 3, 20), (7, 1, 10), (40, 8, 400), (90, 70, 7000), (33, 130, 0), (61, 16, 1)];
    for (case, &(horizon, cells, total)) in shapes.iter().enumerate() {
        let mut rows = || -> TransitionMatrix {
            let rows: Vec<Vec<f64>> = (0..cells)
                .map(|i| {
                    (0..cells)
                        .map(|j| match case % 3 {
                            0 => 0.1 + numbers.next(),
                            _ => f64::from(u8::from(i == j || numbers.next() < 0.1)) * (1.0 + numbers.next()),
                        })
                        .collect()
                })
                .collect();
            let m = TransitionMatrix::normalized(rows).unwrap();
            if case % 3 == 1 { m.smoothed(0.01).unwrap() } else { m }
        };
        let (forward, backward) = (rows(), rows());
        let share: Vec<f64> = (0..cells).map(|_| numbers.next() + 0.05).collect();
        let sum: f64 = share.iter().sum();
        let releases: Vec<Vec<f64>> = (0..horizon)
            .map(|_| {
                share
                    .iter()
                    .map(|s| (total as f64 * s / sum + 8.0 * (numbers.next() - 0.5)).round().max(0.0))
                    .collect()
            })
            .collect();
        let budgets: Vec<f64> =
            (0..horizon).map(|t| if t % 5 == 3 { 0.0 } else { 0.2 + numbers.next() }).collect();
        let explicit = PriorPolicy::Explicit(share.iter().map(|s| s / sum).collect());
        for (variant, prior) in
            [PriorPolicy::Frequency, PriorPolicy::Uniform, explicit].into_iter().enumerate()
        {
            let config = FilterConfig {
                correlation: &correlation((variant != 1).then_some(&backward), Some(&forward)),
                prior,
                estimator: Estimator::Smooth,
                ..FilterConfig::new(total)
            };
            let got = smooth(&releases, &budgets, config.clone()).unwrap().estimates;
            let want = reference(&releases, &budgets, config);
            assert_eq!(got.len(), horizon);
            for (t, (g, w)) in got.iter().zip(&want).enumerate() {
                for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-9 * b.abs().max(1e-300),
                        "case {case}, variant {variant}, step {t}, cell {i}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

#[test]
fn carried_counts_the_steps_since_the_last_release_with_information() {
    let (forward, backward) = carried(&[1.0, 0.0, 0.0, 0.5, 0.0]);
    assert_eq!(forward, [1.0, 1.0, 2.0, 3.0, 1.0]);
    assert_eq!(backward, [3.0, 2.0, 1.0, 2.0, 1.0]);
    // No release with information: each direction counts from its initial prior.
    let (forward, backward) = carried(&[0.0; 3]);
    assert_eq!(forward, [1.0, 2.0, 3.0]);
    assert_eq!(backward, [3.0, 2.0, 1.0]);
}

#[test]
fn the_split_keeps_the_total_and_favours_the_nearer_release() {
    assert_eq!(split(3.0, 1.0, 1.0), (1.5, 1.5));
    let (f, b) = split(2.0, 1.0, 3.0);
    assert_eq!((f, b), (1.5, 0.5));
    assert_eq!(f + b, 2.0);
}
