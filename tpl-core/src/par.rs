//! The one place where work is spread over cores: with the default feature `parallel` on
//! rayon's global pool, without it on the calling thread. Either way results come back in
//! the order of their items, so what a caller computes from them does not depend on the
//! feature or on the number of threads.

use std::ops::Range;

/// Below this much work (entries of rows read, about a nanosecond each) waking other threads
/// costs more than it saves, and the items run on the calling thread.
const MIN_PARALLEL_WORK: usize = 1 << 17;

/// `f(i)` for every i in `items`, in order; `work` is the number of row entries they read
/// together.
pub(crate) fn map<R: Send>(items: Range<usize>, work: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    if work < MIN_PARALLEL_WORK || items.len() < 2 {
        return items.map(f).collect();
    }
    spread(items, f)
}

#[cfg(feature = "parallel")]
fn spread<R: Send>(items: Range<usize>, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    items.into_par_iter().map(f).collect()
}

#[cfg(not(feature = "parallel"))]
fn spread<R: Send>(items: Range<usize>, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    items.map(f).collect()
}
