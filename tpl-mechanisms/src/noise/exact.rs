//! The exact discrete Laplace sampler (release-grade).

use rand::{RngCore, SeedableRng};
use rand_chacha::{ChaCha8Rng, ChaCha12Rng, ChaCha20Rng};

use super::geometric::{Bits, Plan};
use super::{NoiseSource, check_scale};
use crate::error::{MechError, Result};

/// Draws per block: block i of a fill of more than `BLOCK` values, and of every refill of the
/// values drawn ahead, draws from its own generator stream, so that blocks can be drawn on
/// several threads.
pub(crate) const BLOCK: usize = 4096;

/// The most values drawn ahead at once (16 blocks, 512 KiB).
const MAX_AHEAD: usize = 16 * BLOCK;

/// Values asked for at one scale in a row before values are drawn ahead for it.
const AHEAD_AFTER: usize = 2 * BLOCK;

/// The exact discrete Laplace (two-sided geometric) distribution Pr\[k\] ∝ exp(−|k|/b) on
/// the integers — release-grade. Integer arithmetic only (Canonne, Kamath, Steinke 2020,
/// "The Discrete Gaussian for Differential Privacy", Algorithms 1 and 2), restated for
/// batches of draws at one scale in [`docs/w-event.md`](tpl_core::guide::w_event) §1.3.
///
/// The scale b is represented exactly as t/s with integers t and s (s a power of two), rounded
/// up when b needs more than 64 fractional bits: more noise, never less. Scales from 2^74 on
/// are refused ([`MechError::BadScale`]).
///
/// Draws are exact integers, returned as f64 (exact for |k| ≤ 2^53). Added to counts by
/// [`crate::LaplaceMechanism`], counts are limited to ±[`crate::MAX_EXACT_COUNT`] (2^52),
/// scales to [`crate::MAX_EXACT_SCALE`] (2^46) and draws to ±2^52, so that count + noise is
/// exact in f64.
///
/// # Proof definition
/// Every value [`NoiseSource::laplace`] or [`NoiseSource::fill_laplace`] returns is Y with
/// Pr[Y = k] = (1 − e^{−1/b'})/(1 + e^{−1/b'})·e^{−|k|/b'} exactly, b' = t/s ≥ b as above,
/// and the values are independent, given that the generator's words are independent and
/// uniform: every random choice is an integer comparison against uniform integers, never a
/// float. Where the words come from:
/// - a fill of more than 4096 values draws its block i (4096 values) from stream
///   `id + 1 + n + i` of the generator's key, `id` being the generator's own stream and n
///   the blocks opened before ([`StreamRng`]);
/// - a smaller fill (or single draw) draws from the generator's own stream, until one scale
///   has been asked for 8192 values in a row; from then on, values for it are drawn *ahead*
///   — as many as asked for in the row so far, at most 65 536, in blocks as above — and
///   handed out in order, and those not handed out when another scale is asked for are
///   dropped unused (no more than were handed out before them, rounded up to a block).
///
/// Streams of one ChaCha key are independent under the same assumption that makes one
/// stream's words look independent and uniform (ChaCha is a pseudorandom function of the key,
/// the stream id and the position), so blocks are independent of each other and of
/// everything else drawn. Values drawn ahead are independent of everything handed out before
/// them, so whether they are handed out or dropped (which depends only on the scales asked
/// for, hence on the data and on values already handed out) does not change the law of those
/// handed out. Which thread draws a block does not change its stream: the values do not
/// depend on the number of threads, nor on feature `parallel`.
///
/// # Runtime
/// About 250 instructions and 2.7 32-bit words per draw at b = 20 (15–20 ns on one core of
/// the project's machine, `sampler/discrete-laplace-1t/*`), everything a scale's draws need
/// computed once and kept while the scale repeats; blocks are drawn on all cores (feature
/// `parallel`, on by default), so a large fill, or a long run of small ones at one scale,
/// runs about as many times faster as there are free cores.
///
/// Not `Clone`: a copy would repeat the same noise.
///
/// ```
/// use tpl_mechanisms::{DiscreteLaplace, NoiseSource};
/// let mut noise = DiscreteLaplace::from_os_rng();
/// let x = noise.laplace(2.5)?;
/// assert_eq!(x, x.round()); // an exact integer
/// let mut many = vec![0.0; 10_000];
/// noise.fill_laplace(2.5, &mut many)?; // 10 000 independent draws, in parallel
/// assert!(many.iter().all(|x| *x == x.round()));
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
#[derive(Debug)]
pub struct DiscreteLaplace<R> {
    rng: R,
    /// Block streams opened so far (see the proof definition).
    opened: u64,
    /// The last two scales asked for (their bits) and their plans, the latest first: a
    /// release asks for one scale for all its cells, a stream scheme often for the same
    /// scale at every step, or for its test's scale and its publication's in turn.
    plans: [Option<(u64, Plan)>; 2],
    /// Bits drawn from the generator's own stream and not used yet.
    bits: Bits,
    /// Values drawn ahead for the last scale asked for.
    ahead: Ahead,
}

