//! # tpl-alloc
//!
//! Privacy budget allocation that keeps temporal privacy leakage under a target α, against
//! an adversary who knows the backward and forward correlations (TKDE paper §5):
//!
//! - [`UpperBound`] — Algorithm 7: one constant ε whose limit TPL is α (any horizon);
//! - [`Quantified`] — Algorithm 8: larger ε at the first and last steps, TPL_t = α exactly;
//! - [`WindowAllocator`] — the largest constant ε whose Theorem 3 leakage of every window of
//!   w steps within a finite horizon is ≤ α; exists even when the suprema do not.
//!
//! Every allocator states its [`LeakageBound`] and audits its own budgets through `tpl-core`
//! ([`Allocation`] carries both: the [`Plan`] after rounding and its [`Audit`]); [`audit`]
//! does the same for any budget sequence (the realised leakage of a run), and
//! [`guaranteed_audit`] bounds the leakage of every run a scheme could produce from what it
//! may spend per step and per window ([`docs/model.md`](tpl_core::guide::model) §9);
//! [`StreamAudit`] keeps [`audit`]'s numbers for an open-ended stream one step at a time.
//!
//! ```
//! use tpl_alloc::{Allocator, Quantified, UpperBound};
//! use tpl_core::{Correlation, TransitionMatrix};
//! let p = TransitionMatrix::smoothed_identity(4, 0.1)?;
//! let corr = Correlation::new(Some(p.clone()), Some(p.clone()))?;
//! let ub = UpperBound::new(&corr, 1.0).allocate(50)?;
//! let q = Quantified::new(&corr, 1.0).allocate(50)?;
//! assert!(ub.max_tpl() <= 1.0);
//! assert!((q.max_tpl() - 1.0).abs() < 1e-9);
//! assert!(q.budgets().get(0) > ub.budgets().get(0)); // quantified spends more at the ends
//! # Ok::<(), tpl_alloc::AllocError>(())
//! ```

#![warn(missing_docs)]

mod allocation;
mod error;
mod guaranteed;
mod kind;
mod online;
mod quantified;
mod search;
mod sides;
mod upper_bound;
mod window;

pub use allocation::{Allocation, Allocator, Audit, Cap, LeakageBound, Plan, Quantity, audit};
pub use error::{AllocError, Result, Side};
pub use guaranteed::{GuaranteedAudit, Spending, WindowLimit, guaranteed_audit};
pub use kind::AllocatorKind;
pub use online::StreamAudit;
pub use quantified::{Quantified, QuantifiedBudgets};
pub use upper_bound::UpperBound;
pub use window::WindowAllocator;

/// The cargo features this build of the crate was compiled with (of `serde`), for a
/// binary that reports how it was built (`tpl --version`, the `build` object of its JSON).
pub const FEATURES: &[&str] = &[
    #[cfg(feature = "serde")]
    "serde",
];
