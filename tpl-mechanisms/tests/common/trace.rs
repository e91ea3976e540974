//! The independent checker of a built-in scheme's trace against
//! [`docs/w-event.md`](tpl_core::guide::w_event): every budget recomputed from the history, the
//! decision rule, draw order and counts.

use tpl_mechanisms::{PbaPool, SchemeKind, WEventParams, WindowLedger};

use super::{TOL, Trace, close, trace_exactly_within};

/// Σ of the last `n` entries of `v` (direct summation in step order).
fn tail_sum(v: &[f64], n: usize) -> f64 {
    v[v.len().saturating_sub(n)..].iter().sum()
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        let ok: bool = $cond;
        if !ok {
            return Err(format!($($fmt)+));
        }
    };
}

fn ensure_close(got: f64, want: f64, what: &str, t: usize) -> Result<(), String> {
    ensure!(close(got, want), "t = {t}: {what} = {got:e}, expected {want:e}");
    Ok(())
}

/// A budget recomputed here from the history vs. the scheme's: both are differences like
/// ε/2 − S_t, whose rounding error is absolute (a few ulps of ε, summation order differs),
/// so the tolerance is 1e−12 relative to max(|want|, ε).
fn budget_tol(want: f64, eps: f64) -> f64 {
    TOL * want.abs().max(eps)
}

fn ensure_budget(got: f64, want: f64, eps: f64, what: &str, t: usize) -> Result<(), String> {
    ensure!((got - want).abs() <= budget_tol(want, eps), "t = {t}: {what} = {got:e}, expected {want:e}");
    Ok(())
}