/// Values drawn ahead for one scale (see the proof definition of [`DiscreteLaplace`]).
#[derive(Debug, Default)]
struct Ahead {
    /// The scale (its bits).
    scale: u64,
    /// Values drawn; those from `next` on are not handed out yet.
    values: Vec<f64>,
    /// The next value to hand out.
    next: usize,
    /// Values asked for at this scale so far (sets how many to draw ahead next).
    asked: usize,
}

impl DiscreteLaplace<ChaCha12Rng> {
    /// The release-grade sampler: ChaCha12 seeded from the operating system's randomness.
    pub fn from_os_rng() -> Self {
        Self::new(ChaCha12Rng::from_os_rng())
    }

    /// A **reproducible** sampler: ChaCha12 keyed by `seed` (the same draws for the same seed
    /// and the same sequence of requests, on every platform, with or without feature
    /// `parallel` and on any number of threads, within a version of this crate). For tests
    /// and experiments: anyone who knows the seed can subtract the noise, so a seeded release
    /// is not private.
    pub fn seeded(seed: u64) -> Self {
        Self::new(ChaCha12Rng::seed_from_u64(seed))
    }
}

impl<R> DiscreteLaplace<R> {
    /// A sampler drawing from `rng` (a cryptographically secure generator for releases) and,
    /// for blocks, from the streams that follow `rng`'s own under the same key (see the proof
    /// definition): nothing else should draw from those streams of that key.
    pub fn new(rng: R) -> Self {
        Self { rng, opened: 0, plans: [None, None], bits: Bits::default(), ahead: Ahead::default() }
    }
}

impl<R: StreamRng> NoiseSource for DiscreteLaplace<R> {
    fn laplace(&mut self, scale: f64) -> Result<f64> {
        let mut one = [0.0];
        self.fill_laplace(scale, &mut one)?;
        Ok(one[0])
    }

    fn fill_laplace(&mut self, scale: f64, out: &mut [f64]) -> Result<()> {
        check_scale(scale)?;
        let key = scale.to_bits();
        let Self { rng, opened, plans, bits, ahead } = self;
        // The plan of the scale, most recent first (a scheme with a test alternates two).
        if plans[0].as_ref().is_none_or(|(b, _)| *b != key) {
            plans.swap(0, 1);
            if plans[0].as_ref().is_none_or(|(b, _)| *b != key) {
                plans[0] = Some((key, Plan::new(scale).ok_or(MechError::BadScale(scale))?));
            }
        }
        let Some((_, plan)) = &plans[0] else { unreachable!("the plan was just set") };
        if out.len() > BLOCK {
            match open(opened, out.len()) {
                Some(first) => fill_blocks(rng, first, plan, out),
                None => plan.fill(rng, bits, out),
            }
            return Ok(());
        }
        if ahead.scale != key {
            // Another scale: what was drawn ahead for the last one is dropped.
            *ahead = Ahead { scale: key, values: std::mem::take(&mut ahead.values), next: 0, asked: 0 };
            ahead.values.clear();
        }
        let mut done = 0;
        while done < out.len() {
            if ahead.next == ahead.values.len() {
                // Drawn directly until this scale has been asked for 8192 values in a row,
                // then ahead, as many as asked so far (at most 65 536): no more values are
                // dropped than were handed out, rounded up to a block.
                let size = ahead.asked.min(MAX_AHEAD).next_multiple_of(BLOCK);
                let first = if ahead.asked >= AHEAD_AFTER { open(opened, size) } else { None };
                let Some(first) = first else {
                    plan.fill(rng, bits, &mut out[done..]);
                    break;
                };
                ahead.values.resize(size, 0.0);
                fill_blocks(rng, first, plan, &mut ahead.values);
                ahead.next = 0;
            }
            let take = (out.len() - done).min(ahead.values.len() - ahead.next);
            out[done..done + take].copy_from_slice(&ahead.values[ahead.next..ahead.next + take]);
            ahead.next += take;
            done += take;
        }
        ahead.asked = ahead.asked.saturating_add(out.len());
        Ok(())
    }

