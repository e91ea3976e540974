//! Seeds of experiments: one base seed, given or drawn from the operating system, and an
//! independent generator per named stream and index derived from it, so that the noise of
//! a strategy depends on its name and run only — not on the other strategies compared, on
//! their order, or on the order threads finish in.

use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The base seed of an experiment.
///
/// Generators come from [`Seed::rng`]: ChaCha20 (from `rand_chacha`, whose output for a
/// given key is stable across versions) keyed by the base seed, the stream's name and an
/// index. A seeded experiment is reproducible, hence its releases are not private; it says
/// so through [`Seed::is_given`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Seed {
    value: u64,
    given: bool,
}

/// The stream name of simulated populations ([`crate::simulate_users`] in `tpl simulate`
/// and `tpl demo`); strategies use their own names ([`crate::Strategy::name`]).
pub const USERS_STREAM: &str = "users";

impl Seed {
    /// A seed asked for (a reproducible experiment).
    pub fn given(value: u64) -> Self {
        Self { value, given: true }
    }

    /// A fresh base seed from the operating system's randomness (reported by
    /// [`Seed::value`] so that the experiment can be repeated).
    ///
    /// # Panics
    /// If the operating system has no randomness to give (as `rand`'s `from_os_rng`).
    pub fn from_os_rng() -> Self {
        Self { value: StdRng::from_os_rng().next_u64(), given: false }
    }

    /// [`Seed::given`] for `Some`, [`Seed::from_os_rng`] for `None` (a `--seed` flag).
    pub fn new(flag: Option<u64>) -> Self {
        flag.map_or_else(Self::from_os_rng, Self::given)
    }

    /// The base seed's value.
    pub fn value(self) -> u64 {
        self.value
    }

    /// Whether the seed was asked for rather than drawn from the operating system.
    pub fn is_given(self) -> bool {
        self.given
    }

    /// The generator of stream `name`, number `index` (a strategy and its run): ChaCha20
    /// keyed by (base seed, index, FNV-1a hash of `name`, a fixed domain tag). Different
    /// names or indices give independent streams; the same triple always the same one.
    ///
    /// ```
    /// use rand::RngCore;
    /// use tpl_compare::Seed;
    /// let seed = Seed::given(7);
    /// assert_eq!(seed.rng("bd", 0).next_u64(), seed.rng("bd", 0).next_u64());
    /// assert_ne!(seed.rng("bd", 0).next_u64(), seed.rng("ba", 0).next_u64());
    /// assert_ne!(seed.rng("bd", 0).next_u64(), seed.rng("bd", 1).next_u64());
    /// ```
    pub fn rng(self, name: &str, index: u64) -> ChaCha20Rng {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&self.value.to_le_bytes());
        key[8..16].copy_from_slice(&index.to_le_bytes());
        key[16..24].copy_from_slice(&fnv1a(name.as_bytes()).to_le_bytes());
        key[24..].copy_from_slice(b"tpl-cmp1");
        ChaCha20Rng::from_seed(key)
    }
}

/// The 64-bit FNV-1a hash (Fowler, Noll, Vo): a fixed, dependency-free digest of a name.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn streams_depend_on_seed_name_and_index_only() {
        let draw = |s: Seed, name: &str, i: u64| s.rng(name, i).next_u64();
        let (a, b) = (Seed::given(1), Seed::given(2));
        assert_eq!(draw(a, "bd", 3), draw(Seed::given(1), "bd", 3));
        assert_ne!(draw(a, "bd", 3), draw(b, "bd", 3));
        assert_ne!(draw(a, "bd", 3), draw(a, "bd", 4));
        assert_ne!(draw(a, "bd", 3), draw(a, "bd+", 3));
        assert!(a.is_given() && !Seed::new(None).is_given());
    }
}
