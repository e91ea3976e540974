//! # tpl-stream
//!
//! Durable continual release ([`docs/stream.md`](tpl_core::guide::stream)): a w-event stream scheme
//! of `tpl-mechanisms` whose parameters, per-step spend and releases live in one SQLite file, so
//! that a curator can release one step at a time — every five minutes, for months — from separate
//! processes, and trust that:
//!
//! - a release is returned only after its step is committed (one transaction per step);
//! - a step is never released twice: a key already stored with the same counts returns the
//!   stored release and spends nothing, with other counts it is refused;
//! - every draw is admitted first by the stream's own checks — every window of w steps within
//!   ε, exactly in f64, and with the adversary's matrices and α, the audited temporal privacy
//!   leakage (TKDE paper, Theorem 3 and eqs. 11–15) of every step within α — so a step that
//!   would break the promise is not published (it repeats the last release and says why);
//! - the scheme resumes where it stopped: its state is rebuilt from the recorded steps —
//!   the last publication and the last w − 1 steps ([`tpl_mechanisms::StreamScheme::resume`]
//!   and [`tpl_mechanisms::StreamScheme::restore`]), so opening a long stream costs
//!   O(min(w, T)) — never from stored generator state (each push draws from the operating
//!   system); with matrices the leakage is audited step by step ([`tpl_alloc::StreamAudit`]).
//!
//! ```
//! use tpl_mechanisms::SchemeKind;
//! use tpl_stream::{DurableStream, StreamConfig};
//! let dir = std::env::temp_dir().join(format!("tpl-stream-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("s.db");
//! let config = StreamConfig::new(SchemeKind::Bd, 1.0, 10);
//! DurableStream::create(&path, &config)?;
//! let mut s = DurableStream::open(&path)?;
//! let first = s.push(Some(0), &[120.0, 30.0])?;
//! assert!(first.record.published && !first.replayed);
//! // A retry of the same key and counts returns the stored release and spends nothing.
//! let again = s.push(Some(0), &[120.0, 30.0])?;
//! assert!(again.replayed && again.record == first.record);
//! assert!(s.push(Some(0), &[121.0, 30.0]).is_err()); // same key, other counts
//! assert_eq!(s.status()?.budgets.len(), 1);
//! # drop(s);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod building;
mod config;
mod error;
mod guard;
mod key;
mod options;
mod store;
mod stream;

pub use config::{Estimation, Sampler, SchemeChoice, StreamConfig};
pub use error::{ConfigError, Parameter, Result, StreamError};
pub use key::{StreamKey, default_key_path};
pub use options::StreamOptions;
pub use store::estimates::StepEstimate;
pub use store::{APPLICATION_ID, FORMAT_VERSION};
#[cfg(feature = "test-util")]
pub use stream::rechain;
pub use stream::{BUSY_TIMEOUT, DurableStream, Pushed, Rekeyed, Status, StepRecord};
/// The error of `tpl-core` inside this crate's errors, for matching on them.
pub use tpl_core::CoreError;
/// The estimators a stream's [`Estimation`] names.
pub use tpl_postprocess::Estimator;

/// The cargo features this build of the crate was compiled with (of `test-util`,
/// `float-not-release-grade`), for a
/// binary that reports how it was built (`tpl --version`, the `build` object of its JSON).
pub const FEATURES: &[&str] = &[
    #[cfg(feature = "test-util")]
    "test-util",
    #[cfg(feature = "float-not-release-grade")]
    "float-not-release-grade",
];