    fn integer_valued(&self) -> bool {
        true
    }
}

/// Opens the block streams for `values` values: the index of the first, or `None` when the
/// ids would run out. Ids main + 1 … main + 2^64 − 1 never wrap onto the main stream; 2^64
/// blocks of 4096 draws will not be asked for, but if they were, the main stream would serve.
fn open(opened: &mut u64, values: usize) -> Option<u64> {
    let blocks = values.div_ceil(BLOCK) as u64;
    let end = opened.checked_add(blocks).filter(|&end| end < u64::MAX)?;
    let first = *opened;
    *opened = end;
    Some(first)
}

/// Block i of `out` from stream `rng.stream_id() + 1 + first + i`, on all cores.
#[cfg(feature = "parallel")]
fn fill_blocks<R: StreamRng>(rng: &R, first: u64, plan: &Plan, out: &mut [f64]) {
    use rayon::prelude::*;
    out.par_chunks_mut(BLOCK).enumerate().for_each(|(i, block)| fill_block(rng, first, i, plan, block));
}

/// Block i of `out` from stream `rng.stream_id() + 1 + first + i`, in order.
#[cfg(not(feature = "parallel"))]
fn fill_blocks<R: StreamRng>(rng: &R, first: u64, plan: &Plan, out: &mut [f64]) {
    for (i, block) in out.chunks_mut(BLOCK).enumerate() {
        fill_block(rng, first, i, plan, block);
    }
}

/// Block `i` of a fill whose first block is block `first` of the sampler.
fn fill_block<R: StreamRng>(rng: &R, first: u64, i: usize, plan: &Plan, block: &mut [f64]) {
    let id = rng.stream_id().wrapping_add(1 + first + i as u64);
    plan.fill(&mut rng.open_stream(id), &mut Bits::default(), block);
}

/// A generator whose key gives 2^64 independent streams (ChaCha's 64-bit stream id, as in
/// `rand_chacha`): what lets [`DiscreteLaplace`] draw the blocks of a large fill in parallel
/// without any change to the values. Implemented for `ChaCha8Rng`, `ChaCha12Rng` and
/// `ChaCha20Rng`; an implementation for another generator must give streams that are
/// independent of each other under the generator's own security assumption.
pub trait StreamRng: RngCore + Send + Sync + Sized {
    /// The stream this generator draws from.
    fn stream_id(&self) -> u64;

    /// A generator with the same key on stream `id`, at its start.
    fn open_stream(&self, id: u64) -> Self;
}

macro_rules! chacha_streams {
    ($($rng:ty),*) => {$(
        impl StreamRng for $rng {
            fn stream_id(&self) -> u64 {
                self.get_stream()
            }

            fn open_stream(&self, id: u64) -> Self {
                let mut rng = Self::from_seed(self.get_seed());
                rng.set_stream(id);
                rng
            }
        }
    )*};
}

