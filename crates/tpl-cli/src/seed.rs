//! Seeds of the commands that draw randomness for experiments (`simulate`, `compare`,
//! `demo`): one base seed, given or drawn from the OS, and an independent generator per
//! task derived from it, so a parallel run gives the same numbers in any thread order.

use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

/// The base seed of a run.
#[derive(Debug, Clone, Copy)]
pub struct Seed {
    /// The value, printed so that an OS-seeded run can be reproduced.
    pub value: u64,
}

impl Seed {
    /// `--seed S`, or a fresh value from the OS.
    pub fn new(flag: Option<u64>) -> Self {
        Self { value: flag.unwrap_or_else(|| StdRng::from_os_rng().next_u64()) }
    }

    /// The generator of task `task`: a SplitMix64 step separates the task streams before
    /// `seed_from_u64` expands the result into a full ChaCha key.
    pub fn rng(&self, task: u64) -> StdRng {
        let mut z = self.value ^ task.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        StdRng::seed_from_u64(z ^ (z >> 31))
    }
}