/// Checks a trace of scheme `kind` against [`docs/w-event.md`](tpl_core::guide::w_event),
/// recomputing every budget, the decision rule, draw order and counts (§2), approximation,
/// structure (§7) and (W) with a [`WindowLedger`]. Independent of the scheme's internal state.
pub fn check_trace(
    kind: SchemeKind,
    params: &WEventParams,
    corr: &PbaPool,
    stream: &[Vec<f64>],
    trace: &Trace,
) -> Result<(), String> {
    let (eps, w, delta, s) = (params.epsilon(), params.window(), params.sensitivity(), params.share());
    let test_scale = 2.0 * w as f64 * delta / eps; // documented deviation: the sum statistic
    let mut ledger = WindowLedger::new(w);
    let mut pub_hist: Vec<f64> = Vec::new(); // bd: P_k; pba: e_k
    let mut abs_hist: Vec<f64> = Vec::new(); // pba: a_k
    let (mut l, mut ml) = (0usize, 1usize); // ba
    let mut prev: Option<&Vec<f64>> = None;
    ensure!(
        trace.outcomes.len() == stream.len(),
        "{} outcomes for {} steps",
        trace.outcomes.len(),
        stream.len()
    );
    for (i, (o, c)) in trace.outcomes.iter().zip(stream).enumerate() {
        let t = i + 1;
        let draws = &trace.draws[i];
        let d = c.len();
        let sp = o.spent;
        for (name, v) in [("test", sp.test), ("publication", sp.publication), ("absorbed", sp.absorbed)] {
            ensure!(v.is_finite() && v >= 0.0, "t = {t}: {name} budget {v} not finite ≥ 0");
        }
        ensure!(
            sp.absorbed <= sp.publication,
            "t = {t}: absorbed {} > publication {}",
            sp.absorbed,
            sp.publication
        );
        ensure!(o.release.len() == d, "t = {t}: release of length {} for d = {d}", o.release.len());
        if t == 1 {
            ensure!(o.published, "t = 1 must publish");
        }
        // What `docs/w-event.md` says this step does: (tests?, candidate budget, forced decision?).
        // `forced`: Some(b) decides without a test; None: the decision rule with p.
        let mut absorbed_if_published = 0.0;
        let mut base_if_published = 0.0;
        let (tests, p, forced): (bool, f64, Option<bool>) = match kind {
            SchemeKind::Laplace => (false, eps, Some(true)),
            SchemeKind::Uniform => (false, eps / w as f64, Some(true)),
            SchemeKind::Sample => (false, eps, Some((t - 1) % w == 0)),
            SchemeKind::Planned => return Err("planned runs are checked by their own tests".into()),
            SchemeKind::Bd => {
                if t == 1 {
                    (false, eps / 4.0, Some(true))
                } else {
                    (true, (eps / 2.0 - tail_sum(&pub_hist, w - 1)) / 2.0, None)
                }
            }
            SchemeKind::Ba => {
                if l >= 1 && t - l < ml {
                    // nullified: no test, no publication, nothing drawn
                    (false, 0.0, Some(false))
                } else if t == 1 {
                    absorbed_if_published = 0.0;
                    (false, s, Some(true))
                } else {
                    let m = (t - (l + ml - 1)).min(w);
                    absorbed_if_published = (m - 1) as f64 * s;
                    (true, m as f64 * s, None)
                }
            }
            SchemeKind::Pba => {
                if t == 1 {
                    base_if_published = eps / 8.0;
                    (false, eps / 8.0, Some(true))
                } else {
                    let quarter = eps / 4.0;
                    let e = (quarter - tail_sum(&pub_hist, w - 1)) / 2.0;
                    let a = if corr.at(t) {
                        let room = quarter - tail_sum(&abs_hist, w - 1);
                        ensure!(
                            room >= e - budget_tol(e, eps),
                            "t = {t}: correlation cap binds ({room:e} < {e:e})"
                        );
                        e.min(room)
                    } else {
                        0.0
                    };
                    base_if_published = e;
                    absorbed_if_published = a;
                    (true, e + a, None)
                }
            }
            other => return Err(format!("no reference trace for {}", other.name())),
        };
        let mut k = 0; // draws consumed
        let expected = match forced {
            Some(b) => b,
            None => {
                ensure!(!draws.is_empty(), "t = {t}: no test draw");
                let (scale, x) = draws[0];
                ensure_close(scale, test_scale, "test scale", t)?;
                // Never less noise than asked: scale·s ≥ Δ exactly (fma's sign is exact).
                ensure!(scale.mul_add(s, -delta) >= 0.0, "t = {t}: test scale {scale:e} < Δ/s");
                k = 1;
                let prev = prev.expect("t ≥ 2");
                let sum: f64 = c.iter().zip(prev).map(|(c, r)| (c - r).abs()).sum();
                let dis = (sum + x) / d as f64;
                let b = delta / p;
                let decision = p > 0.0 && b.is_finite() && dis > b;
                // Within the rounding of p (see budget_tol) the decision may go either way.
                let p_err = budget_tol(p, eps);
                let ambiguous =
                    p - p_err <= 0.0 || (dis >= delta / (p + p_err) && dis <= delta / (p - p_err));
                if !ambiguous {
                    ensure!(
                        o.published == decision,
                        "t = {t}: published = {}, but dis~ = {dis:e}, b = {b:e}",
                        o.published
                    );
                }
                o.published
            }
        };
        ensure!(o.published == expected, "t = {t}: published = {}, expected {expected}", o.published);
        ensure_close(sp.test, if tests { s } else { 0.0 }, "test budget", t)?;
        let want_draws = usize::from(tests) + if o.published { d } else { 0 };
        ensure!(draws.len() == want_draws, "t = {t}: {} draws, expected {want_draws}", draws.len());
        if o.published {
            ensure_budget(sp.publication, p, eps, "publication budget", t)?;
            ensure_budget(sp.absorbed, absorbed_if_published, eps, "absorbed budget", t)?;
            for j in 0..d {
                let (scale, v) = draws[k + j];
                ensure!(scale.mul_add(sp.publication, -delta) >= 0.0, "t = {t}: cell scale {scale:e} < Δ/p");
                ensure_close(scale, delta / sp.publication, "cell scale", t)?;
                ensure!(
                    o.release[j].to_bits() == (c[j] + v).to_bits(),
                    "t = {t}: release[{j}] = {} ≠ c + noise = {}",
                    o.release[j],
                    c[j] + v
                );
            }
        } else {
            ensure!(sp.publication == 0.0 && sp.absorbed == 0.0, "t = {t}: a skip spent a publication");
            let prev = prev.expect("t ≥ 2");
            ensure!(
                o.release.iter().zip(prev).all(|(a, b)| a.to_bits() == b.to_bits()),
                "t = {t}: approximation is not a bit-for-bit copy of r_(t−1)"
            );
        }
        // Bookkeeping for the next step.
        match kind {
            SchemeKind::Bd => pub_hist.push(sp.publication),
            SchemeKind::Ba if o.published => {
                let m = (sp.publication / s).round() as usize;
                ensure!((1..=w).contains(&m), "t = {t}: m = {m} outside 1..=w");
                ensure_close(sp.publication, m as f64 * s, "publication = m·s", t)?;
                (l, ml) = (t, m);
            }
            SchemeKind::Pba => {
                let (e, a) = if o.published { (base_if_published, sp.absorbed) } else { (0.0, 0.0) };
                ensure!(
                    a == 0.0 || (a - e).abs() <= budget_tol(e, eps),
                    "t = {t}: absorbed {a:e} ∉ {{0, base {e:e}}}"
                );
                ensure!(corr.at(t) || a == 0.0, "t = {t}: absorbed {a:e} without correlation");
                pub_hist.push(e);
                abs_hist.push(a);
                let quarter = eps / 4.0 * (1.0 + TOL);
                ensure!(tail_sum(&pub_hist, w) <= quarter, "t = {t}: base window sum > ε/4");
                ensure!(tail_sum(&abs_hist, w) <= quarter, "t = {t}: absorbed window sum > ε/4");
            }
            _ => {}
        }
        ledger.push(sp.total());
        prev = Some(&o.release);
    }
    if kind == SchemeKind::Laplace {
        let want = stream.len().min(w) as f64 * eps;
        ensure!(
            close(ledger.max_window_budget(), want),
            "laplace window max {} ≠ {want}",
            ledger.max_window_budget()
        );
    } else {
        ensure!(
            ledger.within(eps) && ledger.max_window_budget() <= eps,
            "(W) violated: max window budget {:e} > ε = {eps:e}",
            ledger.max_window_budget()
        );
        trace_exactly_within(w, trace, eps)?;
    }
    Ok(())
}