chacha_streams!(ChaCha8Rng, ChaCha12Rng, ChaCha20Rng);

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed sequence of requests: a large fill (blocks), a scale asked for again and again
    /// in small fills (drawn directly, then ahead), single draws, another scale, and back.
    fn requests(noise: &mut DiscreteLaplace<ChaCha12Rng>) -> Vec<f64> {
        let mut all = Vec::new();
        let mut take = |noise: &mut DiscreteLaplace<ChaCha12Rng>, scale: f64, n: usize| {
            let mut out = vec![0.0; n];
            noise.fill_laplace(scale, &mut out).expect("valid scale");
            all.extend(out);
        };
        take(noise, 20.0, 3 * BLOCK + 17);
        for _ in 0..300 {
            take(noise, 60f64.next_up(), 100);
        }
        take(noise, 2.0, 1);
        take(noise, 2.0, 1);
        take(noise, 2000.5, 5000);
        take(noise, 60f64.next_up(), 7);
        all
    }

    /// The values depend on the seed and the requests, not on how many threads draw them:
    /// one thread and two give the same values (block i always draws from stream i).
    #[cfg(feature = "parallel")]
    #[test]
    fn values_do_not_depend_on_the_number_of_threads() {
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool");
            pool.install(|| requests(&mut DiscreteLaplace::seeded(0x7468_7265_6164)))
        };
        let one = on(1);
        assert_eq!(one, on(2));
        assert_eq!(one, on(3));
        assert_ne!(one, requests(&mut DiscreteLaplace::seeded(0x7468_7265_6165)));
    }

    /// Where each value comes from, as the proof definition states it: a large fill's block i
    /// is the plan's draws from stream 1 + i of the key (the generator being on stream 0);
    /// small fills come from the generator's own stream until their scale has been asked for
    /// 8192 values in a row, then from 8192 values drawn ahead in the next two streams; a
    /// new scale drops what was left of them and starts again from the generator's stream.
    #[test]
    fn blocks_and_values_drawn_ahead_come_from_their_own_streams() {
        let seed = 0x626c_6f63_6b73;
        let mut noise = DiscreteLaplace::seeded(seed);
        let key = ChaCha12Rng::seed_from_u64(seed);
        let plan = |scale: f64| Plan::new(scale).expect("plan");
        let block = |id: u64, scale: f64, n: usize| {
            let mut out = vec![0.0; n];
            plan(scale).fill(&mut key.open_stream(id), &mut Bits::default(), &mut out);
            out
        };
        let fill = |noise: &mut DiscreteLaplace<ChaCha12Rng>, scale: f64, n: usize| {
            let mut out = vec![0.0; n];
            noise.fill_laplace(scale, &mut out).expect("valid scale");
            out
        };
        let big = fill(&mut noise, 20.0, 2 * BLOCK + 5);
        assert_eq!(big[..BLOCK], block(1, 20.0, BLOCK)[..]);
        assert_eq!(big[BLOCK..2 * BLOCK], block(2, 20.0, BLOCK)[..]);
        assert_eq!(big[2 * BLOCK..], block(3, 20.0, 5)[..]);

        // The generator's own stream, its unused bits carried from one fill to the next.
        let (mut own, mut own_bits) = (key.clone(), Bits::default());
        let mut from_own = |scale: f64, n: usize| {
            let mut out = vec![0.0; n];
            plan(scale).fill(&mut own, &mut own_bits, &mut out);
            out
        };
        assert_eq!(fill(&mut noise, 3.5, BLOCK), from_own(3.5, BLOCK));
        assert_eq!(fill(&mut noise, 3.5, BLOCK), from_own(3.5, BLOCK));
        // 8192 asked in a row: drawn ahead in streams 4 and 5.
        let ahead: Vec<f64> = block(4, 3.5, BLOCK).into_iter().chain(block(5, 3.5, BLOCK)).collect();
        assert_eq!(fill(&mut noise, 3.5, 10)[..], ahead[..10]);
        assert_eq!(fill(&mut noise, 3.5, BLOCK)[..], ahead[10..BLOCK + 10]);
        // Another scale, and back: the rest of streams 4–5 is never handed out.
        assert_eq!(fill(&mut noise, 2.0, 3), from_own(2.0, 3));
        assert_eq!(fill(&mut noise, 3.5, 7), from_own(3.5, 7));
        // The next blocks opened are 6 and on.
        let big = fill(&mut noise, 3.5, BLOCK + 1);
        assert_eq!(big[..BLOCK], block(6, 3.5, BLOCK)[..]);
    }

    /// A scheme like bd draws its test at one scale step after step and now and then a
    /// publication at another: the test's short runs are not drawn ahead, so no value is
    /// drawn and dropped (the regression: the second test draw in a row drew 8192 values
    /// ahead, dropped at the next publication, which made `tpl compare` draw 20 times the
    /// values it used).
    #[test]
    fn short_runs_of_one_scale_draw_nothing_ahead() {
        let mut noise = DiscreteLaplace::seeded(9);
        let mut one = [0.0];
        let mut cells = [0.0; 40];
        for _ in 0..200 {
            for _ in 0..9 {
                noise.fill_laplace(40.0, &mut one).expect("valid");
            }
            noise.fill_laplace(7.5, &mut cells).expect("valid");
        }
        assert_eq!(noise.opened, 0);
        assert!(noise.ahead.values.is_empty());
    }

    /// A generator on another stream than 0 opens its blocks after its own id, never on it.
    #[test]
    fn block_streams_never_reuse_the_generators_own() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        rng.set_stream(u64::MAX);
        let opened = rng.open_stream(rng.stream_id().wrapping_add(1));
        assert_eq!(opened.get_stream(), 0);
        assert_eq!(opened.get_word_pos(), 0);
        let mut opened = 0;
        assert_eq!(open(&mut opened, 3 * BLOCK), Some(0));
        assert_eq!(open(&mut opened, 1), Some(3));
        let mut full = u64::MAX - 2;
        assert_eq!(open(&mut full, 2 * BLOCK), None);
        assert_eq!(open(&mut full, BLOCK), Some(u64::MAX - 2));
    }
}
