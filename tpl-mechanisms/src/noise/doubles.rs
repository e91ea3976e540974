//! Test doubles: noise sources that force decisions or record requests (feature `test-util`).
//! Not random, hence never for releases.

use std::collections::VecDeque;

use super::{NoiseSource, check_scale};
use crate::error::{MechError, Result};

/// Always 0 (tests: what publishes when no noise is drawn).
#[derive(Debug, Clone, Copy, Default)]
pub struct Zero;

impl NoiseSource for Zero {
    fn laplace(&mut self, scale: f64) -> Result<f64> {
        check_scale(scale)?;
        Ok(0.0)
    }
}

/// Returns queued values in order, ignoring the scale (tests: forced decisions).
#[derive(Debug, Clone, Default)]
pub struct Scripted {
    queue: VecDeque<f64>,
}

impl Scripted {
    /// A source that will return `values` in order.
    pub fn new(values: impl IntoIterator<Item = f64>) -> Self {
        Self { queue: values.into_iter().collect() }
    }

    /// Values not yet drawn.
    pub fn remaining(&self) -> usize {
        self.queue.len()
    }
}

impl NoiseSource for Scripted {
    fn laplace(&mut self, scale: f64) -> Result<f64> {
        check_scale(scale)?;
        self.queue.pop_front().ok_or(MechError::ScriptExhausted)
    }
}

/// Wraps a source and records every scale requested (tests: sensitivity and draw order).
#[derive(Debug, Default)]
pub struct Recording<S> {
    inner: S,
    /// Scales requested so far, in order.
    pub scales: Vec<f64>,
}

impl<S> Recording<S> {
    /// Records the requests made to `inner`.
    pub fn new(inner: S) -> Self {
        Self { inner, scales: Vec::new() }
    }
}

impl<S: NoiseSource> NoiseSource for Recording<S> {
    fn laplace(&mut self, scale: f64) -> Result<f64> {
        self.scales.push(scale);
        self.inner.laplace(scale)
    }

    /// Records `scale` once per value, and lets the wrapped source fill `out` as it would.
    fn fill_laplace(&mut self, scale: f64, out: &mut [f64]) -> Result<()> {
        self.scales.extend(std::iter::repeat_n(scale, out.len()));
        self.inner.fill_laplace(scale, out)
    }

    fn integer_valued(&self) -> bool {
        self.inner.integer_valued()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_and_zero() {
        let mut s = Scripted::new([1.0, -2.0]);
        assert_eq!(s.laplace(1.0), Ok(1.0));
        assert_eq!(s.laplace(1.0), Ok(-2.0));
        assert_eq!(s.laplace(1.0), Err(MechError::ScriptExhausted));
        assert_eq!(Zero.laplace(0.0), Err(MechError::BadScale(0.0)));
    }
}
