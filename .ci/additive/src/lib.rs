//! What a user's crate does with tpl-mechanisms' enums: matches on them, with the wildcard
//! arm their `#[non_exhaustive]` asks for, so that a variant another crate's feature adds
//! (the float sampler, which tpl-stream's feature turns on) breaks nothing. A wildcard arm
//! of an exhaustive enum is an unreachable pattern, denied here: the build fails unless the
//! enums are non-exhaustive.

#![deny(unreachable_patterns)]

use tpl_mechanisms::{SamplerKind, SchemeKind};

/// Whether a sampler is release-grade.
pub fn release_grade(sampler: SamplerKind) -> bool {
    match sampler {
        SamplerKind::Discrete => true,
        _ => false,
    }
}

/// Whether a scheme tests for staleness before it publishes.
pub fn tests_staleness(scheme: SchemeKind) -> bool {
    match scheme {
        SchemeKind::Bd | SchemeKind::Ba | SchemeKind::Pba => true,
        SchemeKind::Laplace | SchemeKind::Uniform | SchemeKind::Sample | SchemeKind::Planned => false,
        _ => false,
    }
}
