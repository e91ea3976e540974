//! The one place where work is spread over cores: with the default feature `parallel` on
//! rayon's global pool, without it on the calling thread. Either way results come back in
//! the order of their items, so what a caller computes from them does not depend on the
//! feature or on the number of threads.

use std::ops::Range;

/// `f(i)` for every i in `items`, in order.
#[cfg(feature = "parallel")]
pub(crate) fn map<R: Send>(items: Range<usize>, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    items.into_par_iter().map(f).collect()
}

/// `f(i)` for every i in `items`, in order.
#[cfg(not(feature = "parallel"))]
pub(crate) fn map<R: Send>(items: Range<usize>, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    items.map(f).collect()
}
