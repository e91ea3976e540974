//! Ranges of steps: which part of a stream a computation uses — the steps a transition
//! matrix is estimated from, the steps a release is scored on ([`docs/cli.md`](crate::guide::cli),
//! `tpl estimate --steps` and `tpl compare --train-steps`).
//!
//! Steps are numbered from 1 in time order, as every step `t` that `tpl` prints; a range
//! includes both of its ends. For a stream file, step t is its t-th time bucket in ascending
//! order; for a counts file, its t-th data row.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use crate::error::{CoreError, Result};

/// A range of steps as asked for, before the length of the data is known: `A..B` (steps A
/// to B, both included), `A..` (from step A to the last), `..B` (from the first step to B)
/// or `..` (every step). Steps are numbered from 1.
///
/// ```
/// use tpl_core::{StepRange, Steps};
/// let r: StepRange = "..972".parse()?;
/// assert_eq!(r.resolve(1944)?, Steps::new(1, 972)?);
/// let rest: StepRange = "973..".parse()?;
/// assert_eq!(rest.resolve(1944)?.len(), 972);
/// assert!("5..3".parse::<StepRange>().is_err()); // reversed
/// assert!("1..3000".parse::<StepRange>()?.resolve(1944).is_err()); // past the data
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StepRange {
    first: Option<usize>,
    last: Option<usize>,
}

impl StepRange {
    /// Every step of the data (`..`).
    pub const ALL: Self = Self { first: None, last: None };

    /// Steps `first` to `last`, both included; `None` leaves that end open (the first or the
    /// last step of the data).
    ///
    /// # Errors
    /// [`CoreError::StepZero`] for a step 0; [`CoreError::StepRangeEmpty`] when `last` comes
    /// before `first`.
    pub fn new(first: Option<usize>, last: Option<usize>) -> Result<Self> {
        let range = Self { first, last };
        if first == Some(0) || last == Some(0) {
            return Err(CoreError::StepZero { range: range.to_string() });
        }
        if let (Some(a), Some(b)) = (first, last)
            && b < a
        {
            return Err(CoreError::StepRangeEmpty { first: a, last: b });
        }
        Ok(range)
    }

    /// The first step asked for (`None`: the data's first).
    pub fn first(&self) -> Option<usize> {
        self.first
    }

    /// The last step asked for (`None`: the data's last).
    pub fn last(&self) -> Option<usize> {
        self.last
    }

    /// The steps of data with `steps` steps that this range selects.
    ///
    /// # Errors
    /// [`CoreError::StepRangeOutside`] when a step asked for is past the last step of the
    /// data (a range `A..` with A > `steps` included), or the data has no step.
    pub fn resolve(&self, steps: usize) -> Result<Steps> {
        let first = self.first.unwrap_or(1);
        let last = self.last.unwrap_or(steps);
        if steps == 0 || first > steps || last > steps {
            return Err(CoreError::StepRangeOutside { range: self.to_string(), steps });
        }
        Steps::new(first, last)
    }
}

impl FromStr for StepRange {
    type Err = CoreError;

    /// Reads `A..B`, `A..`, `..B` or `..` (spaces around the numbers allowed).
    fn from_str(text: &str) -> Result<Self> {
        let syntax = || CoreError::StepRangeSyntax(text.to_string());
        let (a, b) = text.split_once("..").ok_or_else(syntax)?;
        let end = |s: &str| -> Result<Option<usize>> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            if !s.bytes().all(|c| c.is_ascii_digit()) {
                return Err(syntax());
            }
            // All digits: only a number beyond usize fails here.
            s.parse().map(Some).map_err(|_| syntax())
        };
        Self::new(end(a)?, end(b)?)
    }
}

impl fmt::Display for StepRange {
    /// The range as it is typed: `3..8`, `3..`, `..8`, `..`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(a) = self.first {
            write!(f, "{a}")?;
        }
        f.write_str("..")?;
        if let Some(b) = self.last {
            write!(f, "{b}")?;
        }
        Ok(())
    }
}

/// Steps `first` to `last` of a stream, both included, numbered from 1, with
/// 1 ≤ first ≤ last: a non-empty range whose ends are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Steps {
    first: usize,
    last: usize,
}

impl Steps {
    /// Steps `first..=last`.
    ///
    /// # Errors
    /// [`CoreError::StepZero`] for `first` = 0; [`CoreError::StepRangeEmpty`] for
    /// `last` < `first`.
    pub fn new(first: usize, last: usize) -> Result<Self> {
        StepRange::new(Some(first), Some(last))?;
        Ok(Self { first, last })
    }

    /// Every step of data with `steps` ≥ 1 steps.
    ///
    /// # Errors
    /// [`CoreError::StepRangeOutside`] for `steps` = 0.
    pub fn all(steps: usize) -> Result<Self> {
        StepRange::ALL.resolve(steps)
    }

    /// The first step (from 1).
    pub fn first(&self) -> usize {
        self.first
    }

    /// The last step (from 1, included).
    pub fn last(&self) -> usize {
        self.last
    }

    /// Number of steps, at least 1.
    #[allow(clippy::len_without_is_empty)] // never empty
    pub fn len(&self) -> usize {
        self.last - self.first + 1
    }

    /// The 0-based indices of the steps, for slicing data whose step t is at index t − 1.
    pub fn indices(&self) -> Range<usize> {
        self.first - 1..self.last
    }

    /// Whether step `t` (from 1) is in the range.
    pub fn contains(&self, t: usize) -> bool {
        (self.first..=self.last).contains(&t)
    }

