//! The one way this crate runs a loop at the widest vectors the processor has
//! ([docs/map.md](tpl_core::guide::map) §13).
//!
//! [`at_widest!`] turns a portable function (marked `#[inline(always)]`) into one that runs
//! it compiled for AVX-512F or AVX2 when the processor has them, checked at run time, and
//! as the portable build otherwise. Rust never fuses a multiplication and an addition on
//! its own, and a wider vector only does more of the same lane-wise operations, so every
//! width gives the same bits as long as the function fixes its own order of additions
//! (running sums in fixed lanes, added pairwise): results never depend on the processor.

/// `at_widest! { /// doc … [pub(crate)] fn name(args) -> R = portable; }` defines `name`, which calls
/// `portable(args)` compiled for the widest of AVX-512F, AVX2 and the baseline that the
/// processor supports.
macro_rules! at_widest {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? = $portable:ident;) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512($($arg: $ty),*) $(-> $ret)? {
                    $portable($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) $(-> $ret)? {
                    $portable($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the processor has AVX-512F, checked just above: the only
                    // feature `avx512` is compiled for beyond the baseline.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the processor has AVX2, checked just above: the only feature
                    // `avx2` is compiled for beyond the baseline.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $portable($($arg),*)
        }
    };
}

pub(crate) use at_widest;