    /// The steps both ranges hold, if any.
    pub fn overlap(&self, other: &Self) -> Option<Self> {
        let (first, last) = (self.first.max(other.first), self.last.min(other.last));
        (first <= last).then_some(Self { first, last })
    }

    /// The steps of data with `steps` steps outside this range, when they form one range
    /// (this range starts at step 1 or ends at the last step, but not both).
    ///
    /// # Errors
    /// [`CoreError::StepRangeOutside`] when the range goes past `steps`;
    /// [`CoreError::NoStepsLeft`] when it holds every step;
    /// [`CoreError::StepsLeftSplit`] when steps are left on both sides.
    pub fn complement(&self, steps: usize) -> Result<Self> {
        self.check_within(steps)?;
        match (self.first == 1, self.last == steps) {
            (true, true) => Err(CoreError::NoStepsLeft { steps }),
            (true, false) => Ok(Self { first: self.last + 1, last: steps }),
            (false, true) => Ok(Self { first: 1, last: self.first - 1 }),
            (false, false) => Err(CoreError::StepsLeftSplit { first: self.first, last: self.last, steps }),
        }
    }

    /// Checks that the range lies within data of `steps` steps.
    ///
    /// # Errors
    /// [`CoreError::StepRangeOutside`] when it goes past `steps`.
    pub fn check_within(&self, steps: usize) -> Result<()> {
        if self.last > steps {
            return Err(CoreError::StepRangeOutside { range: self.to_string(), steps });
        }
        Ok(())
    }
}

impl fmt::Display for Steps {
    /// `first..last`, the form [`StepRange`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.first, self.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<StepRange> {
        text.parse()
    }

    #[test]
    fn every_form_reads_and_prints_back() {
        for (text, first, last) in
            [("3..8", Some(3), Some(8)), ("3..", Some(3), None), ("..8", None, Some(8)), ("..", None, None)]
        {
            let r = parse(text).unwrap();
            assert_eq!((r.first(), r.last()), (first, last), "{text}");
            assert_eq!(r.to_string(), text);
        }
        assert_eq!(parse(" 3 .. 8 ").unwrap(), StepRange::new(Some(3), Some(8)).unwrap());
        assert_eq!(parse("4..4").unwrap().resolve(4).unwrap(), Steps::new(4, 4).unwrap());
    }

    #[test]
    fn open_ends_resolve_to_the_data() {
        assert_eq!(parse("..").unwrap().resolve(7).unwrap(), Steps::new(1, 7).unwrap());
        assert_eq!(parse("5..").unwrap().resolve(7).unwrap(), Steps::new(5, 7).unwrap());
        assert_eq!(parse("..2").unwrap().resolve(7).unwrap(), Steps::new(1, 2).unwrap());
        assert_eq!(Steps::all(7).unwrap(), Steps::new(1, 7).unwrap());
    }

    #[test]
    fn bad_ranges_are_named() {
        for bad in ["", "3", "3-8", "a..4", "1..2..3", "-1..4", "1.5..4", "99999999999999999999999..", "..+4"]
        {
            assert_eq!(parse(bad), Err(CoreError::StepRangeSyntax(bad.into())), "{bad:?}");
        }
        assert_eq!(parse("0..4"), Err(CoreError::StepZero { range: "0..4".into() }));
        assert_eq!(parse("..0"), Err(CoreError::StepZero { range: "..0".into() }));
        assert_eq!(parse("8..3"), Err(CoreError::StepRangeEmpty { first: 8, last: 3 }));
        assert_eq!(Steps::new(2, 1), Err(CoreError::StepRangeEmpty { first: 2, last: 1 }));
        let outside = |text: &str, steps| {
            assert_eq!(
                parse(text).unwrap().resolve(steps),
                Err(CoreError::StepRangeOutside { range: text.into(), steps }),
                "{text} of {steps}"
            );
        };
        outside("1..8", 7);
        outside("8..", 7);
        outside("8..9", 7);
        outside("..", 0);
        let message = parse("1..3000").unwrap().resolve(1944).unwrap_err().to_string();
        assert!(message.contains("1..3000") && message.contains("1944"), "{message}");
    }

    #[test]
    fn complements_are_one_range_or_refused() {
        let s = |a, b| Steps::new(a, b).unwrap();
        assert_eq!(s(1, 972).complement(1944), Ok(s(973, 1944)));
        assert_eq!(s(973, 1944).complement(1944), Ok(s(1, 972)));
        assert_eq!(s(1, 5).complement(5), Err(CoreError::NoStepsLeft { steps: 5 }));
        assert_eq!(s(2, 3).complement(5), Err(CoreError::StepsLeftSplit { first: 2, last: 3, steps: 5 }));
        assert_eq!(
            s(2, 6).complement(5),
            Err(CoreError::StepRangeOutside { range: "2..6".into(), steps: 5 })
        );
    }

    #[test]
    fn overlap_and_indices() {
        let s = |a, b| Steps::new(a, b).unwrap();
        assert_eq!(s(1, 5).overlap(&s(5, 9)), Some(s(5, 5)));
        assert_eq!(s(1, 5).overlap(&s(6, 9)), None);
        assert_eq!(s(3, 9).overlap(&s(1, 4)), Some(s(3, 4)));
        assert_eq!(s(3, 5).indices(), 2..5);
        assert_eq!(s(3, 5).len(), 3);
        assert!(s(3, 5).contains(5) && !s(3, 5).contains(6) && !s(3, 5).contains(2));
    }
}
